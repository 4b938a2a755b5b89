// Pod workers: one serialized worker per pod UID, driving each pod through the kubelet's life cycle.
//
//   update ──▶ syncing ──(deletionTimestamp, pod removed, or terminal phase)──▶ terminating
//                 ▲  │                                                             │ containers stopped
//                 └──┘ requeue: success → jittered resync; error → 10 s back-off;  ▼
//                      PLEG event → now                                        terminated ─▶ forgotten
//
// Updates that arrive while a sync runs coalesce: the newest pod wins and one follow-up sync runs.
// A bounded number of syncs run at once; a pod's termination (which may wait out a grace period)
// holds no slot, and a shorter grace period arriving during it cuts the kill short (a force delete).
// Static pods of one name run one at a time (an edited manifest is a new pod): the new one starts
// once the old one has terminated, as the kubelet's allowStaticPodStart.
import type { V1Pod } from '@kubernetes/client-node';
import { Semaphore } from 'async-mutex';
import type { Logger } from '../observability/logger.js';
import { podFields } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock, Timer } from '../util/clock.js';
import { isStaticPod } from './static-pods.js';

export type PodPhaseOfWork = 'syncing' | 'terminating' | 'terminated';
export type UpdateType = 'create' | 'update' | 'sync' | 'delete' | 'pleg';

export interface SyncOutcome {
  /** The pod reached Succeeded or Failed: stop it (it is not deleted from the API). */
  terminal?: boolean;
  /** Ask for the next sync sooner than the resync period (a back-off that ends). */
  requeueAfterMs?: number;
}

/** What woke a worker (the sync history's trigger). */
export type WorkTrigger = 'watch' | 'pleg' | 'resync' | 'back-off' | 'retry';

/** What a worker is doing, and what it waits for (for /debug). */
export interface WorkerState {
  phase: PodPhaseOfWork;
  /** A sync or kill is running now. */
  busy: boolean;
  /** The timer the worker waits on, and when it fires (ms since the epoch). */
  next?: { trigger: WorkTrigger; at: number };
}

/** What the workers call; the agent implements it over the runtime manager and status manager. */
export interface PodSyncer {
  syncPod(pod: V1Pod, type: UpdateType, trigger?: WorkTrigger): Promise<SyncOutcome>;
  /**
   * Stops every container and sandbox of the pod; throws if something still runs. `signal` aborts
   * when a shorter grace period arrives: the kill is then made again with it.
   */
  syncTerminatingPod(pod: V1Pod, signal: AbortSignal): Promise<void>;
  /** The pod's runtime is clean: final status, and delete the API object if it is being deleted. */
  syncTerminatedPod(pod: V1Pod, removedFromApi: boolean): Promise<void>;
}

export interface PodWorkersOptions {
  syncer: PodSyncer;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  resyncIntervalMs?: number;
  /** After a failed sync: retried in this long, plus up to half of it again (the kubelet's 10 s). */
  backoffPeriodMs?: number;
  maxConcurrentSyncs?: number;
  /** Random source for jitter (tests pass a fixed one). */
  random?: () => number;
}

interface PodWork {
  uid: string;
  pod: V1Pod;
  phase: PodPhaseOfWork;
  removedFromApi: boolean;
  pending: UpdateType | undefined;
  running: boolean;
  timer?: Timer;
  /** Why the timer was set, and when it fires. */
  timerFor?: { trigger: WorkTrigger; at: number };
  /** What set `pending` when a timer did. */
  pendingTrigger?: WorkTrigger;
  /** The kill in progress, and the grace period it was started with. */
  kill?: { abort: AbortController; graceSeconds: number };
  terminatingAt?: number;
  terminatedAt?: number;
  /** The pod came back (same UID, e.g. a static pod's file deleted and written again) while it terminated: it starts again once terminated. */
  restartRequested?: boolean;
  done?: Promise<void>;
}

