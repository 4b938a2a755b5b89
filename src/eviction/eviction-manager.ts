// The eviction manager's loop (pkg/kubelet/eviction), as far as nodelet has it: every 10 s, the
// local storage limits of the active pods (local-storage.ts); a pod over one is evicted: a Warning
// Evicted event with the kubelet's message, then killed with a 1 s grace period and Failed with
// reason Evicted. Critical pods are never evicted. Stats are read only for pods that have a limit.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { PodSummary } from '../server/stats.js';
import type { Clock, Timer } from '../util/clock.js';
import { hasLocalStorageLimits, localStorageViolation } from './local-storage.js';

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
    const watched = this.deps.activePods().filter(hasLocalStorageLimits);
    if (!watched.length) return [];
    let stats: Map<string, PodSummary>;
    try {
      stats = await this.deps.podStats();
    } catch (err) {
      this.deps.logger.warn('eviction manager: pod stats not read', { error: (err as Error).message });
      return [];
    }
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
