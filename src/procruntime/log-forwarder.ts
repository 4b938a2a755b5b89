// Container output in the CRI log format. The container writes raw stdout/stderr to files of its
// own (so it keeps running if the runtime restarts); this copies new bytes, line by line, to the
// CRI log as "<RFC3339Nano> <stream> <F|P> <line>".
import { closeSync, openSync, readSync, fstatSync, appendFileSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

const MAX_LINE = 16 * 1024;

export function rfc3339Nano(ms: number, nanosExtra = 0): string {
  const iso = new Date(ms).toISOString(); // 2026-11-29T18:11:10.433Z
  const frac = String((ms % 1000) * 1_000_000 + nanosExtra).padStart(9, '0').replace(/0+$/, '');
  return `${iso.slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}

export interface StreamState {
  offset: number;
  pending: string;
}

/** Copies what is new in `rawPath` since `state.offset` to `logPath`; flushes a partial line when `final`. */
export function forward(rawPath: string, stream: 'stdout' | 'stderr', logPath: string, state: StreamState, now: number, final = false): void {
  // One stat when nothing is new: this runs for every container, ten times a second.
  try {
    if (statSync(rawPath).size <= state.offset && !(final && state.pending)) return;
  } catch {
    return;
  }
  let fd: number;
  try {
    fd = openSync(rawPath, 'r');
  } catch {
    return;
  }
  let out = '';
  try {
    const size = fstatSync(fd).size;
    if (size > state.offset) {
      const buf = Buffer.alloc(Math.min(size - state.offset, 4 * 1024 * 1024));
      const n = readSync(fd, buf, 0, buf.length, state.offset);
      state.offset += n;
      state.pending += buf.subarray(0, n).toString('utf8');
    }
  } finally {
    closeSync(fd);
  }
  const ts = rfc3339Nano(now);
  let nl: number;
  while ((nl = state.pending.indexOf('\n')) >= 0) {
    out += `${ts} ${stream} F ${state.pending.slice(0, nl)}\n`;
    state.pending = state.pending.slice(nl + 1);
  }
  while (state.pending.length > MAX_LINE) {
    out += `${ts} ${stream} P ${state.pending.slice(0, MAX_LINE)}\n`;
    state.pending = state.pending.slice(MAX_LINE);
  }
  if (final && state.pending) {
    // As containerd: output that ends without a newline ends with a partial record.
    out += `${ts} ${stream} P ${state.pending}\n`;
    state.pending = '';
  }
  if (out && logPath) {
    mkdirSync(dirname(logPath), { recursive: true });
    appendFileSync(logPath, out);
  }
}
