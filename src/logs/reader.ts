// Reading a container's CRI log file for /containerLogs, as the kubelet's cri-client reads it:
// lines "<RFC3339Nano time> <stdout|stderr> <P|F> <text>", partial (P) records joined into one
// line, tail counted in file lines from the end, since/limitBytes/timestamps applied per record,
// and follow waiting on the file while the container runs (a rotated file is reopened). Data is
// read in chunks and written with back-pressure: nothing loads a whole file.
import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

export type LogStream = 'All' | 'Stdout' | 'Stderr';

export interface LogReadOptions {
  /** Lines from the end of the file; undefined for all of them. */
  tailLines?: number;
  /** Records older than this (epoch ms) are skipped. */
  sinceMs?: number;
  follow: boolean;
  limitBytes?: number;
  timestamps: boolean;
  stream: LogStream;
}

/** Where the lines go; write() answers false when the reader should wait for drain(). */
export interface LogSink {
  /** Called once the file is open and reading begins. */
  opened?(): void;
  write(chunk: Buffer): boolean;
  drained(): Promise<void>;
}

/** Whether the container is still running (follow stops once it is not and the file is read). */
export type IsRunning = () => Promise<boolean>;

export class LogReadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LogReadError';
  }
}

export interface CriLogRecord {
  /** The time as written ("2026-12-01T10:00:00.123456789Z"). */
  time: string;
  timeMs: number;
  stream: 'stdout' | 'stderr';
  partial: boolean;
  text: Buffer;
}

const NL = 0x0a;
const BLOCK = 4096;
const CHUNK = 64 * 1024;
/** The kubelet looks at a followed file at least this often, even without a change event. */
const FORCE_CHECK_MS = 1000;

/** One CRI log line (without its newline), or undefined if it is not one. */
export function parseCriLogLine(line: Buffer): CriLogRecord | undefined {
  const s1 = line.indexOf(0x20);
  if (s1 <= 0) return undefined;
  const time = line.toString('latin1', 0, s1);
  const timeMs = parseRfc3339Ms(time);
  if (timeMs === undefined) return undefined;
  const s2 = line.indexOf(0x20, s1 + 1);
  if (s2 < 0) return undefined;
  const stream = line.toString('latin1', s1 + 1, s2);
  if (stream !== 'stdout' && stream !== 'stderr') return undefined;
  // The tag field may carry more than P/F, separated by ':'; the first letter is what counts.
  const s3 = line.indexOf(0x20, s2 + 1);
  const tagEnd = s3 < 0 ? line.length : s3;
  if (tagEnd === s2 + 1) return undefined;
  const tag = line.toString('latin1', s2 + 1, tagEnd).split(':')[0];
  const text = s3 < 0 ? Buffer.alloc(0) : line.subarray(s3 + 1);
  return { time, timeMs, stream, partial: tag === 'P', text };
}

/** RFC 3339 with any fraction, to epoch milliseconds (the fraction beyond ms is dropped). */
export function parseRfc3339Ms(text: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}${(m[2] ?? '').slice(0, 4)}${m[3]}`);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The kubelet's output format for timestamps: always nine fraction digits, the zone as read. */
export function fixedNanoTime(time: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/.exec(time);
  if (!m) return time;
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0').slice(0, 9)}${m[3]}`;
}

/** The offset from which `lines` file lines remain (0 when the file has fewer). */
export async function tailStart(fh: FileHandle, size: number, lines: number): Promise<number> {
  if (lines < 0) return 0;
  // Find the (lines+1)-th newline from the end: what follows it is the tail.
  let seen = 0;
  const buf = Buffer.alloc(BLOCK);
  for (let right = size; right > 0; right -= BLOCK) {
    const left = Math.max(0, right - BLOCK);
    const { bytesRead } = await fh.read(buf, 0, right - left, left);
    for (let i = bytesRead - 1; i >= 0; i--) {
      if (buf[i] !== NL) continue;
      seen++;
      if (seen === lines + 1) return left + i + 1;
    }
  }
  return 0;
}

/** Applies since, stream, timestamps and limitBytes to records, as the kubelet's log writer. */
class RecordWriter {
  private remaining: number;
  private atLineStart = true;

  constructor(
    private readonly opts: LogReadOptions,
    private readonly sink: LogSink,
  ) {
    this.remaining = opts.limitBytes ?? Number.MAX_SAFE_INTEGER;
  }

