// The SPDY server end and the remote-command protocol, driven by a small SPDY client written
// here (frames and compressed header blocks as spdystream writes them): streams opened and
// accepted across several header blocks of one compression context, PING answered, stdin in,
// stdout out, and the v4 Status with the exit code on the error stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import zlib from 'node:zlib';
import { SPDY_HEADER_DICTIONARY } from '../../../src/cri/streaming/spdy-dictionary.js';
import { SpdyConnection } from '../../../src/cri/streaming/spdy.js';
import { serveRemoteCommand, statusOf } from '../../../src/cri/streaming/remotecommand.js';
import { negotiate } from '../../../src/cri/streaming/server.js';
import { servePortForward } from '../../../src/cri/streaming/portforward.js';
import { Duplex } from 'node:stream';

function pass(z: zlib.Deflate | zlib.Inflate, b: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    z.write(b);
    z.flush(zlib.constants.Z_SYNC_FLUSH, () => resolve((z.read() as Buffer | null) ?? Buffer.alloc(0)));
  });
}

class Client {
  private readonly deflate = zlib.createDeflate({ dictionary: SPDY_HEADER_DICTIONARY });
  readonly inflate = zlib.createInflate({ dictionary: SPDY_HEADER_DICTIONARY });
  private buf = Buffer.alloc(0);
  readonly frames: Array<{ control: boolean; type: number; id: number; flags: number; body: Buffer }> = [];
  private waiters: Array<() => void> = [];

  constructor(readonly sock: net.Socket) {
    sock.on('data', (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c]);
      while (this.buf.length >= 8) {
        const len = this.buf.readUInt32BE(4) & 0xffffff;
        if (this.buf.length < 8 + len) break;
        const f = this.buf.subarray(0, 8 + len);
        this.buf = this.buf.subarray(8 + len);
        const first = f.readUInt32BE(0);
        const control = (first & 0x80000000) !== 0;
        const body = Buffer.from(f.subarray(8));
        this.frames.push({ control, type: control ? first & 0xffff : 0, id: control ? (body.length >= 4 ? body.readUInt32BE(0) & 0x7fffffff : 0) : first & 0x7fffffff, flags: f[4]!, body });
        for (const w of this.waiters.splice(0)) w();
      }
    });
  }

  async until<T>(what: () => T | undefined): Promise<T> {
    for (;;) {
      const v = what();
      if (v !== undefined) return v;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  async open(id: number, headers: Record<string, string>): Promise<void> {
    const pairs = Object.entries(headers);
    const parts: Buffer[] = [Buffer.alloc(4)];
    parts[0]!.writeUInt32BE(pairs.length);
    for (const [k, v] of pairs) {
      for (const s of [Buffer.from(k), Buffer.from(v)]) {
        const l = Buffer.alloc(4);
        l.writeUInt32BE(s.length);
        parts.push(l, s);
      }
    }
    const block = await pass(this.deflate, Buffer.concat(parts));
    const body = Buffer.concat([Buffer.from([0, 0, 0, id, 0, 0, 0, 0, 0, 0]), block]);
    this.control(1, 0, body);
  }

  control(type: number, flags: number, body: Buffer): void {
    const h = Buffer.alloc(8);
    h.writeUInt16BE(0x8003, 0);
    h.writeUInt16BE(type, 2);
    h.writeUInt32BE((flags << 24) | body.length, 4);
    this.sock.write(Buffer.concat([h, body]));
  }

  data(id: number, data: Buffer, fin: boolean): void {
    const h = Buffer.alloc(8);
    h.writeUInt32BE(id, 0);
    h.writeUInt32BE(((fin ? 1 : 0) << 24) | data.length, 4);
    this.sock.write(Buffer.concat([h, data]));
  }

  received(id: number): string {
    return Buffer.concat(this.frames.filter((f) => !f.control && f.id === id).map((f) => f.body)).toString();
  }
}

async function pair(): Promise<{ server: net.Socket; client: net.Socket; close: () => void }> {
  return new Promise((resolve) => {
    const srv = net.createServer((server) => resolve({ server, client, close: () => srv.close() }));
    let client: net.Socket;
    srv.listen(0, '127.0.0.1', () => {
      client = net.connect((srv.address() as net.AddressInfo).port, '127.0.0.1');
    });
  });
}

test('exec over SPDY v4: streams accepted, PING answered, stdin in, stdout out, the exit code in a Status', async () => {
  const { server, client, close } = await pair();
  const conn = new SpdyConnection(server);
  const c = new Client(client);
  const served = serveRemoteCommand(conn, 'v4.channel.k8s.io', { stdin: true, stdout: true, stderr: false, tty: false }, async (io) => {
    let input = '';
    for await (const chunk of io.stdin!) input += chunk;
    io.stdout!.write(`got ${input}`);
    return { exitCode: 3, message: 'exit status 3' };
  });
  await c.open(1, { streamtype: 'error' });
  await c.until(() => c.frames.find((f) => f.control && f.type === 2 && f.id === 1));
  // A second and third header block: one compression context across the connection.
  await c.open(3, { streamtype: 'stdin' });
  await c.open(5, { streamtype: 'stdout' });
  await c.until(() => c.frames.find((f) => f.control && f.type === 2 && f.id === 5));
  c.control(6, 0, Buffer.from([0, 0, 0, 7]));
  const ping = await c.until(() => c.frames.find((f) => f.control && f.type === 6));
  assert.deepEqual([...ping.body], [0, 0, 0, 7]);
  c.data(3, Buffer.from('hello'), true);
  await served;
  await c.until(() => c.frames.find((f) => f.control && f.type === 7));
  assert.equal(c.received(5), 'got hello');
  assert.ok(c.frames.some((f) => !f.control && f.id === 5 && f.flags & 1), 'stdout ends with FIN');
  assert.deepEqual(JSON.parse(c.received(1)), { metadata: {}, status: 'Failure', message: 'command terminated with non-zero exit code: exit status 3', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '3' }] } });
  client.destroy();
  close();
});

