// Remote commands over WebSocket (RFC 6455), as the kubelet's streaming library serves them to
// clients that do not speak SPDY: one message per write, its first byte the channel (0 stdin,
// 1 stdout, 2 stderr, 3 error, 4 resize), binary for channel.k8s.io and v4.channel.k8s.io, text
// with base64 payloads for the base64 variants; v4 writes a JSON Status on the error channel,
// earlier versions only a failure's message. Client frames arrive masked; pings are answered.
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { Readable, Writable } from 'node:stream';
import type { Duplex } from 'node:stream';
import { runAndReport, type ExecOutcome, type StreamIO, type StreamOptions, type TerminalSize } from './remotecommand.js';

export const WEBSOCKET_REMOTECOMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io', 'channel.k8s.io', 'base64.channel.k8s.io'];
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const OP = { TEXT: 1, BINARY: 2, CLOSE: 8, PING: 9, PONG: 10 } as const;

export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return String(req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/** The subprotocol to use: the first the client offers that is served ('' when it offers none). */
export function websocketProtocol(req: IncomingMessage): string | undefined {
  const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean);
  if (offered.length === 0) return '';
  return offered.find((p) => WEBSOCKET_REMOTECOMMAND_PROTOCOLS.includes(p));
}

/** A server-side WebSocket on an upgraded socket: 'message' (opcode, payload) and 'close'. */
export class WebSocketConn extends EventEmitter {
  private buf: Buffer = Buffer.alloc(0);
  private closed = false;
  /** The frames of a message sent in pieces (FIN clear), until its last. */
  private fragments: Buffer[] = [];

  constructor(private readonly socket: Duplex) {
    super();
    socket.on('data', (c: Buffer) => this.onData(c));
    socket.on('close', () => this.finish());
    socket.on('error', () => this.finish());
  }

  /** Answers the handshake (101) and returns the connection. */
  static accept(req: IncomingMessage, socket: Duplex, head: Buffer, protocol: string): WebSocketConn {
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key'] ?? ''}${GUID}`).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n${protocol ? `Sec-WebSocket-Protocol: ${protocol}\r\n` : ''}\r\n`);
    const conn = new WebSocketConn(socket);
    if (head.length) conn.onData(head);
    return conn;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  send(op: number, payload: Buffer): boolean {
    if (this.closed) return true;
    const n = payload.length;
    const head = n < 126 ? Buffer.from([0x80 | op, n]) : n < 65536 ? Buffer.from([0x80 | op, 126, n >> 8, n & 0xff]) : Buffer.concat([Buffer.from([0x80 | op, 127]), bigLength(n)]);
    return this.socket.write(Buffer.concat([head, payload]));
  }

  close(code = 1000): void {
    if (this.closed) return;
    const p = Buffer.alloc(2);
    p.writeUInt16BE(code);
    this.send(OP.CLOSE, p);
    this.socket.end();
    this.finish();
  }

  onDrain(cb: () => void): void {
    this.socket.once('drain', cb);
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      if (this.buf.length < 2) return;
      const fin = (this.buf[0]! & 0x80) !== 0;
      const op = this.buf[0]! & 0x0f;
      const masked = (this.buf[1]! & 0x80) !== 0;
      let len = this.buf[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        if (this.buf.length < 4) return;
        len = this.buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (this.buf.length < 10) return;
        len = Number(this.buf.readBigUInt64BE(2));
        off = 10;
      }
      const maskLen = masked ? 4 : 0;
      if (this.buf.length < off + maskLen + len) return;
      const mask = this.buf.subarray(off, off + maskLen);
      const payload = Buffer.from(this.buf.subarray(off + maskLen, off + maskLen + len));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
      this.buf = this.buf.subarray(off + maskLen + len);
      if (op === OP.PING) this.send(OP.PONG, payload);
      else if (op === OP.CLOSE) this.close();
      else if (op === OP.TEXT || op === OP.BINARY || op === 0) {
        this.fragments.push(payload);
        if (fin) {
          const whole = this.fragments.length === 1 ? payload : Buffer.concat(this.fragments);
          this.fragments = [];
          this.emit('message', whole);
        }
      }
    }
  }
}

function bigLength(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

/** Serves one exec or attach on a WebSocket, as the kubelet's streaming library does. */
export async function serveRemoteCommandWs(conn: WebSocketConn, protocol: string, opts: StreamOptions, run: (io: StreamIO) => Promise<ExecOutcome>): Promise<void> {
  const base64 = protocol.includes('base64');
  const v4 = protocol.startsWith('v4.');
  const send = (channel: number, data: Buffer): boolean =>
    base64 ? conn.send(OP.TEXT, Buffer.from(`${channel}${data.toString('base64')}`)) : conn.send(OP.BINARY, Buffer.concat([Buffer.from([channel]), data]));
  const writer = (channel: number) =>
    new Writable({
      write(chunk: Buffer, _e, cb) {
        if (send(channel, chunk) || conn.isClosed) cb();
        else conn.onDrain(() => cb());
      },
    });
  const stdin = opts.stdin ? new Readable({ read() {} }) : undefined;
  const resize: Array<(s: TerminalSize) => void> = [];
  conn.on('message', (m: Buffer) => {
    if (m.length === 0) return;
    const channel = base64 ? m[0]! - 0x30 : m[0]!;
    const data = base64 ? Buffer.from(m.subarray(1).toString(), 'base64') : m.subarray(1);
    if (channel === 0 && stdin) stdin.push(data);
    else if (channel === 4) {
      try {
        const v = JSON.parse(data.toString()) as { Width?: number; Height?: number };
        for (const l of resize) l({ width: v.Width ?? 0, height: v.Height ?? 0 });
      } catch {
        /* not a size */
      }
    }
  });
  const abort = new AbortController();
  conn.once('close', () => {
    stdin?.push(null);
    abort.abort();
  });
  // An empty first message on the first channel that writes: the client knows the stream is open.
  send(opts.stdout ? 1 : opts.stderr ? 2 : 3, Buffer.alloc(0));
  const io: StreamIO = { stdin, stdout: opts.stdout ? writer(1) : undefined, stderr: opts.stderr ? writer(2) : undefined, tty: opts.tty, onResize: (l) => resize.push(l), signal: abort.signal };
  await runAndReport(io, run, v4, (b) => send(3, b));
  conn.close();
}
