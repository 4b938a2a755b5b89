// Container output in the CRI log format. The container writes raw stdout/stderr to files of its
// own (so it keeps running if the runtime restarts); this copies new bytes, line by line, to the
// CRI log as "<RFC3339Nano> <stream> <F|P> <line>". What is in the CRI log is given back to the
// filesystem (a hole punched in the raw file), so a flood takes the CRI log's rotation bound, not
// the disk.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readSync, fstatSync, appendFileSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

const MAX_LINE = 16 * 1024;

export function rfc3339Nano(ms: number, nanosExtra = 0): string {
  const iso = new Date(ms).toISOString(); // 2026-11-29T18:11:10.433Z
  const frac = String((ms % 1000) * 1_000_000 + nanosExtra).padStart(9, '0').replace(/0+$/, '');
  return `${iso.slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}

export interface StreamState {
  offset: number;
  pending: string;
  /** Up to where the raw file's blocks were given back (a multiple of 4 KiB). */
  released?: number;
}

/** Forwarded raw bytes are released once this many pile up. */
export const RELEASE_BYTES = 4 * 1024 * 1024;

/**
 * Punches out the raw file's blocks that are in the CRI log already: the container appends on at
 * its offset, the file keeps its size, the disk gets them back. A filesystem that cannot punch
 * holes is not asked again for the same bytes.
 */
function releaseForwarded(rawPath: string, state: StreamState): void {
  const done = Math.floor(state.offset / 4096) * 4096;
  const from = state.released ?? 0;
  if (done - from < RELEASE_BYTES) return;
  spawnSync('fallocate', ['--punch-hole', '--offset', String(from), '--length', String(done - from), rawPath], { stdio: 'ignore' });
  state.released = done;
}

/**
 * Copies what is new in `rawPath` since `state.offset` to `logPath`; flushes a partial line when
 * `final`. When the CRI log cannot be written (its filesystem full), nothing is consumed: the bytes
 * wait in the raw file, and the write error is returned for the caller to report and retry later.
 */
export function forward(rawPath: string, stream: 'stdout' | 'stderr', logPath: string, state: StreamState, now: number, final = false): NodeJS.ErrnoException | undefined {
  // One stat when nothing is new: this runs for every container, ten times a second.
  try {
    if (statSync(rawPath).size <= state.offset && !(final && state.pending)) return undefined;
  } catch {
    return undefined;
  }
  let fd: number;
  try {
    fd = openSync(rawPath, 'r');
  } catch {
    return undefined;
  }
  let offset = state.offset;
  let pending = state.pending;
  try {
    const size = fstatSync(fd).size;
    if (size > offset) {
      const buf = Buffer.alloc(Math.min(size - offset, 4 * 1024 * 1024));
      const n = readSync(fd, buf, 0, buf.length, offset);
      offset += n;
      pending += buf.subarray(0, n).toString('utf8');
    }
  } finally {
    closeSync(fd);
  }
  const ts = rfc3339Nano(now);
  let out = '';
  let nl: number;
  while ((nl = pending.indexOf('\n')) >= 0) {
    out += `${ts} ${stream} F ${pending.slice(0, nl)}\n`;
    pending = pending.slice(nl + 1);
  }
  while (pending.length > MAX_LINE) {
    out += `${ts} ${stream} P ${pending.slice(0, MAX_LINE)}\n`;
    pending = pending.slice(MAX_LINE);
  }
  if (final && pending) {
    // As containerd: output that ends without a newline ends with a partial record.
    out += `${ts} ${stream} P ${pending}\n`;
    pending = '';
  }
  if (out && logPath) {
    try {
      mkdirSync(dirname(logPath), { recursive: true });
      appendFileSync(logPath, out);
    } catch (err) {
      return err as NodeJS.ErrnoException;
    }
  }
  state.offset = offset;
  state.pending = pending;
  releaseForwarded(rawPath, state);
  return undefined;
}

/** The bytes a container has written to its raw stdout and stderr files. */
export function rawSize(rawDir: string): number {
  let n = 0;
  for (const f of ['stdout', 'stderr']) {
    try {
      n += statSync(join(rawDir, f)).size;
    } catch {
      /* not there: nothing written */
    }
  }
  return n;
}

/** A container whose CRI log could not be written: since when, and when to try again. */
export interface LogBlock {
  since: number;
  retryAt: number;
  error: string;
}

/** While a log cannot be written it is tried again once a second, not on every tick. */
export const LOG_RETRY_MS = 1000;

/**
 * Forwards a container's two streams unless its log is blocked and not yet due for a retry (a
 * final flush always tries). Returns the block as it is now (undefined: the log is writable), and
 * whether it just began or just ended, for the caller to say so once each.
 */
export function forwardStreams(
  c: { logPath: string; stdout: StreamState; stderr: StreamState },
  rawDir: string,
  now: number,
  final: boolean,
  block: LogBlock | undefined,
): { block?: LogBlock; change?: 'blocked' | 'resumed' } {
  if (block && now < block.retryAt && !final) return { block };
  const err = forward(join(rawDir, 'stdout'), 'stdout', c.logPath, c.stdout, now, final) ?? forward(join(rawDir, 'stderr'), 'stderr', c.logPath, c.stderr, now, final);
  if (err) {
    const next = { since: block?.since ?? now, retryAt: now + LOG_RETRY_MS, error: err.code ?? err.message };
    return { block: next, change: block ? undefined : 'blocked' };
  }
  return { change: block ? 'resumed' : undefined };
}