  /** Writes one record; answers 'full' once limitBytes is reached. */
  async write(rec: CriLogRecord): Promise<'ok' | 'full'> {
    const full = rec.partial ? rec.text : Buffer.concat([rec.text, Buffer.from('\n')]);
    if (this.opts.sinceMs !== undefined && rec.timeMs < this.opts.sinceMs) return 'ok';
    const wanted = this.opts.stream === 'All' || this.opts.stream.toLowerCase() === rec.stream;
    const startsLine = this.atLineStart;
    this.atLineStart = full.length === 0 || full[full.length - 1] === NL;
    if (!wanted) return 'ok';
    let out = this.opts.timestamps && startsLine ? Buffer.concat([Buffer.from(`${fixedNanoTime(rec.time)} `), full]) : full;
    if (out.length > this.remaining) out = out.subarray(0, this.remaining);
    this.remaining -= out.length;
    if (!this.sink.write(out)) await this.sink.drained();
    return this.remaining <= 0 ? 'full' : 'ok';
  }
}

/**
 * Streams a container's log file to sink. Returns when the file is read (or, following, when the
 * container has stopped and the rest is read), when limitBytes or tailLines is reached, or when
 * signal aborts.
 */
export async function readContainerLog(path: string, opts: LogReadOptions, isRunning: IsRunning, sink: LogSink, signal: AbortSignal): Promise<void> {
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    throw new LogReadError(`failed to try resolving symlinks in path "${path}": ${(err as Error).message}`);
  }
  let fh: FileHandle;
  try {
    fh = await open(real, 'r');
  } catch (err) {
    throw new LogReadError(`failed to open log file "${real}": ${(err as Error).message}`);
  }
  const follower = opts.follow ? new FileFollower(real) : undefined;
  try {
    sink.opened?.();
    const size = (await fh.stat()).size;
    let pos = opts.tailLines === undefined ? 0 : await tailStart(fh, size, opts.tailLines);
    // Without follow, a tail is a count of lines written; following, it only picks the start.
    let linesLeft = opts.tailLines !== undefined && !opts.follow ? opts.tailLines : Infinity;
    const writer = new RecordWriter(opts, sink);
    let pending = Buffer.alloc(0);
    const chunk = Buffer.alloc(CHUNK);
    let stillRunning = true;
    let rotated = false;
    while (!signal.aborted && linesLeft > 0) {
      const { bytesRead } = await fh.read(chunk, 0, CHUNK, pos);
      if (bytesRead > 0) {
        pos += bytesRead;
        let data = pending.length ? Buffer.concat([pending, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
        let nl: number;
        while (linesLeft > 0 && (nl = data.indexOf(NL)) >= 0) {
          const rec = parseCriLogLine(data.subarray(0, nl));
          data = data.subarray(nl + 1);
          if (!rec) continue;
          if ((await writer.write(rec)) === 'full') return;
          linesLeft--;
          if (signal.aborted) return;
        }
        pending = Buffer.from(data);
        continue;
      }
      // End of file.
      if (!follower) {
        // An unterminated last line is still shown when not following.
        const rec = pending.length ? parseCriLogLine(pending) : undefined;
        if (rec && linesLeft > 0) await writer.write(rec);
        return;
      }
      if (rotated) {
        // The old file is read to its end: go on in the new one.
        const next = await open(real, 'r').catch(() => undefined);
        if (next) {
          await fh.close();
          fh = next;
          pos = 0;
          pending = Buffer.alloc(0);
          rotated = false;
          continue;
        }
      }
      if (!stillRunning) return;
      stillRunning = await isRunning();
      if (!stillRunning) continue; // read what came before it stopped, then end
      rotated = await follower.waitForChange(fh, signal);
    }
  } finally {
    follower?.close();
    await fh.close().catch(() => undefined);
  }
}

/** Waits for a followed file to change: an inotify event on its directory, or a second passing. */
class FileFollower {
  private watcher?: FSWatcher;
  private wake?: () => void;
  private readonly name: string;

  constructor(private readonly path: string) {
    this.name = basename(path);
    try {
      this.watcher = watch(dirname(path), { persistent: false }, (_event, file) => {
        if (!file || file === this.name || file.startsWith(`${this.name}.`)) this.wake?.();
      });
      this.watcher.on('error', () => this.close());
    } catch {
      // Without a watch the periodic check still finds new lines.
    }
  }

  /** Resolves true when the path now names another file than the one open (it was rotated). */
  async waitForChange(fh: FileHandle, signal: AbortSignal): Promise<boolean> {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, FORCE_CHECK_MS);
      this.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
    const [now, open] = await Promise.all([stat(this.path).catch(() => undefined), fh.stat()]);
    return now !== undefined && (now.ino !== open.ino || now.dev !== open.dev);
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }
}
