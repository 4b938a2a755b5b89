// What the process runtime does for each running container while it runs: its output moved to the
// CRI log (held back while the log's filesystem is full, retried once a second), and its end
// noticed and recorded (exit code, Completed/Error/OOMKilled, finish time). When to look is
// container-watch.ts's: on a change of the container's files, and a slow sweep.
import type { Clock } from '../util/clock.js';
import { ContainerWatch, type LookKind, type WatchDir } from './container-watch.js';
import { forwardStreams, rawSize, type LogBlock } from './log-forwarder.js';
import { killLeftovers, processRunning, readExitCode } from './procfs.js';
import type { ContainerRecord } from './records.js';

/** What a look reads of the host: whether the process runs, the exit code its monitor wrote. */
export interface ProcSeam {
  running(c: ContainerRecord): boolean;
  exitCode(dir: string): number | undefined;
  killLeftovers(c: ContainerRecord): void;
}

export const hostProc: ProcSeam = { running: processRunning, exitCode: readExitCode, killLeftovers };

/** A process gone without an exit code is given this long for its monitor to write one. */
export const EXIT_CODE_GRACE_MS = 1000;
/** Log offsets are saved at most this often: a runtime that dies repeats at most that much output. */
const OFFSETS_SAVE_MS = 1000;

export interface SupervisorDeps {
  clock: Clock;
  container(id: string): ContainerRecord | undefined;
  dir(id: string): string;
  persist(c: ContainerRecord): Promise<void>;
  oomKilled(id: string): boolean;
  /** The container has just ended and its record says how (called once). */
  exited(c: ContainerRecord): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  proc?: ProcSeam;
  watchDir?: WatchDir;
  sweepMs?: number;
  /** Called after each sweep. */
  swept?: () => void;
}

export class ContainerSupervisor {
  private readonly watch: ContainerWatch;
  private readonly proc: ProcSeam;
  /** When each running container's process was first seen gone (its exit code may follow). */
  private readonly goneAt = new Map<string, number>();
  private readonly offsetsSavedAt = new Map<string, number>();
  /** Containers whose log offsets moved since they were last saved. */
  private readonly offsetsDirty = new Set<string>();
  /** Containers whose CRI log could not be written lately. */
  private readonly logBlocked = new Map<string, LogBlock>();

  constructor(private readonly deps: SupervisorDeps) {
    this.proc = deps.proc ?? hostProc;
    this.watch = new ContainerWatch({ clock: deps.clock, look: (id, kind) => this.look(id, kind), watchDir: deps.watchDir, sweepMs: deps.sweepMs, swept: deps.swept });
  }

  /** Starts the sweep and watches what runs (found on disk after a restart: adopted). */
  start(running: Iterable<ContainerRecord>): void {
    this.watch.start();
    for (const c of running) if (c.state === 'CONTAINER_RUNNING') this.supervise(c);
  }

  /** A last look at every container (what they wrote reaches their logs), then no more watching. */
  stop(): void {
    this.watch.lookAll();
    this.watch.stop();
  }

  /** A container that has just started (or was found running). */
  supervise(c: ContainerRecord): void {
    this.watch.add(c.id, this.deps.dir(c.id));
  }

  /**
   * After StopContainer: its process is gone (`gone`: no need to wait for an exit code any more),
   * and its end is recorded now, before the call returns.
   */
  stopped(id: string, gone: boolean): void {
    if (gone) this.goneAt.set(id, 0);
    // One not watched (it should be) is watched now, which looks at it at once.
    if (this.watch.has(id)) this.watch.lookNow(id, 'full');
    else this.watch.add(id, this.deps.dir(id));
  }

  /** The container is removed: nothing of it is kept. */
  forget(id: string): void {
    this.watch.remove(id);
    this.goneAt.delete(id);
    this.offsetsSavedAt.delete(id);
    this.offsetsDirty.delete(id);
    this.logBlocked.delete(id);
  }

  /** How many containers are looked at by polling (their directory could not be watched). */
  get polled(): number {
    return this.watch.polled;
  }

