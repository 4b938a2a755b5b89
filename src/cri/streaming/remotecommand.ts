// The remote-command protocols (channel.k8s.io v1 to v4) on a SPDY connection, as the kubelet's
// CRI streaming server serves exec and attach: the client opens one stream per channel (error,
// stdin, stdout, stderr, resize), the server waits for all it was asked for, runs the command,
// and reports how it ended on the error stream (v4: a JSON Status with the exit code).
import { Readable, Writable } from 'node:stream';
import type { SpdyConnection, SpdyStream } from './spdy.js';

export const REMOTECOMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];

export interface TerminalSize {
  width: number;
  height: number;
}

/** The streams of one exec or attach, as the runtime uses them. */
export interface StreamIO {
  stdin?: Readable;
  stdout?: Writable;
  stderr?: Writable;
  tty: boolean;
  /** Terminal sizes the client sends (tty only). */
  onResize(listener: (size: TerminalSize) => void): void;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** How a command ended: its exit code, or an error (the runtime could not run it). */
export type ExecOutcome = { exitCode: number; message?: string } | { error: string };

export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** A client stream read as a Node stream (ends with the client's FIN or a reset). */
export function readableOf(s: SpdyStream): Readable {
  const r = new Readable({ read() {} });
  s.on('data', (b: Buffer) => r.push(b));
  const end = () => r.push(null);
  s.on('end', end);
  s.on('reset', end);
  return r;
}

/** A client stream written as a Node stream (finishing sends FIN), paced by the socket. */
export function writableOf(conn: SpdyConnection, s: SpdyStream): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      if (s.write(chunk) || conn.isClosed) cb();
      else conn.once('drain', () => cb());
    },
    final(cb) {
      s.end();
      cb();
    },
  });
}

const STREAM_CREATION_TIMEOUT_MS = 30_000;

/**
 * Waits for the streams the request asked for and serves the command on them. `run` is the
 * runtime's exec or attach; its outcome is written to the error stream and the connection closed.
 */
export async function serveRemoteCommand(conn: SpdyConnection, protocol: string, opts: StreamOptions, run: (io: StreamIO) => Promise<ExecOutcome>): Promise<void> {
  const v4 = protocol === 'v4.channel.k8s.io';
  const resizing = opts.tty && protocol !== 'channel.k8s.io';
  const wanted = 1 + Number(opts.stdin) + Number(opts.stdout) + Number(opts.stderr) + Number(resizing);
  const got = new Map<string, SpdyStream>();
  const ok = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), STREAM_CREATION_TIMEOUT_MS);
    const onStream = (s: SpdyStream) => {
      const type = s.header('streamtype') ?? '';
      if (!['error', 'stdin', 'stdout', 'stderr', 'resize'].includes(type)) {
        s.reset();
        return;
      }
      conn.accept(s);
      got.set(type, s);
      if (got.size === wanted) {
        clearTimeout(timer);
        conn.off('stream', onStream);
        resolve(true);
      }
    };
    conn.on('stream', onStream);
    conn.once('close', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (!ok) return conn.close();
  const abort = new AbortController();
  conn.once('close', () => abort.abort());
  const resizeListeners: Array<(s: TerminalSize) => void> = [];
  const resize = got.get('resize');
  if (resize) {
    // Consecutive JSON objects: {"Width":80,"Height":24}.
    let pending = '';
    resize.on('data', (b: Buffer) => {
      pending += b.toString();
      for (;;) {
        const end = pending.indexOf('}');
        if (end < 0) break;
        const text = pending.slice(0, end + 1);
        pending = pending.slice(end + 1);
        try {
          const v = JSON.parse(text.slice(text.indexOf('{'))) as { Width?: number; Height?: number };
          for (const l of resizeListeners) l({ width: v.Width ?? 0, height: v.Height ?? 0 });
        } catch {
          /* not a size: ignored, as the kubelet's decoder stops at it */
        }
      }
    });
  }
  const io: StreamIO = {
    stdin: got.has('stdin') ? readableOf(got.get('stdin')!) : undefined,
    stdout: got.has('stdout') ? writableOf(conn, got.get('stdout')!) : undefined,
    stderr: got.has('stderr') ? writableOf(conn, got.get('stderr')!) : undefined,
    tty: opts.tty,
    onResize: (l) => resizeListeners.push(l),
    signal: abort.signal,
  };
  const errStream = got.get('error')!;
  await runAndReport(io, run, v4, (b) => errStream.write(b));
  errStream.end();
  conn.close();
}

/**
 * Runs the command, lets what it wrote out first, then reports how it ended on the error channel:
 * v4 a JSON Status always, earlier protocols a failure's message only.
 */
export async function runAndReport(io: StreamIO, run: (io: StreamIO) => Promise<ExecOutcome>, v4: boolean, writeError: (b: Buffer) => void): Promise<void> {
  let outcome: ExecOutcome;
  try {
    outcome = await run(io);
  } catch (err) {
    outcome = { error: (err as Error).message };
  }
  await Promise.all([io.stdout, io.stderr].map((w) => (w ? new Promise<void>((r) => w.end(() => r())) : undefined)));
  const status = statusOf(outcome);
  if (v4) writeError(Buffer.from(JSON.stringify(status)));
  else if (status.status !== 'Success') writeError(Buffer.from(status.message ?? ''));
}

interface WireStatus {
  metadata: Record<string, never>;
  status: string;
  message?: string;
  reason?: string;
  details?: { causes: Array<{ reason: string; message: string }> };
  code?: number;
}

/** The Status the streaming server writes for an outcome (a metav1.Status, as containerd writes it). */
export function statusOf(outcome: ExecOutcome): WireStatus {
  if ('error' in outcome) return { metadata: {}, status: 'Failure', message: `Internal error occurred: ${outcome.error}`, reason: 'InternalError', code: 500 };
  if (outcome.exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: ${outcome.message ?? `exit status ${outcome.exitCode}`}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(outcome.exitCode) }] },
  };
}