/** The kubelet's words for a pod held back because the runtime's network is not ready. */
export const NETWORK_NOT_READY_MESSAGE = 'network is not ready';

/** A sync that waits for the runtime's network: retried after a second, not the full back-off. */
export class NetworkNotReadyError extends Error {}

/** A kill given up for one with a shorter grace period (which the worker runs next). */
class KillCutShort extends Error {}

/** The grace period a pod's containers get: its deletion's, else its spec's (30 s by default). */
export function gracePeriodSeconds(pod: V1Pod): number {
  return pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
}

/** A static pod's full name (<name>_<namespace>): one at a time may run under it. */
function staticFullName(pod: V1Pod): string | undefined {
  return isStaticPod(pod) ? `${pod.metadata?.name}_${pod.metadata?.namespace}` : undefined;
}

export class PodWorkers {
  private readonly work = new Map<string, PodWork>();
  /** Static pod full name -> the UID started under it, until that pod has terminated. */
  private readonly startedStatic = new Map<string, string>();
  private readonly semaphore: Semaphore;
  private stopped = false;
  private readonly resyncMs: number;
  private readonly random: () => number;

  constructor(private readonly opts: PodWorkersOptions) {
    this.semaphore = new Semaphore(opts.maxConcurrentSyncs ?? 16);
    this.resyncMs = opts.resyncIntervalMs ?? 60_000;
    this.random = opts.random ?? Math.random;
  }

  /** A new or changed pod from a source. */
  updatePod(pod: V1Pod, type: UpdateType): void {
    if (this.stopped) return;
    const uid = pod.metadata?.uid ?? '';
    let w = this.work.get(uid);
    if (!w) {
      if (type === 'delete') return;
      w = { uid, pod, phase: 'syncing', removedFromApi: false, pending: undefined, running: false };
      this.work.set(uid, w);
    }
    // As the kubelet: a pod added again while it terminates is not stopped from terminating; it
    // starts afresh once that is done.
    if (type === 'create' && w.phase === 'terminating' && !pod.metadata?.deletionTimestamp) {
      w.restartRequested = true;
      w.pod = pod;
      return;
    }
    if (type !== 'pleg') w.pod = pod;
    if (type === 'delete') {
      w.removedFromApi = true;
      w.restartRequested = false;
    }
    if (w.phase === 'terminated') {
      // A finished pod only needs work again when it is being deleted: removed from its source, its
      // cleanup runs once more with that (its volumes, a static pod's mirror), then it is forgotten.
      if (!pod.metadata?.deletionTimestamp && type !== 'delete') return;
    }
    if ((pod.metadata?.deletionTimestamp || type === 'delete') && w.phase === 'syncing') this.startTerminating(w);
    // A shorter grace period than the kill in progress was given (kubectl delete --grace-period, a
    // force delete): that kill stops waiting, and the next one uses the new period.
    if (w.kill && type !== 'pleg' && gracePeriodSeconds(pod) < w.kill.graceSeconds) w.kill.abort.abort();
    // A periodic resync of the source brings nothing new: a pod already waiting for its own (jittered)
    // resync or back-off keeps that timer (the kubelet's pod source has no resync at all). Otherwise
    // every pod of the node would sync in the same instant, every informer resync period.
    if (type === 'sync' && w.phase === 'syncing' && w.timer && !w.running && !w.pending) return;
    this.enqueue(w, type);
  }

  /** A runtime event (PLEG) for a pod: sync it now if it has a worker. */
  wake(uid: string): void {
    const w = this.work.get(uid);
    if (w) this.enqueue(w, 'pleg');
  }

  /** The pod as its worker last saw it, while the pod is terminating (not yet terminated). */
  terminatingPod(uid: string): V1Pod | undefined {
    const w = this.work.get(uid);
    return w?.phase === 'terminating' ? w.pod : undefined;
  }

