// The agent's side of evictions: the eviction manager (src/eviction) fed with the node's signals
// (memory from /proc/meminfo, the pods' from kubepods, the node and image filesystems by statfs,
// processes from /proc) and the pods' stats as /stats/summary reads them; the pods it evicted,
// each remembered until its worker has killed it and written its final status (Failed, Evicted,
// the kubelet's message).
import { statSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { EVICTED_REASON, EvictionManager, type Eviction, type NodeReclaimers } from '../eviction/eviction-manager.js';
import { parseThresholds, type NodeConditionType, type Observations, type Threshold } from '../eviction/thresholds.js';
import { podRef, type EventRecorder } from '../kube/object-ref.js';
import type { Logger } from '../observability/logger.js';
import type { NodeEnded } from '../status/node-ended.js';
import { podIsCritical } from '../pods/pressure-admission.js';
import { buildSummary, fsOf, NodeCpu, nodeMemory, type StatsSources } from '../server/stats.js';
import type { Clock } from '../util/clock.js';
import type { NodeletConfig } from '../config/config.js';
import { existing, maxPids, processCount, type HostInfo } from '../kube/host.js';
import { nodeResources, type PodCgroups } from './pod-cgroups.js';

export interface PodEvictionsDeps {
  thresholds: Threshold[];
  pressureTransitionPeriodMs: number;
  maxPodGracePeriodSeconds: number;
  /** The pods' memory together may be this much (allocatable), and is now (kubepods' working set); undefined: not known. */
  allocatableMemory?: { capacityBytes: number; podsWorkingSet(): number | undefined };
  /** The node filesystem (pod logs and directories). */
  nodeFsPath: string;
  /** Where the runtime keeps its images, when known. */
  imageFsPath(): string | undefined;
  clock: Clock;
  logger: Logger;
  recorder: EventRecorder;
  /** An event on the Node. */
  nodeEvent(type: 'Warning' | 'Normal', reason: string, message: string): void;
  stats: StatsSources;
  activePods(): V1Pod[];
  /** The pod's worker is asked to sync now (it then finds the pod evicted and ends it). */
  wake(uid: string): void;
  reclaimers?: NodeReclaimers;
}

/** Bytes and inodes of the filesystem holding a path, as signals; nothing when it cannot be read. */
function fsObservations(path: string | undefined, bytes: 'nodefs.available' | 'imagefs.available', inodes: 'nodefs.inodesFree' | 'imagefs.inodesFree'): Observations {
  const s = path ? fsOf(path, '') : undefined;
  if (s?.availableBytes === undefined || s.capacityBytes === undefined) return {};
  const out: Observations = { [bytes]: { available: s.availableBytes, capacity: s.capacityBytes } };
  // Some filesystems (btrfs, overlay on some kernels) report no inode counts: no signal then.
  if (s.inodes && s.inodesFree !== undefined) out[inodes] = { available: s.inodesFree, capacity: s.inodes };
  return out;
}

function sameFilesystem(a: string, b: string | undefined): boolean {
  if (!b) return true;
  try {
    return statSync(a).dev === statSync(b).dev;
  } catch {
    return true;
  }
}

export class PodEvictions {
  private readonly evicted = new Map<string, Eviction>();
  private readonly manager: EvictionManager;

  constructor(private readonly deps: PodEvictionsDeps) {
    const cpu = new NodeCpu();
    this.manager = new EvictionManager({
      clock: deps.clock,
      logger: deps.logger,
      thresholds: deps.thresholds,
      pressureTransitionPeriodMs: deps.pressureTransitionPeriodMs,
      maxPodGracePeriodSeconds: deps.maxPodGracePeriodSeconds,
      activePods: deps.activePods,
      observe: () => this.observe(),
      podStats: async () => new Map((await buildSummary(deps.stats, cpu)).pods.map((p) => [p.podRef.uid, p])),
      isCritical: podIsCritical,
      evict: (pod, eviction) => this.evict(pod, eviction),
      nodeEvent: deps.nodeEvent,
      dedicatedImageFs: () => !sameFilesystem(deps.nodeFsPath, deps.imageFsPath()),
      reclaimers: deps.reclaimers,
    });
  }

  start(): void {
    this.manager.start();
  }

  stop(): void {
    this.manager.stop();
  }

  /** The pressure conditions the node reports now. */
  conditions(): ReadonlySet<NodeConditionType> {
    return this.manager.conditions();
  }

  /** One pass of the eviction manager (tests and the first status). */
  synchronize(): Promise<V1Pod[]> {
    return this.manager.synchronize();
  }

  /** The node's signals: memory.available (the node's memory less its working set), allocatableMemory.available with kubepods, the filesystems, pids. */
  private async observe(): Promise<Observations> {
    const out: Observations = {};
    const node = nodeMemory(new Date(this.deps.clock.now()).toISOString());
    if (node.availableBytes !== undefined && node.workingSetBytes !== undefined) out['memory.available'] = { available: node.availableBytes, capacity: node.availableBytes + node.workingSetBytes };
    const alloc = this.deps.allocatableMemory;
    const pods = alloc?.podsWorkingSet();
    if (alloc && pods !== undefined) out['allocatableMemory.available'] = { available: Math.max(0, alloc.capacityBytes - pods), capacity: alloc.capacityBytes };
    Object.assign(out, fsObservations(this.deps.nodeFsPath, 'nodefs.available', 'nodefs.inodesFree'));
    // The kubelet observes imagefs whether or not it is the node filesystem.
    Object.assign(out, fsObservations(this.deps.imageFsPath() ?? this.deps.nodeFsPath, 'imagefs.available', 'imagefs.inodesFree'));
    const pids = await processCount();
    const max = maxPids();
    if (pids !== undefined && max !== undefined) out['pid.available'] = { available: max - pids, capacity: max };
    return out;
  }

  private evict(pod: V1Pod, eviction: Eviction): void {
    const uid = pod.metadata?.uid ?? '';
    if (this.evicted.has(uid)) return;
    this.deps.recorder.event(podRef(pod), 'Warning', EVICTED_REASON, eviction.message);
    this.evicted.set(uid, eviction);
    this.deps.wake(uid);
  }

  /** Why the pod was evicted, if it was: what its final status says. */
  of(uid: string): NodeEnded | undefined {
    const e = this.evicted.get(uid);
    return e && { reason: EVICTED_REASON, message: e.message, ...(e.disruptionTarget ? { disruptionTarget: e.message } : {}) };
  }

  /** The grace period its kill gets: the one its eviction chose. */
  gracePeriodOverride(uid: string): number | undefined {
    return this.evicted.get(uid)?.gracePeriodSeconds;
  }

  forget(uid: string): void {
    this.evicted.delete(uid);
  }
}

/** The agent's evictions from its configuration: its thresholds, allocatable from capacity less reserved. */
export function newPodEvictions(
  config: NodeletConfig,
  host: Pick<HostInfo, 'cpus' | 'memoryBytes'>,
  podCgroups: PodCgroups,
  parts: Omit<PodEvictionsDeps, 'thresholds' | 'pressureTransitionPeriodMs' | 'maxPodGracePeriodSeconds' | 'allocatableMemory' | 'nodeFsPath'>,
): PodEvictions {
  const allocatableMemory = { capacityBytes: nodeResources(config, host).allocatable.memory, podsWorkingSet: () => podCgroups.podsWorkingSet() };
  return new PodEvictions({
    ...parts,
    thresholds: parseThresholds(config),
    pressureTransitionPeriodMs: config.evictionPressureTransitionPeriodMs,
    maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriod,
    allocatableMemory,
    nodeFsPath: existing(config.podLogRoot),
  });
}
