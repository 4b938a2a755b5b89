// CPU and memory limits through cgroups, where the host lets us write them (v1 or v2).
import { existsSync, mkdirSync, readFileSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureCgroupPath, sharesToWeight } from '../cm/cgroup-manager.js';
import { v1DeviceRule, type DeviceRule } from './devices.js';
import { mounts } from './procfs.js';
import { readCgroupV1, readCgroupV2, type UsageSample } from './stats.js';

export interface CgroupLimits {
  cpuShares?: number;
  cpuQuotaUs?: number;
  cpuPeriodUs?: number;
  memoryBytes?: number;
  /** v1: memory+swap (the kubelet's NoSwap sends the memory limit). */
  memorySwapBytes?: number;
  /** v2: files of the container's cgroup written as given (memory.oom.group, memory.swap.max). */
  unified?: Record<string, string>;
}

/** A container's cgroup: its ID, under its sandbox's cgroup_parent (a cgroupfs path) or the runtime's own. */
export interface CgroupAt {
  id: string;
  parent?: string;
}

/** Where a container record's cgroups are. */
export const cgroupAt = (c: { id: string; cgroupParent?: string }): CgroupAt => ({ id: c.id, parent: c.cgroupParent });

/** A cgroup_parent's components; throws for one that is not an absolute path inside the hierarchy. */
export function cgroupParentParts(parent: string): string[] {
  const parts = parent.split('/').filter(Boolean);
  if (!parent.startsWith('/') || parts.some((p) => p === '..' || p === '.')) throw new Error(`cgroup_parent ${JSON.stringify(parent)} must be an absolute cgroupfs path (/a/b)`);
  return parts;
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
  create(at: CgroupAt, limits: CgroupLimits, devices: DeviceRule[]): CgroupPlacement;
  /** The cgroup.procs files of a container's cgroups that exist: what a command exec'd in it joins. */
  procs(at: CgroupAt): string[];
  /** The cgroup.procs files for the runtime's helpers that outlive it (a pod's PID namespace holder). */
  helpers(): string[];
  /** Sets a running container's limits anew (a resize), unset ones lifted; throws what the kernel refused. */
  update(at: CgroupAt, limits: CgroupLimits): void;
  /** Whether the cgroup recorded an OOM kill. */
  oomKilled(at: CgroupAt): boolean;
  /** CPU and memory used by the container's cgroups, if it has them. */
  usage(at: CgroupAt): UsageSample | undefined;
  /** How many processes the container's cgroup holds. */
  processCount(at: CgroupAt): number | undefined;
  remove(at: CgroupAt): void;
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


function countProcs(path: string): number | undefined {
  try {
    return readFileSync(path, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return undefined;
  }
}

/** A unified file a container may be given: a controller's file name, never a path. */
const UNIFIED_KEY = /^[a-z]+\.[a-z0-9_.]+$/;

export function detectCgroups(): Cgroups {
  const v2 = existsSync(join(ROOT, 'cgroup.controllers'));
  const v1 = existsSync(join(ROOT, 'memory', 'memory.limit_in_bytes')) && existsSync(join(ROOT, 'cpu', 'cpu.shares'));
  if (v2) {
    const dir = join(ROOT, PARENT);
    try {
      mkdirSync(dir, { recursive: true });
      // pids too, as on the kubelet's v2 nodes, so a container's pids.max exists (and counts).
      const enable = (d: string) => {
        if (!tryWrite(join(d, 'cgroup.subtree_control'), '+cpu +memory +pids')) tryWrite(join(d, 'cgroup.subtree_control'), '+cpu +memory');
      };
      for (const d of [ROOT, dir]) enable(d);
      // The container's cgroup: under its pod's cgroup (controllers enabled on the way down to it), or the runtime's.
      const base = (at: CgroupAt) => (at.parent ? join(ROOT, ...cgroupParentParts(at.parent)) : dir);
      const own = (at: CgroupAt) => join(base(at), at.id);
      return {
        mode: 'v2',
        detail: 'cgroup v2',
        create(at, l, devices) {
          if (at.parent) {
            // Down from the root, each level made and its controllers enabled for the next.
            let d = ROOT;
            enable(d);
            for (const p of cgroupParentParts(at.parent)) enable((d = ensureCgroupPath(d, [p])));
          }
          const d = own(at);
          mkdirSync(d, { recursive: true });
          if (l.memoryBytes) tryWrite(join(d, 'memory.max'), String(l.memoryBytes));
          if (l.cpuQuotaUs && l.cpuPeriodUs) tryWrite(join(d, 'cpu.max'), `${l.cpuQuotaUs} ${l.cpuPeriodUs}`);
          if (l.cpuShares) tryWrite(join(d, 'cpu.weight'), String(sharesToWeight(l.cpuShares)));
          // As runc: a unified setting the kernel refuses fails the start (a file that is not there is not a setting).
          for (const [k, v] of Object.entries(l.unified ?? {})) {
            if (!UNIFIED_KEY.test(k)) throw new Error(`unified resource ${JSON.stringify(k)} is not a cgroup file name`);
            if (existsSync(join(d, k))) mustWrite(join(d, k), v);
          }
          return { procs: [join(d, 'cgroup.procs')], deviceCgroup: allDevices(devices) ? undefined : d };
        },
        procs: (at) => [join(own(at), 'cgroup.procs')].filter((f) => existsSync(f)),
        helpers() {
          // A leaf: a cgroup with controllers enabled for its children may hold no process itself.
          const d = join(dir, 'helpers');
          mkdirSync(d, { recursive: true });
          return [join(d, 'cgroup.procs')];
        },
        update(at, l) {
          const d = own(at);
          mustWrite(join(d, 'memory.max'), l.memoryBytes ? String(l.memoryBytes) : 'max');
          mustWrite(join(d, 'cpu.max'), `${l.cpuQuotaUs ? l.cpuQuotaUs : 'max'} ${l.cpuPeriodUs ?? 100000}`);
          if (l.cpuShares) mustWrite(join(d, 'cpu.weight'), String(sharesToWeight(l.cpuShares)));
        },
        oomKilled(at) {
          try {
            return /^oom_kill [1-9]/m.test(readFileSync(join(own(at), 'memory.events'), 'utf8'));
          } catch {
            return false;
          }
        },
        usage: (at) => readCgroupV2(own(at)),
        processCount: (at) => countProcs(join(own(at), 'cgroup.procs')),
        remove(at) {
          try {
            rmdirSync(own(at));
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
    const memRoot = join(ROOT, 'memory');
    const cpuRoot = join(ROOT, 'cpu');
    // CPU accounting: cpuacct is often mounted with cpu (cpu,cpuacct); where it is a hierarchy of
    // its own, the container joins a cgroup there as well.
    const acctRoot = existsSync(join(ROOT, 'cpu', 'cpuacct.usage')) ? join(ROOT, 'cpu') : existsSync(join(ROOT, 'cpuacct', 'cpuacct.usage')) ? join(ROOT, 'cpuacct') : undefined;
    // The cpuacct hierarchy a container joins beside its cpu one: only where it is a hierarchy of its own.
    const ownAcctRoot = acctRoot && realpathSync(acctRoot) !== realpathSync(cpuRoot) ? acctRoot : undefined;
    const devicesRoot = existsSync(join(ROOT, 'devices', 'devices.allow')) ? join(ROOT, 'devices') : undefined;
    // The hierarchies a container gets a cgroup of its own in, with limits or rules.
    const limitedRoots = [memRoot, cpuRoot, ...(ownAcctRoot ? [ownAcctRoot] : []), ...(devicesRoot ? [devicesRoot] : [])];
    const baseParts = (at: CgroupAt) => (at.parent ? cgroupParentParts(at.parent) : [PARENT]);
    const ownDirs = (at: CgroupAt) => limitedRoots.map((h) => join(h, ...baseParts(at), at.id));
    const [memOf, cpuOf] = [(at: CgroupAt) => join(memRoot, ...baseParts(at), at.id), (at: CgroupAt) => join(cpuRoot, ...baseParts(at), at.id)];
    const acctOf = (at: CgroupAt) => (acctRoot ? join(acctRoot, ...baseParts(at), at.id) : undefined);
    try {
      for (const h of limitedRoots) mkdirSync(join(h, PARENT), { recursive: true });
      const others = otherHierarchies(limitedRoots.map((d) => realpathSync(d)));
      return {
        mode: 'v1',
        detail: `cgroup v1 (memory, cpu${acctRoot ? ', cpuacct' : ''})`,
        create(at, l, devices) {
          if (!devicesRoot) throw new Error("the devices cgroup controller is not mounted: the container's devices cannot be restricted");
          const parts = baseParts(at);
          const dirs = limitedRoots.map((h) => ensureCgroupPath(h, [...parts, at.id]));
          const dv = join(devicesRoot, ...parts, at.id);
          if (!allDevices(devices)) {
            mustWrite(join(dv, 'devices.deny'), 'a');
            for (const r of devices) mustWrite(join(dv, 'devices.allow'), v1DeviceRule(r));
          }
          const [m, c] = [memOf(at), cpuOf(at)];
          if (l.memoryBytes) tryWrite(join(m, 'memory.limit_in_bytes'), String(l.memoryBytes));
          // After the memory limit: memory+swap may not be below it.
          if (l.memorySwapBytes) tryWrite(join(m, 'memory.memsw.limit_in_bytes'), String(l.memorySwapBytes));
          if (l.cpuShares) tryWrite(join(c, 'cpu.shares'), String(l.cpuShares));
          if (l.cpuQuotaUs && l.cpuPeriodUs) {
            tryWrite(join(c, 'cpu.cfs_period_us'), String(l.cpuPeriodUs));
            tryWrite(join(c, 'cpu.cfs_quota_us'), String(l.cpuQuotaUs));
          }
          return { procs: [...dirs.map((d) => join(d, 'cgroup.procs')), ...others(parts)], views: dirs };
        },
        procs: (at) => [...ownDirs(at).map((d) => join(d, 'cgroup.procs')), ...others(baseParts(at))].filter((f) => existsSync(f)),
        update(at, l) {
          const [m, c] = [memOf(at), cpuOf(at)];
          // Lifting a limit: memory+swap first (it may not be below memory); lowering: memory first.
          const swapFirst = !l.memoryBytes;
          if (swapFirst && existsSync(join(m, 'memory.memsw.limit_in_bytes'))) mustWrite(join(m, 'memory.memsw.limit_in_bytes'), '-1');
          mustWrite(join(m, 'memory.limit_in_bytes'), l.memoryBytes ? String(l.memoryBytes) : '-1');
          if (!swapFirst && existsSync(join(m, 'memory.memsw.limit_in_bytes'))) mustWrite(join(m, 'memory.memsw.limit_in_bytes'), String(l.memorySwapBytes ?? -1));
          if (l.cpuShares) mustWrite(join(c, 'cpu.shares'), String(l.cpuShares));
          if (l.cpuPeriodUs) mustWrite(join(c, 'cpu.cfs_period_us'), String(l.cpuPeriodUs));
          mustWrite(join(c, 'cpu.cfs_quota_us'), l.cpuQuotaUs ? String(l.cpuQuotaUs) : '-1');
        },
        helpers: () => [...limitedRoots.map((h) => join(h, PARENT, 'cgroup.procs')), ...others([PARENT])],
        usage: (at) => readCgroupV1(memOf(at), acctOf(at)),
        processCount: (at) => countProcs(join(memOf(at), 'cgroup.procs')),
        oomKilled(at) {
          try {
            return /^oom_kill [1-9]/m.test(readFileSync(join(memOf(at), 'memory.oom_control'), 'utf8'));
          } catch {
            return false;
          }
        },
        remove(at) {
          for (const d of ownDirs(at)) {
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
 * The cgroup at `parts` (the container's pod cgroup, or the runtime's own) in every cgroup v1
 * hierarchy but the limited ones, and in the unified one of a hybrid host: made when first asked
 * for, and again if it was removed.
 */
function otherHierarchies(limited: string[]): (parts: string[]) => string[] {
  const hierarchies = mounts()
    .filter((m) => (m.fstype === 'cgroup' || m.fstype === 'cgroup2') && m.point.startsWith(`${ROOT}/`) && !limited.includes(m.point))
    .map((m) => m.point);
  return (parts) => {
    const procs: string[] = [];
    for (const h of hierarchies) {
      try {
        procs.push(join(ensureCgroupPath(h, parts), 'cgroup.procs'));
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