  isPodTerminationRequested(uid: string): boolean {
    const w = this.work.get(uid);
    return w !== undefined && w.phase !== 'syncing';
  }

  /** True for pods the workers no longer have, or have finished with. */
  isPodTerminated(uid: string): boolean {
    const w = this.work.get(uid);
    return w === undefined || w.phase === 'terminated';
  }

  /** Known and still wanted (for the housekeeping that kills pods nobody asked for). */
  isKnown(uid: string): boolean {
    return this.work.has(uid);
  }

  /** Pods admitted and not yet terminated: what admission counts as running here. */
  activePods(): V1Pod[] {
    return [...this.work.values()].filter((w) => w.phase !== 'terminated').map((w) => w.pod);
  }

  phaseOf(uid: string): PodPhaseOfWork | undefined {
    return this.work.get(uid)?.phase;
  }

  /** The worker's phase, whether it works now, and the timer it waits on. */
  state(uid: string): WorkerState | undefined {
    const w = this.work.get(uid);
    if (!w) return undefined;
    return { phase: w.phase, busy: w.running, next: w.timer ? w.timerFor : undefined };
  }

  size(): number {
    return this.work.size;
  }

  /** Workers by phase, and how many have work waiting (for /metrics). */
  counts(): { sync: number; terminating: number; terminated: number; queued: number } {
    const c = { sync: 0, terminating: 0, terminated: 0, queued: 0 };
    for (const w of this.work.values()) {
      c[w.phase === 'syncing' ? 'sync' : w.phase]++;
      if (w.pending || w.timer) c.queued++;
    }
    return c;
  }

