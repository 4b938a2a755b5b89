// The eviction manager's loop (pkg/kubelet/eviction), as far as nodelet has it: every 10 s, the
// local storage limits of the active pods (local-storage.ts), then the memory signals against the
// hard threshold (memory.ts): a pod over its limit, or the first pod of the ranking while memory is
// short (one a pass), is evicted: a Warning Evicted event with the kubelet's message, then killed
// with a 1 s grace period and Failed with reason Evicted. Critical pods are never evicted. Pods'
// stats are read only when a pod has a local storage limit or a threshold is met.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { PodSummary } from '../server/stats.js';
import type { Clock, Timer } from '../util/clock.js';
import { hasLocalStorageLimits, localStorageViolation } from './local-storage.js';
import { memoryEvictionMessage, memoryThresholdMet, rankMemoryPressure, type MemoryObservation } from './memory.js';

/** The kubelet's eviction reason (status.reason and the event's). */
export const EVICTED_REASON = 'Evicted';
/** The kubelet's monitoring interval. */
export const EVICTION_MONITORING_PERIOD_MS = 10_000;
/** The grace period of a pod evicted for a local storage limit (immediateEvictionGracePeriodSeconds). */
export const IMMEDIATE_EVICTION_GRACE_SECONDS = 1;

export interface EvictionManagerDeps {
  clock: Clock;
  logger: Logger;
  activePods(): V1Pod[];
  /** The stats of the node's pods, by UID (the node API's /stats/summary pods). */
  podStats(): Promise<Map<string, PodSummary>>;
  /** Whether a pod may never be evicted (the kubelet's IsCriticalPod). */
  isCritical(pod: V1Pod): boolean;
  /** Evicts the pod: the event, the kill, the Failed status. */
  evict(pod: V1Pod, message: string): void;
  /** evictionHard's memory.available (a quantity or a percentage); absent: no memory signal. */
  memoryThreshold?: string;
  /** The memory signals now. */
  observeMemory?(): MemoryObservation[];
}

export class EvictionManager {
  private timer?: Timer;
  private stopped = false;

  constructor(private readonly deps: EvictionManagerDeps) {}

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.timer = this.deps.clock.setTimer(EVICTION_MONITORING_PERIOD_MS, () => void this.synchronize().finally(tick));
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  /** One pass; returns the pods evicted. */
  async synchronize(): Promise<V1Pod[]> {
    const active = this.deps.activePods();
    const evicted = await this.localStorage(active.filter(hasLocalStorageLimits));
    if (evicted.length) return evicted;
    return this.memoryPressure(active);
  }

  private async stats(): Promise<Map<string, PodSummary> | undefined> {
    try {
      return await this.deps.podStats();
    } catch (err) {
      this.deps.logger.warn('eviction manager: pod stats not read', { error: (err as Error).message });
      return undefined;
    }
  }

  /** The first pod of the memory pressure ranking that may be evicted, while a memory signal is under the threshold. */
  private async memoryPressure(active: V1Pod[]): Promise<V1Pod[]> {
    const threshold = this.deps.memoryThreshold;
    if (!threshold || !this.deps.observeMemory || !active.length) return [];
    const met = memoryThresholdMet(this.deps.observeMemory(), threshold);
    if (!met) return [];
    this.deps.logger.info('eviction manager: threshold met', { signal: met.observation.signal, threshold, availableBytes: met.observation.availableBytes });
    const stats = (await this.stats()) ?? new Map<string, PodSummary>();
    for (const pod of rankMemoryPressure(active, stats)) {
      if (this.deps.isCritical(pod)) continue;
      const message = memoryEvictionMessage(pod, stats.get(pod.metadata?.uid ?? ''), met);
      this.deps.logger.info('eviction manager: evicting pod', { pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, message });
      this.deps.evict(pod, message);
      return [pod];
    }
    this.deps.logger.warn('eviction manager: unable to evict any pods from the node');
    return [];
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
        this.deps.logger.warn('eviction manager: cannot evict a critical pod', { pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, message });
        continue;
      }
      this.deps.logger.info('eviction manager: evicting pod', { pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, message });
      this.deps.evict(pod, message);
      evicted.push(pod);
    }
    return evicted;
  }
}
