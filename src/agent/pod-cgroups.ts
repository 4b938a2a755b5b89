// The agent's side of the node's cgroup hierarchy (src/cm): made at start, a pod's cgroup ensured
// before its sandbox (the kubelet's FailedToCreatePodContainer when it cannot be), the QoS cgroups
// kept up to date, and the cgroups of pods that are gone removed by housekeeping.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { detectCgroupManager, CGROUP_ROOT } from '../cm/cgroup-manager.js';
import { ContainerManager, ContainerManagerConfigError } from '../cm/container-manager.js';
import type { Allocatable } from '../cm/resource-config.js';
import type { NodeletConfig } from '../config/config.js';
import { maxPids, type HostInfo } from '../kube/host.js';
import { nodeCapacity, nodeReserved, reservedAmounts } from '../cm/node-allocatable.js';
import { podRef, type EventRecorder } from '../kube/object-ref.js';
import { nodeObjectRef } from '../images/image-gc-manager.js';
import type { Logger } from '../observability/logger.js';
import type { ContainerCgroupSettings } from '../runtime/deps.js';

const SUCCESSFUL_ENFORCEMENT = 'SuccessfulNodeAllocatableEnforcement';

/** The kubelet's event reason when a pod's cgroup cannot be made. */
export const FAILED_TO_CREATE_POD_CONTAINER = 'FailedToCreatePodContainer';

export class PodCgroupError extends Error {
  override name = 'PodCgroupError';
}

/** What the node has, and what its pods together may use: capacity less system and kube reserved. */
export function nodeResources(config: NodeletConfig, host: Pick<HostInfo, 'cpus' | 'memoryBytes'>): { capacity: Allocatable; allocatable: Allocatable } {
  const capacity = nodeCapacity(config, host);
  const reserved = nodeReserved(config);
  const pids = maxPids() ?? -1;
  return { capacity: { milliCPU: capacity.milliCPU, memory: capacity.memory, pids }, allocatable: { milliCPU: capacity.milliCPU - reserved.milliCPU, memory: capacity.memory - reserved.memory, pids } };
}

export class PodCgroups {
  private readonly manager?: ContainerManager;
  private readonly startEvents: string[] = [];

  constructor(
    private readonly config: NodeletConfig,
    host: Pick<HostInfo, 'cpus' | 'memoryBytes'>,
    private readonly recorder: EventRecorder,
    private readonly logger: Logger,
  ) {
    if (!config.cgroupsPerQOS) return;
    const cgroups = detectCgroupManager();
    if (!cgroups) throw new ContainerManagerConfigError('cgroupsPerQOS: no cgroup hierarchy is mounted under /sys/fs/cgroup (set cgroupsPerQOS: false to run without one)');
    const settings = { ...config, ...nodeResources(config, host), systemReserved: reservedAmounts(config.systemReserved), kubeReserved: reservedAmounts(config.kubeReserved) };
    this.manager = new ContainerManager(cgroups, settings, (pid) => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone already */
      }
    });
  }

  /**
   * Makes kubepods and the QoS cgroups, and holds the reserved cgroups to their reservations; what
   * could not be is a ContainerManagerConfigError (one line, exit 2). This runs before the node has
   * its identity: the kubelet's events of it wait for recordStartEvents().
   */
  start(): void {
    if (!this.manager) return;
    this.manager.start();
    if (this.config.cgroupRoot !== '/') this.startEvents.push('Updated Node Allocatable limit across pods');
    for (const r of this.manager.enforceReserved()) this.startEvents.push(`Updated limits on ${r.what} cgroup ${r.cgroup}`);
    this.logger.info('pod cgroups', { root: this.config.cgroupRoot, version: this.manager.version, enforceNodeAllocatable: this.config.enforceNodeAllocatable });
  }

  /** The kubelet's SuccessfulNodeAllocatableEnforcement events of start(), once events can be sent as the node. */
  recordStartEvents(): void {
    const node = nodeObjectRef(this.config.nodeName);
    for (const message of this.startEvents.splice(0)) this.recorder.event(node, 'Normal', SUCCESSFUL_ENFORCEMENT, message);
  }

  /** The CRI cgroup_parent of a pod's sandbox. */
  parent(pod: V1Pod): string | undefined {
    return this.manager?.podCgroupParent(pod);
  }

  /** The settings containers get for the node's cgroups, whether or not nodelet makes a hierarchy. */
  containerSettings(): ContainerCgroupSettings {
    const v2 = existsSync(join(CGROUP_ROOT, 'cgroup.controllers'));
    // Swap accounted: v1 memory.memsw files, v2 memory.swap.max in the pods' cgroup.
    const swap = v2 ? existsSync(join(CGROUP_ROOT, ...this.config.cgroupRoot.split('/').filter(Boolean), 'kubepods', 'memory.swap.max')) : existsSync(join(CGROUP_ROOT, 'memory', 'memory.memsw.limit_in_bytes'));
    return { version: v2 ? 'v2' : 'v1', oomGroup: v2 && !this.config.singleProcessOOMKill, swapController: swap };
  }

  /** Ensures the pod's cgroup before its sandbox; a failure is the pod's Warning event and its sync's error. */
  ensure(pod: V1Pod, active: V1Pod[]): void {
    if (!this.manager || this.manager.podCgroupExists(pod)) return;
    try {
      this.manager.ensurePodCgroup(pod, active);
    } catch (err) {
      const message = `unable to ensure pod container exists: ${(err as Error).message}`;
      this.recorder.event(podRef(pod), 'Warning', FAILED_TO_CREATE_POD_CONTAINER, message);
      throw new PodCgroupError(`failed to ensure that the pod: ${pod.metadata?.uid ?? ''} cgroups exist and are correctly applied: ${(err as Error).message}`);
    }
  }

  /** The pods' memory working set together, where nodelet keeps them in kubepods. */
  podsWorkingSet(): number | undefined {
    return this.manager?.podsWorkingSet();
  }

  /** The processes of the pod, counted in its cgroup. */
  podProcessCount(pod: V1Pod): number | undefined {
    try {
      return this.manager?.podProcessCount(pod);
    } catch {
      return undefined;
    }
  }

  /** A resized pod's cgroup gets its new limits. */
  resized(pod: V1Pod): void {
    try {
      this.manager?.updatePodCgroup(pod);
    } catch (err) {
      this.logger.warn('pod cgroup not updated after a resize', { uid: pod.metadata?.uid, error: (err as Error).message });
    }
  }

  updateQOS(active: V1Pod[]): void {
    try {
      this.manager?.updateQOS(active);
    } catch (err) {
      this.logger.warn('QoS cgroups not updated', { error: (err as Error).message });
    }
  }

  /** Removes the cgroups of pods that can no longer be running (cleanupOrphanedPodCgroups). */
  cleanup(possiblyRunning: (uid: string) => boolean): void {
    if (!this.manager) return;
    for (const [uid, name] of this.manager.podCgroups()) {
      if (possiblyRunning(uid)) continue;
      try {
        this.manager.destroyPodCgroup(name);
        this.logger.debug('removed the cgroup of a pod that is gone', { uid });
      } catch (err) {
        // Processes dying after SIGKILL keep it busy for a moment: the next housekeeping tries again.
        this.logger.debug('pod cgroup not removed yet', { uid, error: (err as Error).message });
      }
    }
  }
}