  /**
   * One look at a container: output first, then its end. Returns how soon it wants another
   * look for what sends no event (undefined: none).
   */
  private look(id: string, kind: LookKind): number | undefined {
    const c = this.deps.container(id);
    if (!c || c.state !== 'CONTAINER_RUNNING') {
      this.watch.remove(id);
      return undefined;
    }
    const now = this.deps.clock.now();
    let ended = false;
    let exit: number | undefined;
    if (kind === 'full') {
      // Under the launcher the exit code is read only once the process is gone: its monitor writes
      // it just after, so a gone process gets a second's grace. Under proot the PID is the
      // monitor's own, which writes the code just before it ends.
      const alive = this.proc.running(c);
      exit = alive && c.isolation !== 'proot' ? undefined : this.proc.exitCode(this.deps.dir(id));
      if (alive) this.goneAt.delete(id);
      else if (!this.goneAt.has(id)) this.goneAt.set(id, now);
      ended = exit !== undefined || (!alive && now - this.goneAt.get(id)! >= EXIT_CODE_GRACE_MS);
    }
    const before = c.stdout.offset + c.stderr.offset;
    this.forwardLogs(c, now, ended);
    if (c.stdout.offset + c.stderr.offset !== before) this.offsetsDirty.add(id);
    if (ended) {
      this.end(c, exit);
      return undefined;
    }
    const waits: number[] = [];
    if (this.offsetsDirty.has(id)) {
      const savedAt = this.offsetsSavedAt.get(id) ?? 0;
      if (now - savedAt >= OFFSETS_SAVE_MS) {
        this.offsetsSavedAt.set(id, now);
        this.offsetsDirty.delete(id);
        void this.deps.persist(c).catch(() => undefined);
      } else waits.push(savedAt + OFFSETS_SAVE_MS - now);
    }
    const gone = this.goneAt.get(id);
    if (gone !== undefined) waits.push(gone + EXIT_CODE_GRACE_MS - now);
    const block = this.logBlocked.get(id);
    if (block) waits.push(block.retryAt - now);
    return waits.length ? Math.max(0, Math.min(...waits)) : undefined;
  }

  private end(c: ContainerRecord, exit: number | undefined): void {
    this.forget(c.id);
    this.proc.killLeftovers(c);
    c.pgid = undefined; // its group is gone: the number may be another's later
    c.state = 'CONTAINER_EXITED';
    c.finishedAt = String(BigInt(this.deps.clock.now()) * 1_000_000n);
    const oom = this.deps.oomKilled(c.id);
    c.exitCode = exit ?? 137;
    c.reason = oom ? 'OOMKilled' : exit === undefined ? 'Error' : c.exitCode === 0 ? 'Completed' : 'Error';
    if (exit === undefined) c.message = 'the container process is gone and its exit code was not recorded';
    this.deps.exited(c);
  }

  /**
   * A container's new output to its CRI log. A log that cannot be written (its filesystem full)
   * holds the output back in the container's raw files, is retried once a second, and is reported
   * when it blocks and when it flows again; a container that ends meanwhile loses what was held, and
   * that is reported too.
   */
  private forwardLogs(c: ContainerRecord, now: number, ended: boolean): void {
    const dir = this.deps.dir(c.id);
    const was = this.logBlocked.get(c.id);
    const { block, change } = forwardStreams(c, dir, now, ended, was);
    if (block) this.logBlocked.set(c.id, block);
    else this.logBlocked.delete(c.id);
    const fields = { containerID: c.id, logPath: c.logPath };
    if (change === 'blocked') this.deps.warn('container log cannot be written: its output is held back until it can', { ...fields, error: block!.error });
    if (change === 'resumed') this.deps.warn('container log written again: the output held back is in it', { ...fields, heldBackMs: now - was!.since });
    if (ended && block) {
      this.deps.warn('container ended while its log could not be written: its last output is not in the log', { ...fields, error: block.error, bytes: rawSize(dir) - c.stdout.offset - c.stderr.offset });
      this.logBlocked.delete(c.id);
    }
  }
}
