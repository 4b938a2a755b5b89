// PLEG: relists the runtime every period and turns differences into pod lifecycle events
// (container started/died/removed, sandbox changed), waking that pod's worker.
import type { RuntimeService } from '../cri/services.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { NodeNameLabel, PodUIDLabel } from '../runtime/labels.js';
import type { Clock, Timer } from '../util/clock.js';
import { goDuration } from '../util/duration.js';

export type PodLifecycleEventType = 'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved' | 'ContainerChanged' | 'SandboxChanged';

export interface PodLifecycleEvent {
  uid: string;
  type: PodLifecycleEventType;
  /** Container or sandbox ID. */
  id: string;
}

type Snapshot = Map<string, Map<string, string>>; // pod uid -> (object id -> state)

export interface PlegOptions {
  runtime: RuntimeService;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  relistPeriodMs?: number;
  onEvent: (e: PodLifecycleEvent) => void;
}

function containerEvent(before: string | undefined, after: string | undefined): PodLifecycleEventType | undefined {
  if (before === after) return undefined;
  if (after === 'CONTAINER_RUNNING') return 'ContainerStarted';
  if (after === 'CONTAINER_EXITED') return 'ContainerDied';
  if (after === undefined) return before === 'CONTAINER_EXITED' ? 'ContainerRemoved' : 'ContainerDied';
  return 'ContainerChanged';
}

/** The events between two relists (pure, for tests). */
export function diffSnapshots(before: Snapshot, after: Snapshot): PodLifecycleEvent[] {
  const events: PodLifecycleEvent[] = [];
  for (const uid of new Set([...before.keys(), ...after.keys()])) {
    const b = before.get(uid) ?? new Map<string, string>();
    const a = after.get(uid) ?? new Map<string, string>();
    for (const id of new Set([...b.keys(), ...a.keys()])) {
      const bs = b.get(id);
      const as = a.get(id);
      if (bs === as) continue;
      if ((bs ?? as)!.startsWith('SANDBOX_')) events.push({ uid, type: 'SandboxChanged', id });
      else {
        const type = containerEvent(bs, as);
        if (type) events.push({ uid, type, id });
      }
    }
  }
  return events;
}

/** A relist not completed for this long makes the node NotReady (the kubelet's relistThreshold). */
export const RELIST_THRESHOLD_MS = 3 * 60_000;

export class GenericPLEG {
  private last: Snapshot = new Map();
  private timer?: Timer;
  private running = false;
  private lastRelistAt = 0;
  private relisting?: Promise<void>;
  private periodMs: number;
  private thresholdMs = RELIST_THRESHOLD_MS;
  private inFlight = false;
  /** A relist was asked for while one was in flight: another follows it at once. */
  private again = false;

  constructor(private readonly opts: PlegOptions) {
    this.periodMs = opts.relistPeriodMs ?? 1000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // A relist made before the start (the agent makes one for the node's first status) counts.
    this.schedule(this.lastRelistAt > 0 ? this.periodMs : 0);
  }

  /**
   * Changes how often the runtime is relisted, and how stale a relist may be before the PLEG is
   * unhealthy (the evented PLEG relists rarely while the runtime's events flow, and often when they
   * stop). The next relist is due a period after the last.
   */
  setRelistPeriod(periodMs: number, thresholdMs: number): void {
    if (periodMs === this.periodMs && thresholdMs === this.thresholdMs) return;
    this.periodMs = periodMs;
    this.thresholdMs = thresholdMs;
    if (!this.running || this.inFlight) return; // the relist in flight schedules the next
    this.timer?.cancel();
    this.schedule(Math.max(0, this.lastRelistAt + periodMs - this.opts.clock.now()));
  }

  /** A relist as soon as possible (what changed while nobody announced it is seen). */
  relistSoon(): void {
    if (!this.running) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.timer?.cancel();
    this.schedule(0);
  }

  get relistPeriodMs(): number {
    return this.periodMs;
  }

  /**
   * A change the runtime announced (a container event): recorded as the next relist would record
   * it, so that the relist does not announce it again. Returns the lifecycle event it makes, if
   * any (none when a relist saw it first). `state` undefined: the object is gone.
   */
  observe(uid: string, id: string, state: string | undefined): PodLifecycleEvent | undefined {
    let pod = this.last.get(uid);
    const before = pod?.get(id);
    if (before === state) return undefined;
    if (state === undefined) pod!.delete(id);
    else {
      if (!pod) this.last.set(uid, (pod = new Map()));
      pod.set(id, state);
    }
    if (pod && pod.size === 0) this.last.delete(uid);
    const type = (before ?? state)!.startsWith('SANDBOX_') ? 'SandboxChanged' : containerEvent(before, state);
    return type ? { uid, type, id } : undefined;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    await this.relisting;
  }

  /** Healthy while relists keep happening (the kubelet's PLEG health check). */
  healthy(thresholdMs = this.thresholdMs): boolean {
    return this.healthProblem(thresholdMs) === undefined;
  }

  /** Why the PLEG is not healthy, in the kubelet's words (undefined when it is). */
  healthProblem(thresholdMs = this.thresholdMs): string | undefined {
    if (this.lastRelistAt === 0) return 'pleg has yet to be successful';
    const elapsed = this.opts.clock.now() - this.lastRelistAt;
    if (elapsed <= thresholdMs) return undefined;
    return `pleg was last seen active ${goDuration(elapsed)} ago; threshold is ${goDuration(thresholdMs)}`;
  }

  /**
   * What runs, as the last relist and every event since saw it: per pod UID, its sandboxes' and
   * containers' states by ID. Undefined while the PLEG is not healthy (it may be stale then).
   */
  seen(): ReadonlyMap<string, ReadonlyMap<string, string>> | undefined {
    return this.healthy() ? this.last : undefined;
  }

  /** Pods in the last relist (for /metrics). */
  get podCount(): number {
    return this.last.size;
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    this.timer = this.opts.clock.setTimer(ms, () => {
      this.inFlight = true;
      this.relisting = this.relist().finally(() => {
        this.inFlight = false;
        const now = this.again;
        this.again = false;
        this.schedule(now ? 0 : this.periodMs);
      });
    });
  }

  async relist(): Promise<void> {
    const started = this.opts.clock.now();
    const t0 = process.hrtime.bigint();
    try {
      const selector = { label_selector: { [NodeNameLabel]: this.opts.nodeName } };
      const [sandboxes, containers] = await Promise.all([this.opts.runtime.listPodSandbox(selector), this.opts.runtime.listContainers(selector)]);
      const next: Snapshot = new Map();
      const put = (uid: string, id: string, state: string) => {
        let m = next.get(uid);
        if (!m) next.set(uid, (m = new Map()));
        m.set(id, state);
      };
      for (const s of sandboxes) put(s.metadata?.uid ?? s.labels[PodUIDLabel] ?? '', s.id, s.state);
      for (const c of containers) put(c.labels[PodUIDLabel] ?? '', c.id, c.state);
      const events = diffSnapshots(this.last, next);
      this.last = next;
      this.lastRelistAt = started;
      for (const e of events) this.opts.onEvent(e);
    } catch (err) {
      this.opts.logger.warn('PLEG relist failed', { error: (err as Error).message });
    } finally {
      this.opts.metrics?.plegRelistDuration.observe(Number(process.hrtime.bigint() - t0) / 1e9);
    }
  }
}
