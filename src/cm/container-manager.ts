// The node's cgroup hierarchy, as the kubelet's container manager keeps it with cgroupsPerQOS:
// <cgroupRoot>/kubepods (limited to node allocatable), kubepods/burstable and kubepods/besteffort
// (QoS cgroups), and a cgroup per pod under its QoS class's, which CRI gets as cgroup_parent.
import type { V1Pod } from '@kubernetes/client-node';
import { ConfigError } from '../config/config.js';
import { milliCPUToShares } from '../runtime/resources.js';
import type { CgroupManager } from './cgroup-manager.js';
import {
  allocatableConfig,
  burstableShares,
  KUBEPODS,
  parseCgroupfs,
  POD_CGROUP_PREFIX,
  podCgroupName,
  qosCgroupName,
  resourceConfigForPod,
  toCgroupfs,
  type Allocatable,
  type CgroupName,
  type ResourceConfig,
} from './resource-config.js';

/** A setting the node's cgroups cannot be made with: one line, exit code 2, as a bad config file. */
export class ContainerManagerConfigError extends ConfigError {
  override name = 'ContainerManagerConfigError';
}

export interface ContainerManagerConfig {
  cgroupsPerQOS: boolean;
  /** cgroupfs path of the hierarchy's root ('/' by default); it must exist. */
  cgroupRoot: string;
  /** 'pods': kubepods is limited to allocatable (capacity less reserved), else to capacity. */
  enforceNodeAllocatable: string[];
  /** Each pod cgroup's pids.max (-1: unbounded). */
  podPidsLimit: number;
  cpuCFSQuota: boolean;
  capacity: Allocatable;
  allocatable: Allocatable;
  /** The cgroups the OS's and the node daemons' processes run in, held to systemReserved and kubeReserved when enforced. */
  systemReservedCgroup: string;
  kubeReservedCgroup: string;
  systemReserved: ReservedAmounts;
  kubeReserved: ReservedAmounts;
}

/** What is reserved, as a reserved cgroup's limits are made of: millicores, bytes, processes. */
export interface ReservedAmounts {
  milliCPU?: number;
  memory?: number;
  pids?: number;
}

/** A reserved cgroup the node limits, and what the kubelet's event says of it. */
export interface ReservedEnforcement {
  cgroup: string;
  /** "system reserved", "kube reserved" */
  what: string;
}

/** The kubelet's limits of a reserved cgroup: cpu shares always, memory and pids unless only compressible resources are enforced. */
export function reservedConfig(r: ReservedAmounts, compressibleOnly: boolean): ResourceConfig {
  const out: ResourceConfig = {};
  if (r.milliCPU !== undefined) out.cpuShares = milliCPUToShares(r.milliCPU);
  if (compressibleOnly) return out;
  if (r.memory !== undefined) out.memory = r.memory;
  if (r.pids !== undefined) out.pidsLimit = r.pids;
  return out;
}

const MIN_SHARES = milliCPUToShares(0);

export class ContainerManager {
  private readonly kubepods: CgroupName;

  constructor(
    private readonly cgroups: CgroupManager,
    private readonly config: ContainerManagerConfig,
    /** Sends SIGKILL to a process (a pod cgroup's leftovers before it is removed). */
    private readonly kill: (pid: number) => void,
  ) {
    this.kubepods = [...parseCgroupfs(config.cgroupRoot), KUBEPODS];
  }

  get version(): 'v1' | 'v2' {
    return this.cgroups.version;
  }

  /** Makes kubepods and the QoS cgroups (the kubelet's setupNode); throws ContainerManagerConfigError for a missing root. */
  start(): void {
    if (!this.config.cgroupsPerQOS) return;
    const root = parseCgroupfs(this.config.cgroupRoot);
    if (!this.cgroups.exists(root)) throw new ContainerManagerConfigError(`invalid configuration: cgroup-root "${this.config.cgroupRoot}" doesn't exist`);
    const enforced = this.config.enforceNodeAllocatable.includes('pods');
    this.cgroups.create(this.kubepods, allocatableConfig(enforced ? this.config.allocatable : this.config.capacity));
    this.cgroups.create(qosCgroupName(this.kubepods, 'Burstable'), {});
    this.cgroups.create(qosCgroupName(this.kubepods, 'BestEffort'), { cpuShares: MIN_SHARES });
  }

