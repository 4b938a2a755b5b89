// CPU and memory limits through cgroups, where the host lets us write them (v1 or v2).
import { existsSync, mkdirSync, readFileSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { v1DeviceRule, type DeviceRule } from './devices.js';
import { mounts } from './procfs.js';
import { readCgroupV1, readCgroupV2, type UsageSample } from './stats.js';

export interface CgroupLimits {
  cpuShares?: number;
  cpuQuotaUs?: number;
  cpuPeriodUs?: number;
  memoryBytes?: number;
}

/** Where a container's processes go, and what the launcher must still do there. */
export interface CgroupPlacement {
  /** The cgroup.procs files to join. */
  procs: string[];
  /** cgroup v2: the cgroup the launcher attaches the device filter to (v1 has its rules written already). */
  deviceCgroup?: string;
  /** cgroup v1: the container's own cgroup directories, which it sees under /sys/fs/cgroup (v2: its cgroup namespace's root). */
  views?: string[];
}

export interface Cgroups {
  /** 'v1', 'v2', or why limits cannot be applied. */
  mode: 'v1' | 'v2' | 'none';
  detail: string;
  /**
   * Creates the container's cgroups with limits and its device allow-list (v1: written here; v2:
   * left to the launcher, an eBPF filter); returns the cgroup.procs files to join: its own, and on
   * v1 the runtime's cgroup in every other hierarchy, so that nothing of the container stays in the
   * cgroups of whoever started the runtime (a DaemonSet pod's container, whose end kills every
   * process left in its cgroups). Throws where the devices cannot be restricted.
   */
  create(id: string, limits: CgroupLimits, devices: DeviceRule[]): CgroupPlacement;
  /** The cgroup.procs files of a container's cgroups that exist: what a command exec'd in it joins. */
  procs(id: string): string[];
  /** The cgroup.procs files for the runtime's helpers that outlive it (a pod's PID namespace holder). */
  helpers(): string[];
  /** Sets a running container's limits anew (a resize), unset ones lifted; throws what the kernel refused. */
  update(id: string, limits: CgroupLimits): void;
  /** Whether the cgroup recorded an OOM kill. */
  oomKilled(id: string): boolean;
  /** CPU and memory used by the container's cgroups, if it has them. */
  usage(id: string): UsageSample | undefined;
  /** How many processes the container's cgroup holds. */
  processCount(id: string): number | undefined;
  remove(id: string): void;
}

const ROOT = '/sys/fs/cgroup';

/**
 * A shell prologue for a process the runtime starts outside its own process tree: it moves itself
 * into the cgroups named by NODELET_CGROUP_PROCS (cgroup.procs files; one it may not join is left)
 * before exec'ing what follows, so that its children are born there.
 */
export const JOIN_CGROUPS_SH = 'for p in $NODELET_CGROUP_PROCS; do echo $$ > "$p" 2>/dev/null; done; unset NODELET_CGROUP_PROCS';
const PARENT = 'nodelet-process';

function tryWrite(path: string, value: string): boolean {
  try {
    writeFileSync(path, value);
    return true;
  } catch {
    return false;
  }
}

/** A write that must take: the kernel's refusal (EBUSY for a memory limit below usage...) is the caller's error. */
function mustWrite(path: string, value: string): void {
  try {
    writeFileSync(path, value);
  } catch (err) {
    throw new Error(`writing ${value} to ${path}: ${(err as Error).message}`);
  }
}

/** cpu.shares to cpu.weight as runc converts them (integer division): the kubelet's 100m (102 shares) is weight 4 on v2. */
export const cpuWeight = (shares: number) => Math.max(1, Math.min(10000, 1 + Math.floor(((Math.max(2, shares) - 2) * 9999) / 262142)));

function countProcs(path: string): number | undefined {
  try {
    return readFileSync(path, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return undefined;
  }
}

export function detectCgroups(): Cgroups {
  const v2 = existsSync(join(ROOT, 'cgroup.controllers'));
  const v1 = existsSync(join(ROOT, 'memory', 'memory.limit_in_bytes')) && existsSync(join(ROOT, 'cpu', 'cpu.shares'));
  if (v2) {
    const dir = join(ROOT, PARENT);
    try {
      mkdirSync(dir, { recursive: true });
      // pids too, as on the kubelet's v2 nodes, so a container's pids.max exists (and counts).
      for (const d of [ROOT, dir]) if (!tryWrite(join(d, 'cgroup.subtree_control'), '+cpu +memory +pids')) tryWrite(join(d, 'cgroup.subtree_control'), '+cpu +memory');
      return {
        mode: 'v2',
        detail: 'cgroup v2',
        create(id, l, devices) {
          const d = join(dir, id);
          mkdirSync(d, { recursive: true });
          if (l.memoryBytes) tryWrite(join(d, 'memory.max'), String(l.memoryBytes));
          if (l.cpuQuotaUs && l.cpuPeriodUs) tryWrite(join(d, 'cpu.max'), `${l.cpuQuotaUs} ${l.cpuPeriodUs}`);
          if (l.cpuShares) tryWrite(join(d, 'cpu.weight'), String(cpuWeight(l.cpuShares)));
          return { procs: [join(d, 'cgroup.procs')], deviceCgroup: allDevices(devices) ? undefined : d };
        },
        procs: (id) => [join(dir, id, 'cgroup.procs')].filter((f) => existsSync(f)),
        helpers() {
          // A leaf: a cgroup with controllers enabled for its children may hold no process itself.
          const d = join(dir, 'helpers');
          mkdirSync(d, { recursive: true });
          return [join(d, 'cgroup.procs')];
        },
        update(id, l) {
          const d = join(dir, id);
          mustWrite(join(d, 'memory.max'), l.memoryBytes ? String(l.memoryBytes) : 'max');
          mustWrite(join(d, 'cpu.max'), `${l.cpuQuotaUs ? l.cpuQuotaUs : 'max'} ${l.cpuPeriodUs ?? 100000}`);
          if (l.cpuShares) mustWrite(join(d, 'cpu.weight'), String(cpuWeight(l.cpuShares)));
        },
        oomKilled(id) {
          try {
            return /^oom_kill [1-9]/m.test(readFileSync(join(dir, id, 'memory.events'), 'utf8'));
          } catch {
            return false;
          }
        },
        usage: (id) => readCgroupV2(join(dir, id)),
        processCount: (id) => countProcs(join(dir, id, 'cgroup.procs')),
        remove(id) {
          try {
            rmdirSync(join(dir, id));
          } catch {
            /* still has processes or already gone */
          }
        },
      };
    } catch (err) {
      return none(`cgroup v2 is not writable here: ${(err as Error).message}`);
    }
  }
  if (v1) {
    const mem = join(ROOT, 'memory', PARENT);
    const cpu = join(ROOT, 'cpu', PARENT);
    // CPU accounting: cpuacct is often mounted with cpu (cpu,cpuacct); where it is a hierarchy of
    // its own, the container joins a cgroup there as well.
    const acctRoot = existsSync(join(ROOT, 'cpu', 'cpuacct.usage')) ? join(ROOT, 'cpu') : existsSync(join(ROOT, 'cpuacct', 'cpuacct.usage')) ? join(ROOT, 'cpuacct') : undefined;
    const acct = acctRoot ? join(acctRoot, PARENT) : undefined;
    // The cpuacct cgroups a container joins beside its cpu ones: only where it is a hierarchy of its own.
    const ownAcct = acct && realpathSync(acctRoot!) !== realpathSync(join(ROOT, 'cpu')) ? acct : undefined;
    const devicesRoot = existsSync(join(ROOT, 'devices', 'devices.allow')) ? join(ROOT, 'devices') : undefined;
    const dev = devicesRoot ? join(devicesRoot, PARENT) : undefined;
    // The runtime's cgroup in each hierarchy a container gets a cgroup of its own in.
    const parents = [mem, cpu, ...(ownAcct ? [ownAcct] : []), ...(dev ? [dev] : [])];
    const ownDirs = (id: string) => parents.map((p) => join(p, id));
    try {
      for (const p of parents) mkdirSync(p, { recursive: true });
      const limited = [join(ROOT, 'memory'), join(ROOT, 'cpu'), ...(acctRoot ? [acctRoot] : []), ...(devicesRoot ? [devicesRoot] : [])].map((d) => realpathSync(d));
      const others = otherHierarchies(limited);
      return {
        mode: 'v1',
        detail: `cgroup v1 (memory, cpu${acct ? ', cpuacct' : ''})`,
        create(id, l, devices) {
          if (!dev) throw new Error("the devices cgroup controller is not mounted: the container's devices cannot be restricted");
          const dirs = ownDirs(id);
          for (const d of dirs) mkdirSync(d, { recursive: true });
          const [m, c, dv] = [join(mem, id), join(cpu, id), join(dev, id)];
          if (!allDevices(devices)) {
            mustWrite(join(dv, 'devices.deny'), 'a');
            for (const r of devices) mustWrite(join(dv, 'devices.allow'), v1DeviceRule(r));
          }
          if (l.memoryBytes) tryWrite(join(m, 'memory.limit_in_bytes'), String(l.memoryBytes));
          if (l.cpuShares) tryWrite(join(c, 'cpu.shares'), String(l.cpuShares));
          if (l.cpuQuotaUs && l.cpuPeriodUs) {
            tryWrite(join(c, 'cpu.cfs_period_us'), String(l.cpuPeriodUs));
            tryWrite(join(c, 'cpu.cfs_quota_us'), String(l.cpuQuotaUs));
          }
          return { procs: [...dirs.map((d) => join(d, 'cgroup.procs')), ...others()], views: dirs };
        },
        procs: (id) => [...ownDirs(id).map((d) => join(d, 'cgroup.procs')), ...others()].filter((f) => existsSync(f)),
        update(id, l) {
          mustWrite(join(mem, id, 'memory.limit_in_bytes'), l.memoryBytes ? String(l.memoryBytes) : '-1');
          if (l.cpuShares) mustWrite(join(cpu, id, 'cpu.shares'), String(l.cpuShares));
          if (l.cpuPeriodUs) mustWrite(join(cpu, id, 'cpu.cfs_period_us'), String(l.cpuPeriodUs));
          mustWrite(join(cpu, id, 'cpu.cfs_quota_us'), l.cpuQuotaUs ? String(l.cpuQuotaUs) : '-1');
        },
        helpers: () => [...parents.map((p) => join(p, 'cgroup.procs')), ...others()],
        usage: (id) => readCgroupV1(join(mem, id), acct ? join(acct, id) : undefined),
        processCount: (id) => countProcs(join(mem, id, 'cgroup.procs')),
        oomKilled(id) {
          try {
            return /^oom_kill [1-9]/m.test(readFileSync(join(mem, id, 'memory.oom_control'), 'utf8'));
          } catch {
            return false;
          }
        },
        remove(id) {
          for (const d of ownDirs(id)) {
            try {
              rmdirSync(d);
            } catch {
              /* still has processes or already gone */
            }
          }
        },
      };
    } catch (err) {
      return none(`cgroup v1 is not writable here: ${(err as Error).message}`);
    }
  }
  return none('no cgroup controllers are mounted');
}

/**
 * The runtime's cgroup (PARENT, no limits) in every cgroup v1 hierarchy but the limited ones, and
 * in the unified one of a hybrid host: made when first asked for, and again if it was removed.
 */
function otherHierarchies(limited: string[]): () => string[] {
  const hierarchies = mounts()
    .filter((m) => (m.fstype === 'cgroup' || m.fstype === 'cgroup2') && m.point.startsWith(`${ROOT}/`) && !limited.includes(m.point))
    .map((m) => m.point);
  return () => {
    const procs: string[] = [];
    for (const h of hierarchies) {
      const d = join(h, PARENT);
      try {
        if (!existsSync(d)) {
          mkdirSync(d);
          // A new cpuset cgroup has no CPUs or memory nodes: no process may join it until it has the root's.
          for (const f of ['cpuset.cpus', 'cpuset.mems']) if (existsSync(join(h, f))) writeFileSync(join(d, f), readFileSync(join(h, f)));
        }
        procs.push(join(d, 'cgroup.procs'));
      } catch {
        /* a hierarchy we may not write: the process stays where it is there */
      }
    }
    return procs;
  };
}

/** Whether the rules give every device (a privileged container): no filter to install. */
const allDevices = (rules: DeviceRule[]) => rules.some((r) => r.type === 'a' && r.major < 0 && r.minor < 0 && r.access === 'rwm');

function none(detail: string): Cgroups {
  // Without cgroups no limit was applied at the start either: a resize has nothing to change.
  return { mode: 'none', detail: `limits not applied: ${detail}`, create: () => ({ procs: [] }), procs: () => [], helpers: () => [], update: () => undefined, oomKilled: () => false, usage: () => undefined, processCount: () => undefined, remove: () => undefined };
}
