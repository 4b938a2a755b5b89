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
import type { MemoryObservation } from '../eviction/memory.js';
import { buildSummary, NodeCpu, nodeMemory, type StatsSources } from '../server/stats.js';
import type { Clock } from '../util/clock.js';
import type { NodeletConfig } from '../config/config.js';
import type { HostInfo } from '../kube/host.js';
import { nodeResources, type PodCgroups } from './pod-cgroups.js';

export interface PodEvictionsDeps {
  /** evictionHard's memory.available. */
  memoryThreshold: string;
  /** The pods' memory together may be this much (allocatable), and is now (kubepods' working set); undefined: not known. */
  allocatableMemory?: { capacityBytes: number; podsWorkingSet(): number | undefined };
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
      memoryThreshold: deps.memoryThreshold,
      observeMemory: () => this.observeMemory(),
    });
  }

  start(): void {
    this.manager.start();
  }

  stop(): void {
    this.manager.stop();
  }

  /** memory.available (the node's memory less its working set) and, with kubepods, allocatableMemory.available. */
  private observeMemory(): MemoryObservation[] {
    const out: MemoryObservation[] = [];
    const node = nodeMemory(new Date(this.deps.clock.now()).toISOString());
    if (node.availableBytes !== undefined && node.workingSetBytes !== undefined) {
      out.push({ signal: 'memory.available', availableBytes: node.availableBytes, capacityBytes: node.availableBytes + node.workingSetBytes });
    }
    const alloc = this.deps.allocatableMemory;
    const pods = alloc?.podsWorkingSet();
    if (alloc && pods !== undefined) out.push({ signal: 'allocatableMemory.available', availableBytes: Math.max(0, alloc.capacityBytes - pods), capacityBytes: alloc.capacityBytes });
    return out;
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

/** The agent's evictions from its configuration: evictionHard's memory threshold, allocatable from capacity less reserved. */
export function newPodEvictions(
  config: NodeletConfig,
  host: Pick<HostInfo, 'cpus' | 'memoryBytes'>,
  podCgroups: PodCgroups,
  parts: Omit<PodEvictionsDeps, 'memoryThreshold' | 'allocatableMemory'>,
): PodEvictions {
  const allocatableMemory = { capacityBytes: nodeResources(config, host).allocatable.memory, podsWorkingSet: () => podCgroups.podsWorkingSet() };
  return new PodEvictions({ ...parts, memoryThreshold: config.evictionHard.memoryAvailable, allocatableMemory });
}
