// The eviction manager's loop (pkg/kubelet/eviction), every 10 s: observe the node's signals,
// evaluate the thresholds (hard ones at once, soft ones after their grace period, each held until
// its minimum reclaim is met; the pressure conditions held for the transition period), enforce the
// pods' local storage limits, then reclaim the resource most short: node-level first (dead
// containers, unused images) for a disk signal, then one pod a pass, ranked as the kubelet ranks
// them. Critical pods are never evicted. Pods' stats are read only when a pod has a local storage
// limit or a threshold is met, so that a calm node costs a few statfs calls a pass.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { PodSummary } from '../server/stats.js';
import type { Clock, Timer } from '../util/clock.js';
import { hasLocalStorageLimits, localStorageViolation } from './local-storage.js';
import { evictionMessage } from './messages.js';
import { rankFor } from './ranking.js';
import { emptyEvictionState, evaluate, isHard, resourceOf, thresholdsMet, type EvictionState, type NodeConditionType, type Observations, type Signal, type Threshold } from './thresholds.js';

/** The kubelet's eviction reason (status.reason and the event's). */
export const EVICTED_REASON = 'Evicted';
/** The kubelet's monitoring interval. */
export const EVICTION_MONITORING_PERIOD_MS = 10_000;
/** The grace period of a pod evicted for a hard threshold or a local storage limit (immediateEvictionGracePeriodSeconds). */
export const IMMEDIATE_EVICTION_GRACE_SECONDS = 1;

/** How a pod is evicted: why (the status message), with what grace, and whether a DisruptionTarget condition says so. */
export interface Eviction {
  message: string;
  gracePeriodSeconds: number;
  /** Evictions for node pressure carry DisruptionTarget (TerminationByKubelet); local storage ones do not. */
  disruptionTarget: boolean;
}

/** What reclaims node-level resources before pods are evicted (the kubelet's container and image GC). */
export interface NodeReclaimers {
  deleteAllUnusedContainers(): Promise<void>;
  deleteUnusedImages(): Promise<void>;
}

export interface EvictionManagerDeps {
  clock: Clock;
  logger: Logger;
  thresholds: Threshold[];
  pressureTransitionPeriodMs: number;
  /** evictionMaxPodGracePeriod: the longest grace a pod evicted for a soft threshold gets. */
  maxPodGracePeriodSeconds: number;
  activePods(): V1Pod[];
  /** The node's signals now. */
  observe(): Promise<Observations>;
  /** The stats of the node's pods, by UID (the node API's /stats/summary pods). */
  podStats(): Promise<Map<string, PodSummary>>;
  /** Whether a pod may never be evicted (the kubelet's IsCriticalPod). */
  isCritical(pod: V1Pod): boolean;
  /** Evicts the pod: the event, the kill, the Failed status. */
  evict(pod: V1Pod, eviction: Eviction): void;
  /** An event on the Node. */
  nodeEvent(type: 'Warning' | 'Normal', reason: string, message: string): void;
  /** Whether images live on a filesystem other than the node's. */
  dedicatedImageFs(): boolean;
  reclaimers?: NodeReclaimers;
}

export class EvictionManager {
  private timer?: Timer;
  private stopped = false;
  private state: EvictionState = emptyEvictionState();
  private current = new Set<NodeConditionType>();

  constructor(private readonly deps: EvictionManagerDeps) {}

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.timer = this.deps.clock.setTimer(EVICTION_MONITORING_PERIOD_MS, () =>
        void this.synchronize()
          .catch((err) => this.deps.logger.warn('eviction manager: pass failed', { error: (err as Error).message }))
          .finally(tick),
      );
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  /** The pressure conditions the node reports (IsUnderMemoryPressure and its siblings). */
  conditions(): ReadonlySet<NodeConditionType> {
    return this.current;
  }

