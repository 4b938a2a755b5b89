// When the process runtime looks at a running container. Its launcher (or proot's monitor shell)
// writes the exit code to <dir>/status.json and the container writes its output to <dir>/stdout and
// stderr, so a watch on the container's directory (inotify) says when there is something to see.
// Nothing is looked at on a timer but a slow sweep, the safety net for what sends no event (a
// monitor SIGKILLed before it could write the exit code, a watch that could not be set up).
import { watch as fsWatch } from 'node:fs';
import type { Clock, Timer } from '../util/clock.js';

/** What a look covers: the output only (a write seen), or the output and whether it still runs. */
export type LookKind = 'output' | 'full';

/** A watch on one container's directory; `onChange` gets the name of the file that changed. */
export type WatchDir = (dir: string, onChange: (file: string | null) => void, onError: () => void) => { close(): void };

export interface ContainerWatchOptions {
  clock: Clock;
  /**
   * Looks at one container (moves its output; with 'full', notices its end). Returns how soon it
   * wants another look (ms), for what no event will announce: an exit code not written yet, a log
   * retried while its filesystem is full, log offsets to save; undefined for none.
   */
  look: (id: string, kind: LookKind) => number | undefined;
  watchDir?: WatchDir;
  /** The safety net's period (default 5 s). */
  sweepMs?: number;
  /** Changes within this long are looked at together (default 5 ms). */
  coalesceMs?: number;
  /**
   * Output is looked at no more often than this per container (default 100 ms, the old poll's
   * period): a container that writes all the time costs ten looks a second, not one per write.
   */
  outputEveryMs?: number;
  /** A container whose directory cannot be watched is looked at this often instead (default 100 ms, the old poll). */
  pollMs?: number;
  /** Called after each sweep (what else has no event: a sandbox's PID namespace holder). */
  swept?: () => void;
}

/** The real watch: inotify through fs.watch, not keeping the process alive. */
export const watchDirWithInotify: WatchDir = (dir, onChange, onError) => {
  const w = fsWatch(dir, { persistent: false }, (_event, file) => onChange(file === null ? null : String(file)));
  w.on('error', onError);
  return w;
};

/** The files whose change is worth a look: the monitor's status and the two output streams. */
const OUTPUT_FILES = new Set(['stdout', 'stderr']);
const STATUS_FILE = 'status.json';

interface Watched {
  dir: string;
  watcher?: { close(): void };
  timer?: Timer;
  dueAt?: number;
  kind?: LookKind;
  /** When it was last looked at (output is looked at no more often than outputEveryMs). */
  lookedAt?: number;
}

export class ContainerWatch {
  private readonly watched = new Map<string, Watched>();
  private sweeper?: Timer;
  private running = false;
  private readonly sweepMs: number;
  private readonly coalesceMs: number;
  private readonly outputEveryMs: number;
  private readonly pollMs: number;
  private readonly watchDir: WatchDir;

  constructor(private readonly opts: ContainerWatchOptions) {
    this.sweepMs = opts.sweepMs ?? 5000;
    this.coalesceMs = opts.coalesceMs ?? 5;
    this.outputEveryMs = opts.outputEveryMs ?? 100;
    this.pollMs = opts.pollMs ?? 100;
    this.watchDir = opts.watchDir ?? watchDirWithInotify;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.scheduleSweep();
  }

  stop(): void {
    this.running = false;
    this.sweeper?.cancel();
    for (const id of [...this.watched.keys()]) this.remove(id);
  }

  /** Starts watching a container (just started, or found running after a restart) and looks at it at once. */
  add(id: string, dir: string): void {
    if (this.watched.has(id)) return;
    const w: Watched = { dir };
    this.watched.set(id, w);
    try {
      w.watcher = this.watchDir(
        dir,
        (file) => this.changed(id, file),
        () => this.lost(id),
      );
    } catch {
      w.watcher = undefined; // out of inotify watches, say: polled instead
    }
    // Set up first, looked at second: what happens in between is seen by one or the other.
    this.lookNow(id, 'full');
  }

  /** Stops watching (the container ended or was removed). */
  remove(id: string): void {
    const w = this.watched.get(id);
    if (!w) return;
    this.watched.delete(id);
    w.timer?.cancel();
    try {
      w.watcher?.close();
    } catch {
      /* already closed */
    }
  }

  has(id: string): boolean {
    return this.watched.has(id);
  }

  /** How many containers have no working watch (and are polled). */
  get polled(): number {
    return [...this.watched.values()].filter((w) => !w.watcher).length;
  }

  /** Looks at a container now (StopContainer wants the exit recorded before it returns). */
  lookNow(id: string, kind: LookKind): void {
    const w = this.watched.get(id);
    if (!w) return;
    const pending = w.kind;
    w.timer?.cancel();
    w.timer = undefined;
    w.dueAt = undefined;
    w.kind = undefined;
    w.lookedAt = this.opts.clock.now();
    const next = this.opts.look(id, pending === 'full' ? 'full' : kind);
    // The look may have ended the container (and removed its watch).
    if (!this.watched.has(id)) return;
    const poll = w.watcher ? undefined : this.pollMs;
    const wanted = next === undefined ? poll : poll === undefined ? next : Math.min(next, poll);
    if (wanted !== undefined) this.lookIn(id, Math.max(0, wanted), 'full');
  }

  private changed(id: string, file: string | null): void {
    if (file === STATUS_FILE || file === null) this.lookIn(id, this.coalesceMs, 'full');
    else if (OUTPUT_FILES.has(file)) {
      const w = this.watched.get(id);
      if (!w) return;
      const now = this.opts.clock.now();
      const sinceLast = w.lookedAt === undefined ? Infinity : now - w.lookedAt;
      const ms = Math.max(this.coalesceMs, this.outputEveryMs - sinceLast);
      // A look due by then takes this write too (the cheap path of a chatty container); a later one
      // (a log offsets' save, a retry) does not hold the output back.
      if (w.dueAt !== undefined && w.dueAt <= now + ms) return;
      this.lookIn(id, ms, 'output');
    }
  }

  /** The watch broke (its directory gone, say): the container is polled until it ends. */
  private lost(id: string): void {
    const w = this.watched.get(id);
    if (!w) return;
    try {
      w.watcher?.close();
    } catch {
      /* already closed */
    }
    w.watcher = undefined;
    this.lookIn(id, 0, 'full');
  }

  /** A look within `ms` (an earlier one already due stays; kinds add up). */
  private lookIn(id: string, ms: number, kind: LookKind): void {
    const w = this.watched.get(id);
    if (!w) return;
    if (kind === 'full') w.kind = 'full';
    else w.kind ??= 'output';
    const at = this.opts.clock.now() + ms;
    if (w.timer && w.dueAt !== undefined && w.dueAt <= at) return;
    w.timer?.cancel();
    w.dueAt = at;
    w.timer = this.opts.clock.setTimer(ms, () => {
      w.timer = undefined;
      this.lookNow(id, w.kind ?? 'output');
    });
  }

  /** A full look at every container watched (the sweep; the runtime's last look before it stops). */
  lookAll(): void {
    for (const id of [...this.watched.keys()]) this.lookNow(id, 'full');
  }

  private scheduleSweep(): void {
    if (!this.running) return;
    this.sweeper = this.opts.clock.setTimer(this.sweepMs, () => {
      this.lookAll();
      this.opts.swept?.();
      this.scheduleSweep();
    });
  }
}
