// The port-forward protocol (portforward.k8s.io) on a SPDY connection, as the kubelet's CRI
// streaming server serves it: for each forwarded connection the client opens an error stream and
// a data stream with the same requestid and port; the server connects to that port in the pod and
// relays, and reports a failure on the error stream in the kubelet's words.
import type { Duplex } from 'node:stream';
import type { SpdyConnection, SpdyStream } from './spdy.js';

export const PORTFORWARD_PROTOCOLS = ['portforward.k8s.io'];

const PAIR_TIMEOUT_MS = 30_000;

/** Connects to a port of the pod (its network namespace); rejects with the reason it cannot. */
export type PortDialer = (port: number) => Promise<Duplex>;

interface Pair {
  error?: SpdyStream;
  data?: SpdyStream;
  timer: NodeJS.Timeout;
}

/** Why a stream is refused, or undefined when its headers are right. */
export function checkPortStream(s: SpdyStream): string | undefined {
  const port = s.header('port');
  if (port === undefined || port === '') return '"port" header is required';
  if (!/^\d+$/.test(port) || Number(port) > 65535) return `unable to parse "${port}" as a port: invalid syntax`;
  if (Number(port) === 0) return `port "${port}" must be > 0`;
  const type = s.header('streamtype');
  if (!type) return '"streamType" header is required';
  if (type !== 'error' && type !== 'data') return `invalid stream type "${type}"`;
  return undefined;
}

export function servePortForward(conn: SpdyConnection, podName: string, podUID: string, dial: PortDialer): void {
  const pairs = new Map<string, Pair>();
  conn.on('stream', (s: SpdyStream) => {
    const bad = checkPortStream(s);
    if (bad) return s.reset();
    conn.accept(s);
    const type = s.header('streamtype') as 'error' | 'data';
    // Old clients send no requestid: the error stream comes first, two stream IDs before its data.
    const id = s.header('requestid') ?? String(type === 'error' ? s.id : s.id - 2);
    let p = pairs.get(id);
    if (!p) {
      p = { timer: setTimeout(() => drop(id), PAIR_TIMEOUT_MS) };
      pairs.set(id, p);
    }
    if (p[type]) {
      s.reset();
      return;
    }
    p[type] = s;
    if (p.error && p.data) {
      clearTimeout(p.timer);
      pairs.delete(id);
      void forward(p.error, p.data);
    }
  });
  conn.once('close', () => {
    for (const id of pairs.keys()) drop(id);
  });

  function drop(id: string): void {
    const p = pairs.get(id);
    if (!p) return;
    clearTimeout(p.timer);
    pairs.delete(id);
    p.error?.reset();
    p.data?.reset();
  }

  async function forward(errStream: SpdyStream, data: SpdyStream): Promise<void> {
    const port = Number(data.header('port'));
    // What the client sends while the dial is under way is kept for the connection (a stream's
    // events are not buffered; a dial through a relay takes a while).
    const early: Buffer[] = [];
    let earlyEnd: 'end' | 'reset' | undefined;
    const keep = (b: Buffer) => early.push(b);
    const keepEnd = () => (earlyEnd ??= 'end');
    const keepReset = () => (earlyEnd = 'reset');
    data.on('data', keep);
    data.once('end', keepEnd);
    data.once('reset', keepReset);
    let sock: Duplex;
    try {
      sock = await dial(port);
    } catch (err) {
      errStream.write(Buffer.from(`error forwarding port ${port} to pod ${podName}, uid ${podUID}: ${(err as Error).message}`));
      errStream.end();
      data.end();
      return;
    } finally {
      data.off('data', keep);
      data.off('end', keepEnd);
      data.off('reset', keepReset);
    }
    for (const b of early) sock.write(b);
    if (earlyEnd === 'reset') sock.destroy();
    else if (earlyEnd === 'end') sock.end();
    data.on('data', (b: Buffer) => {
      if (!sock.write(b)) sock.once('drain', () => undefined);
    });
    data.on('end', () => sock.end());
    data.on('reset', () => sock.destroy());
    sock.on('data', (b: Buffer) => {
      if (!data.write(b) && !conn.isClosed) {
        sock.pause();
        conn.once('drain', () => sock.resume());
      }
    });
    const finish = () => {
      data.end();
      errStream.end();
    };
    sock.on('end', finish);
    sock.on('error', (err: Error) => {
      errStream.write(Buffer.from(`error forwarding port ${port} to pod ${podName}, uid ${podUID}: ${err.message}`));
      finish();
    });
    sock.on('close', finish);
  }
}