test('statuses as the kubelet writes them; protocol negotiation in the client\'s order', () => {
  assert.deepEqual(statusOf({ exitCode: 0 }), { metadata: {}, status: 'Success' });
  assert.deepEqual(statusOf({ error: 'boom' }), { metadata: {}, status: 'Failure', message: 'Internal error occurred: boom', reason: 'InternalError', code: 500 });
  assert.equal(negotiate('v5.channel.k8s.io, v4.channel.k8s.io, channel.k8s.io', ['v4.channel.k8s.io', 'channel.k8s.io']).protocol, 'v4.channel.k8s.io');
  assert.equal(negotiate(undefined, ['x']).error?.code, 400);
  assert.match(negotiate('v9', ['portforward.k8s.io']).error?.message ?? '', /unable to negotiate protocol: client supports \[v9\], server accepts \[portforward.k8s.io\]/);
});

test('the WebSocket translator restates the runtime\'s Status as the kubelet\'s does', async () => {
  const { translatedStatus } = await import('../../../src/server/websocket-translator.js');
  assert.deepEqual(translatedStatus('{"metadata":{},"status":"Success"}'), { metadata: {}, status: 'Success' });
  assert.deepEqual(translatedStatus(JSON.stringify({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '3' }] } })), {
    metadata: {},
    status: 'Failure',
    message: 'command terminated with non-zero exit code: command terminated with exit code 3',
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: '3' }] },
  });
  assert.deepEqual(translatedStatus(JSON.stringify({ status: 'Failure', message: 'Internal error occurred: boom', reason: 'InternalError' })), {
    metadata: {},
    status: 'Failure',
    message: 'Internal error occurred: Internal error occurred: boom',
    reason: 'InternalError',
    details: { causes: [{ message: 'Internal error occurred: boom' }] },
    code: 500,
  });
});

test('a WebSocket message sent in fragments is one message; pings are answered', async () => {
  const { WebSocketConn } = await import('../../../src/cri/streaming/websocket.js');
  const { server, client, close } = await pair();
  const ws = new WebSocketConn(server);
  const got: string[] = [];
  ws.on('message', (m: Buffer) => got.push(m.toString()));
  const frame = (fin: boolean, op: number, text: string) => {
    const mask = Buffer.from([1, 2, 3, 4]);
    const p = Buffer.from(text).map((b, i) => b ^ mask[i % 4]!);
    return Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | op, 0x80 | p.length]), mask, p]);
  };
  const pong = new Promise<Buffer>((r) => client.once('data', (d: Buffer) => r(d)));
  client.write(Buffer.concat([frame(false, 2, 'hel'), frame(true, 9, 'pi'), frame(true, 0, 'lo')]));
  assert.equal((await pong)[0], 0x80 | 10, 'a pong');
  while (got.length === 0) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(got, ['hello']);
  client.destroy();
  close();
});

test('port-forward: what the client sends while a slow dial is under way reaches the pod, and the answer comes back', async () => {
  const { server, client, close } = await pair();
  const conn = new SpdyConnection(server);
  const c = new Client(client);
  let received = '';
  // A dialer that takes a while (as the process runtime's relay into a network namespace does).
  servePortForward(conn, 'pod', 'uid', async (port) => {
    await new Promise((r) => setTimeout(r, 200));
    const stream = new Duplex({
      read: () => undefined,
      write: (chunk: Buffer, _e, cb) => {
        received += chunk.toString();
        if (received.endsWith('\n')) stream.push(`port ${port} got ${received.trim()}`);
        cb();
      },
    });
    return stream;
  });
  try {
    await c.open(1, { streamtype: 'error', port: '8080', requestid: '0' });
    await c.open(3, { streamtype: 'data', port: '8080', requestid: '0' });
    await c.until(() => c.frames.find((f) => f.control && f.type === 2 && f.id === 3));
    c.data(3, Buffer.from('early\n'), false);
    // Lost, it would never be answered: wait a bounded time.
    await Promise.race([c.until(() => (c.received(3).length > 0 ? true : undefined)), new Promise((r) => setTimeout(r, 3000))]);
    assert.equal(c.received(3), 'port 8080 got early');
    assert.equal(c.received(1), '', 'no error');
  } finally {
    client.destroy();
    server.destroy();
    close();
  }
});

test('a stream with no byte either way for the idle timeout is closed (containerd: 4 h), after its upgrade', async () => {
  const { StreamingServer, STREAM_IDLE_TIMEOUT_MS } = await import('../../../src/cri/streaming/server.js');
  assert.equal(STREAM_IDLE_TIMEOUT_MS, 4 * 3600_000);
  const server = new StreamingServer(300);
  await server.start();
  try {
    const url = new URL(server.register({ kind: 'portforward', podName: 'p', podUID: 'u', dial: () => Promise.reject(new Error('no pod here')) }));
    const sock = net.connect(Number(url.port), '127.0.0.1');
    let got = '';
    sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
    sock.write(`POST ${url.pathname} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n`);
    const closed = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), 10_000);
      sock.on('close', () => (clearTimeout(t), resolve(true)));
    });
    assert.match(got, /^HTTP\/1\.1 101 Switching Protocols/);
    assert.ok(closed, 'the idle stream was closed by the server');
  } finally {
    await server.close();
  }
});