  /** Stops accepting work and waits for running syncs to finish. Pods are left as they run. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.work.values()) w.timer?.cancel();
    await Promise.all([...this.work.values()].map((w) => w.done?.catch(() => undefined)));
  }

  private startTerminating(w: PodWork): void {
    w.phase = 'terminating';
    w.terminatingAt = this.opts.clock.now();
  }

  private enqueue(w: PodWork, type: UpdateType, trigger?: WorkTrigger): void {
    // A create or update outranks a periodic sync in the label of the work that follows.
    if (!w.pending || w.pending === 'sync' || w.pending === 'pleg') {
      w.pending = type;
      w.pendingTrigger = trigger;
    }
    w.timer?.cancel();
    w.timer = undefined;
    w.timerFor = undefined;
    if (!w.running) w.done = this.runWorker(w);
  }

  private requeueAfter(w: PodWork, ms: number, trigger: WorkTrigger): void {
    if (this.stopped) return;
    w.timer?.cancel();
    w.timerFor = { trigger, at: this.opts.clock.now() + ms };
    w.timer = this.opts.clock.setTimer(ms, () => {
      w.timer = undefined;
      w.timerFor = undefined;
      this.enqueue(w, 'sync', trigger);
    });
  }

  private jitter(ms: number, factor = 0.5): number {
    return ms + this.random() * ms * factor;
  }

  private async runWorker(w: PodWork): Promise<void> {
    w.running = true;
    try {
      while (w.pending && !this.stopped) {
        const type = w.pending;
        const trigger: WorkTrigger = type === 'pleg' ? 'pleg' : type === 'sync' ? (w.pendingTrigger ?? 'resync') : 'watch';
        w.pending = undefined;
        w.pendingTrigger = undefined;
        const started = this.opts.clock.now();
        const operation = w.phase === 'syncing' ? type : 'terminate';
        let requeue: { ms: number; trigger: WorkTrigger } | undefined;
        let ok = false;
        try {
          requeue = await this.step(w, type, trigger);
          ok = true;
        } catch (err) {
          if (!(err instanceof KillCutShort)) {
            // As the kubelet: a failed sync is retried after a flat, jittered period, not a growing one
            // (a pod waiting for its ConfigMap or the network starts within seconds of its arrival).
            requeue = { ms: this.jitter(err instanceof NetworkNotReadyError ? 1000 : (this.opts.backoffPeriodMs ?? 10_000)), trigger: 'retry' };
            this.opts.logger.warn('pod sync failed, will retry', { ...podFields(w.pod), phase: w.phase, error: (err as Error).message, retryInMs: Math.round(requeue.ms) });
          }
        } finally {
          this.opts.metrics?.podWorkerDuration.observe({ operation }, (this.opts.clock.now() - started) / 1000);
        }
        if (ok && w.phase === 'terminated' && w.restartRequested) {
          this.forget(w);
          this.updatePod(w.pod, 'create');
          return;
        }
        if (ok && w.phase === 'terminated' && (w.removedFromApi || w.pod.metadata?.deletionTimestamp)) {
          this.forget(w);
          return;
        }
        if (!w.pending && requeue !== undefined) this.requeueAfter(w, requeue.ms, requeue.trigger);
      }
    } finally {
      w.running = false;
    }
  }

  /** One unit of work; returns when to run again (undefined: only on the next update). */
  private async step(w: PodWork, type: UpdateType, trigger: WorkTrigger): Promise<{ ms: number; trigger: WorkTrigger } | undefined> {
    if (w.phase === 'syncing' && !this.allowStaticPodStart(w)) return undefined; // woken when the other one has terminated
    if (w.phase === 'syncing') {
      // Only syncs take one of the bounded slots.
      const outcome = await this.semaphore.runExclusive(() => this.opts.syncer.syncPod(w.pod, type, trigger));
      if (!outcome.terminal) {
        const resync = this.jitter(this.resyncMs);
        return outcome.requeueAfterMs !== undefined && outcome.requeueAfterMs < resync ? { ms: outcome.requeueAfterMs, trigger: 'back-off' } : { ms: resync, trigger: 'resync' };
      }
      this.startTerminating(w);
    }
    if (w.phase === 'terminating') {
      const kill = { abort: new AbortController(), graceSeconds: gracePeriodSeconds(w.pod) };
      w.kill = kill;
      try {
        await this.opts.syncer.syncTerminatingPod(w.pod, kill.abort.signal);
      } catch (err) {
        throw kill.abort.signal.aborted ? new KillCutShort() : err;
      } finally {
        w.kill = undefined;
      }
      w.phase = 'terminated';
      w.terminatedAt = this.opts.clock.now();
      this.releaseStaticName(w);
    }
    // Terminated: runtime clean. A terminal pod that stays in the API keeps its (idle) worker so that
    // resyncs do not start it again; a deleted one is removed from the API and forgotten.
    // A pod that came back is not gone: its dead containers stay (its restart count goes on from them).
    await this.opts.syncer.syncTerminatedPod(w.pod, w.removedFromApi && !w.restartRequested);
    return undefined;
  }

  private forget(w: PodWork): void {
    w.timer?.cancel();
    this.work.delete(w.uid);
    this.releaseStaticName(w);
  }

  /** Whether a static pod may start: no other pod of its name has started and not yet terminated. */
  private allowStaticPodStart(w: PodWork): boolean {
    const name = staticFullName(w.pod);
    if (!name) return true;
    const holder = this.startedStatic.get(name);
    if (holder === undefined || holder === w.uid || !this.work.has(holder)) {
      this.startedStatic.set(name, w.uid);
      return true;
    }
    this.opts.logger.debug('static pod waits for the one of its name to terminate', { ...podFields(w.pod), terminating: holder });
    return false;
  }

  /** The name a static pod held is free: the next static pod of that name (one waiting) starts. */
  private releaseStaticName(w: PodWork): void {
    const name = staticFullName(w.pod);
    if (!name || this.startedStatic.get(name) !== w.uid) return;
    this.startedStatic.delete(name);
    for (const other of this.work.values()) {
      if (other !== w && other.phase === 'syncing' && staticFullName(other.pod) === name) this.enqueue(other, 'sync', 'watch');
    }
  }
}
