// The agent's side of evictions: the eviction manager (src/eviction) reading the pods' stats as
// /stats/summary does, and the pods it evicted, each remembered until its worker has killed it and
// written its final status (Failed, Evicted, the kubelet's message).
import type { V1Pod } from '@kubernetes/client-node';
import { EVICTED_REASON, EvictionManager, IMMEDIATE_EVICTION_GRACE_SECONDS } from '../eviction/eviction-manager.js';
import { podRef, type EventRecorder } from '../kube/object-ref.js';
import type { Logger } from '../observability/logger.js';
import { isMirrorPod } from '../pods/mirror-pods.js';
import { isCriticalPod } from '../pods/pressure-admission.js';
import { isStaticPod } from '../pods/static-pods.js';
import { buildSummary, NodeCpu, type StatsSources } from '../server/stats.js';
import type { Clock } from '../util/clock.js';

export interface PodEvictionsDeps {
  clock: Clock;
  logger: Logger;
  recorder: EventRecorder;
  stats: StatsSources;
  activePods(): V1Pod[];
  /** The pod's worker is asked to sync now (it then finds the pod evicted and ends it). */
  wake(uid: string): void;
}

export class PodEvictions {
  private readonly evicted = new Map<string, { reason: string; message: string }>();
  private readonly manager: EvictionManager;

  constructor(private readonly deps: PodEvictionsDeps) {
    const cpu = new NodeCpu();
    this.manager = new EvictionManager({
      clock: deps.clock,
      logger: deps.logger,
      activePods: deps.activePods,
      podStats: async () => new Map((await buildSummary(deps.stats, cpu)).pods.map((p) => [p.podRef.uid, p])),
      isCritical: (pod) => isCriticalPod(pod, isStaticPod(pod) || isMirrorPod(pod)),
      evict: (pod, message) => this.evict(pod, message),
    });
  }

  start(): void {
    this.manager.start();
  }

  stop(): void {
    this.manager.stop();
  }

  private evict(pod: V1Pod, message: string): void {
    const uid = pod.metadata?.uid ?? '';
    if (this.evicted.has(uid)) return;
    this.deps.recorder.event(podRef(pod), 'Warning', EVICTED_REASON, message);
    this.evicted.set(uid, { reason: EVICTED_REASON, message });
    this.deps.wake(uid);
  }

  /** Why the pod was evicted, if it was: what its final status says. */
  of(uid: string): { reason: string; message: string } | undefined {
    return this.evicted.get(uid);
  }

  /** The grace period its kill gets: the kubelet's immediate one for an evicted pod. */
  gracePeriodOverride(uid: string): number | undefined {
    return this.evicted.has(uid) ? IMMEDIATE_EVICTION_GRACE_SECONDS : undefined;
  }

  forget(uid: string): void {
    this.evicted.delete(uid);
  }
}
