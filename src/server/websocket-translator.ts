// WebSocket callers of the node API, as the kubelet serves them since it declares the
// ExtendWebSocketsToKubelet feature (the API server then passes kubectl's WebSocket through
// instead of translating it): v5.channel.k8s.io remote commands are translated here to SPDY
// streams on the runtime's streaming server (channels 0-4 to stdin/stdout/stderr/error/resize,
// the close signal 255 to a half-close), and port-forward's WebSocket tunnel carries the SPDY
// connection itself, relayed byte for byte. Older WebSocket protocols go to the runtime as they are.
import http, { type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { SpdyConnection, type SpdyStream } from '../cri/streaming/spdy.js';
import { WebSocketConn } from '../cri/streaming/websocket.js';
import type { StreamOptions } from './streaming.js';
import { rawError } from './streaming.js';

export const V5 = 'v5.channel.k8s.io';
export const PORTFORWARD_TUNNEL = 'SPDY/3.1+portforward.k8s.io';
const OP_BINARY = 2;
const CLOSE_SIGNAL = 255;

export function offeredProtocols(req: IncomingMessage): string[] {
  return String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean);
}

/** Upgrades to the runtime's streaming URL with SPDY and the given stream protocol. */
function dialSpdy(target: string, protocol: string): Promise<{ socket: Duplex; head: Buffer }> {
  const url = new URL(target);
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': protocol } });
    req.on('upgrade', (_res, socket, head) => resolve({ socket, head }));
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => reject(new Error(`unable to upgrade connection: ${body.trim() || res.statusMessage}`)));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The runtime's upgraded connection, or undefined once the caller has been told why not (a 500). */
async function dialOrRefuse(caller: Duplex, target: string, protocol: string, onDone: () => void): Promise<{ socket: Duplex; head: Buffer } | undefined> {
  try {
    return await dialSpdy(target, protocol);
  } catch (err) {
    rawError(caller, 500, (err as Error).message);
    onDone();
    return undefined;
  }
}

/** Serves a v5.channel.k8s.io exec or attach by translating it to SPDY streams on the runtime. */
export async function translateRemoteCommand(req: IncomingMessage, socket: Duplex, head: Buffer, target: string, opts: StreamOptions, onDone: () => void): Promise<void> {
  const upstream = await dialOrRefuse(socket, target, 'v4.channel.k8s.io', onDone);
  if (!upstream) return;
  const ws = WebSocketConn.accept(req, socket, head, V5);
  // As the kubelet's translator: an empty first message on the first channel that writes, at once.
  ws.send(OP_BINARY, Buffer.from([opts.stdout ? 1 : opts.stderr ? 2 : 3]));
  const spdy = new SpdyConnection(upstream.socket);
  if (upstream.head.length) upstream.socket.unshift(upstream.head);
  spdy.on('error', () => undefined);
  const send = (channel: number, data: Buffer) => ws.send(OP_BINARY, Buffer.concat([Buffer.from([channel]), data]));
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    ws.close();
    spdy.close();
    onDone();
  };
  // The caller going away ends it all; the runtime's end is seen on its streams (their status first).
  ws.once('close', finish);
  // The caller may write before the runtime's streams are open: its messages wait for them.
  const early: Buffer[] = [];
  let onMessage: ((m: Buffer) => void) | undefined;
  ws.on('message', (m: Buffer) => (onMessage ? onMessage(m) : early.push(m)));
  try {
    const open = (type: string) => spdy.createStream({ streamtype: type });
    const error = await open('error');
    const stdin = opts.stdin ? await open('stdin') : undefined;
    const stdout = opts.stdout ? await open('stdout') : undefined;
    const stderr = opts.stderr ? await open('stderr') : undefined;
    const resize = opts.tty ? await open('resize') : undefined;
    onMessage = (m: Buffer) => {
      if (m.length === 0) return;
      const data = m.subarray(1);
      if (m[0] === 0) stdin?.write(Buffer.from(data));
      else if (m[0] === 4) resize?.write(Buffer.from(data));
      else if (m[0] === CLOSE_SIGNAL && data[0] === 0) stdin?.end();
    };
    for (const m of early.splice(0)) onMessage(m);
    const pipe = (st: SpdyStream | undefined, onData: (b: Buffer) => void) =>
      st
        ? new Promise<void>((resolve) => {
            st.on('data', onData);
            st.once('end', () => resolve());
            st.once('reset', () => resolve());
          })
        : Promise.resolve();
    let status = '';
    await Promise.all([pipe(stdout, (b) => send(1, b)), pipe(stderr, (b) => send(2, b)), pipe(error, (b) => (status += b.toString()))]);
    send(3, Buffer.from(JSON.stringify(translatedStatus(status))));
  } catch (err) {
    send(3, Buffer.from(JSON.stringify(internalError((err as Error).message))));
  }
  finish();
}

const internalError = (message: string) => ({ metadata: {}, status: 'Failure', message: `Internal error occurred: ${message}`, reason: 'InternalError', details: { causes: [{ message }] }, code: 500 });

/**
 * The Status for the WebSocket caller, as the kubelet's translator makes it from the runtime's v4
 * Status: success as it is, an exit code restated, any other failure an internal error.
 */
export function translatedStatus(v4: string): object {
  let st: { status?: string; message?: string; reason?: string; details?: { causes?: Array<{ reason?: string; message?: string }> } };
  try {
    st = v4 ? JSON.parse(v4) : { status: 'Success' };
  } catch {
    return internalError(`error stream protocol error: ${v4}`);
  }
  if (st.status === 'Success') return { metadata: {}, status: 'Success' };
  if (st.reason === 'NonZeroExitCode') {
    const code = st.details?.causes?.find((c) => c.reason === 'ExitCode')?.message ?? '';
    return {
      metadata: {},
      status: 'Failure',
      message: `command terminated with non-zero exit code: command terminated with exit code ${code}`,
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: code }] },
    };
  }
  return internalError(st.message ?? 'error stream protocol error: unknown error');
}

/** Port-forward over WebSocket: the tunnel's binary messages are the SPDY connection to the runtime. */
export async function tunnelPortForward(req: IncomingMessage, socket: Duplex, head: Buffer, target: string, onDone: () => void): Promise<void> {
  const upstream = await dialOrRefuse(socket, target, 'portforward.k8s.io', onDone);
  if (!upstream) return;
  const ws = WebSocketConn.accept(req, socket, head, PORTFORWARD_TUNNEL);
  if (upstream.head.length) ws.send(OP_BINARY, upstream.head);
  ws.on('message', (m: Buffer) => upstream.socket.write(m));
  upstream.socket.on('data', (b: Buffer) => ws.send(OP_BINARY, b));
  const finish = () => {
    ws.close();
    upstream.socket.destroy();
    onDone();
  };
  ws.once('close', finish);
  upstream.socket.once('close', finish);
  upstream.socket.on('error', finish);
}