  /** One pass; returns the pods evicted. */
  async synchronize(): Promise<V1Pod[]> {
    const { deps } = this;
    const active = deps.activePods();
    const observations = await deps.observe();
    const now = deps.clock.now();
    const ev = evaluate(deps.thresholds, observations, this.state, now, deps.pressureTransitionPeriodMs);
    this.state = ev.state;
    this.current = ev.conditions;

    const evicted = await this.localStorage(active.filter(hasLocalStorageLimits));
    if (evicted.length) return evicted;
    const threshold = ev.actionable[0];
    if (!threshold) return [];
    const resource = resourceOf(threshold.signal);
    deps.logger.info('eviction manager: attempting to reclaim', { resource, signal: threshold.signal });
    deps.nodeEvent('Warning', 'EvictionThresholdMet', `Attempting to reclaim ${resource}`);
    if (await this.reclaimNodeLevel(threshold.signal)) {
      deps.logger.info('eviction manager: able to reduce resource pressure without evicting pods', { resource });
      return [];
    }
    if (!active.length) {
      deps.logger.warn('eviction manager: eviction thresholds have been met, but no pods are active to evict');
      return [];
    }
    const stats = (await this.stats()) ?? new Map<string, PodSummary>();
    for (const pod of rankFor(threshold.signal, active, stats, deps.dedicatedImageFs())) {
      if (deps.isCritical(pod)) {
        deps.logger.warn('eviction manager: cannot evict a critical pod', { pod: podName(pod) });
        continue;
      }
      const grace = isHard(threshold) ? IMMEDIATE_EVICTION_GRACE_SECONDS : Math.min(deps.maxPodGracePeriodSeconds, pod.spec?.terminationGracePeriodSeconds ?? deps.maxPodGracePeriodSeconds);
      const message = evictionMessage(resource, pod, stats.get(pod.metadata?.uid ?? ''), ev.actionable, observations);
      deps.logger.info('eviction manager: evicting pod', { pod: podName(pod), message });
      deps.evict(pod, { message, gracePeriodSeconds: grace, disruptionTarget: true });
      return [pod];
    }
    deps.logger.warn('eviction manager: unable to evict any pods from the node');
    return [];
  }

  /**
   * Dead containers and unused images, for a disk signal whose filesystem holds them: with images
   * on a filesystem of their own, only for imagefs. True when, observed again, no threshold
   * (with its minimum reclaim) is met any more.
   */
  private async reclaimNodeLevel(signal: Signal): Promise<boolean> {
    const r = this.deps.reclaimers;
    const disk = resourceOf(signal) === 'ephemeral-storage' || resourceOf(signal) === 'inodes';
    if (!r || !disk || (this.deps.dedicatedImageFs() && signal.startsWith('nodefs.'))) return false;
    for (const step of [() => r.deleteAllUnusedContainers(), () => r.deleteUnusedImages()]) {
      try {
        await step();
      } catch (err) {
        this.deps.logger.info('eviction manager: unexpected error when attempting to reduce resource pressure', { signal, error: (err as Error).message });
      }
    }
    return thresholdsMet(this.deps.thresholds, await this.deps.observe(), true).length === 0;
  }

  private async stats(): Promise<Map<string, PodSummary> | undefined> {
    try {
      return await this.deps.podStats();
    } catch (err) {
      this.deps.logger.warn('eviction manager: pod stats not read', { error: (err as Error).message });
      return undefined;
    }
  }

  private async localStorage(watched: V1Pod[]): Promise<V1Pod[]> {
    if (!watched.length) return [];
    const stats = await this.stats();
    if (!stats) return [];
    const evicted: V1Pod[] = [];
    for (const pod of watched) {
      const s = stats.get(pod.metadata?.uid ?? '');
      const message = s && localStorageViolation(pod, s);
      if (!message) continue;
      if (this.deps.isCritical(pod)) {
        this.deps.logger.warn('eviction manager: cannot evict a critical pod', { pod: podName(pod), message });
        continue;
      }
      this.deps.logger.info('eviction manager: evicting pod', { pod: podName(pod), message });
      this.deps.evict(pod, { message, gracePeriodSeconds: IMMEDIATE_EVICTION_GRACE_SECONDS, disruptionTarget: false });
      evicted.push(pod);
    }
    return evicted;
  }
}

const podName = (pod: V1Pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