  /**
   * Holds the reserved cgroups to their reservations (the kubelet's enforceExistingCgroup), as
   * enforceNodeAllocatable asks; they must exist. Throws ContainerManagerConfigError in the kubelet's words.
   */
  enforceReserved(): ReservedEnforcement[] {
    const c = this.config;
    const done: ReservedEnforcement[] = [];
    for (const [key, cgroup, amounts, what, label] of [
      ['system-reserved', c.systemReservedCgroup, c.systemReserved, 'system reserved', 'System Reserved'],
      ['kube-reserved', c.kubeReservedCgroup, c.kubeReserved, 'kube reserved', 'Kube Reserved'],
    ] as const) {
      const full = c.enforceNodeAllocatable.includes(key);
      const compressible = c.enforceNodeAllocatable.includes(`${key}-compressible`);
      if (!full && !compressible) continue;
      const name = parseCgroupfs(cgroup);
      const kind = compressible ? `${label} Compressible` : label;
      const problem = this.cgroups.validate(name);
      if (problem) throw new ContainerManagerConfigError(`Failed to enforce ${kind} Cgroup Limits on ${JSON.stringify(cgroup)}: ${problem}`);
      try {
        this.cgroups.update(name, reservedConfig(amounts, compressible));
      } catch (err) {
        throw new ContainerManagerConfigError(`Failed to enforce ${kind} Cgroup Limits on ${JSON.stringify(cgroup)}: ${(err as Error).message}`);
      }
      done.push({ cgroup, what });
    }
    return done;
  }

  /** The cgroup_parent a pod's sandbox gets: its pod cgroup, or none without cgroupsPerQOS. */
  podCgroupParent(pod: V1Pod): string | undefined {
    return this.config.cgroupsPerQOS ? toCgroupfs(podCgroupName(this.kubepods, pod)) : undefined;
  }

  podCgroupExists(pod: V1Pod): boolean {
    return !this.config.cgroupsPerQOS || this.cgroups.exists(podCgroupName(this.kubepods, pod));
  }

  /** Makes the pod's cgroup with its limits (EnsureExists); the QoS cgroups are brought up to date first. */
  ensurePodCgroup(pod: V1Pod, active: V1Pod[]): void {
    if (this.podCgroupExists(pod)) return;
    const uid = pod.metadata?.uid;
    this.updateQOS([...active.filter((p) => p.metadata?.uid !== uid), pod]);
    const config = resourceConfigForPod(pod, { cpuCFSQuota: this.config.cpuCFSQuota });
    if (this.config.podPidsLimit > 0) config.pidsLimit = this.config.podPidsLimit;
    this.cgroups.create(podCgroupName(this.kubepods, pod), config);
  }

  /** The pod cgroup's limits after a resize. */
  updatePodCgroup(pod: V1Pod): void {
    if (!this.config.cgroupsPerQOS) return;
    this.cgroups.update(podCgroupName(this.kubepods, pod), resourceConfigForPod(pod, { cpuCFSQuota: this.config.cpuCFSQuota }));
  }

  /** The Burstable cgroup's shares from the active pods' requests (besteffort keeps the minimum). */
  updateQOS(active: V1Pod[]): void {
    if (!this.config.cgroupsPerQOS) return;
    this.cgroups.update(qosCgroupName(this.kubepods, 'Burstable'), { cpuShares: burstableShares(active) });
    this.cgroups.update(qosCgroupName(this.kubepods, 'BestEffort'), { cpuShares: MIN_SHARES });
  }

  /** The pods' working set together (kubepods'), for the allocatableMemory.available signal. */
  podsWorkingSet(): number | undefined {
    return this.config.cgroupsPerQOS ? this.cgroups.memoryWorkingSet(this.kubepods) : undefined;
  }

  /** The processes in a pod's cgroup (its summary's process_stats); undefined without one. */
  podProcessCount(pod: V1Pod): number | undefined {
    if (!this.config.cgroupsPerQOS) return undefined;
    const name = podCgroupName(this.kubepods, pod);
    return this.cgroups.exists(name) ? this.cgroups.pids(name).length : undefined;
  }

  /** Every pod cgroup on the node, by pod UID (GetAllPodsFromCgroups). */
  podCgroups(): Map<string, CgroupName> {
    const found = new Map<string, CgroupName>();
    if (!this.config.cgroupsPerQOS) return found;
    for (const qos of [this.kubepods, qosCgroupName(this.kubepods, 'Burstable'), qosCgroupName(this.kubepods, 'BestEffort')]) {
      for (const child of this.cgroups.children(qos)) {
        if (child.startsWith(POD_CGROUP_PREFIX) && child.length > POD_CGROUP_PREFIX.length) found.set(child.slice(POD_CGROUP_PREFIX.length), [...qos, child]);
      }
    }
    return found;
  }

  /**
   * Removes a pod's cgroup: its shares lowered first (what is left runs least), what still runs
   * in it killed (a few rounds, as processes may fork meanwhile), then the cgroups removed.
   */
  destroyPodCgroup(name: CgroupName): void {
    try {
      this.cgroups.update(name, { cpuShares: MIN_SHARES });
    } catch {
      /* gone already, or the kernel refused a lower weight: it is being removed anyway */
    }
    for (let round = 0; round < 5; round++) {
      const pids = this.cgroups.pids(name);
      if (!pids.length) break;
      for (const pid of pids) this.kill(pid);
    }
    this.cgroups.destroy(name);
  }
}
