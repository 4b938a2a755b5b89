// The node's cgroups written directly (the kubelet's cgroupfs driver), on cgroup v1 (a directory
// in every mounted hierarchy) or v2 (one tree, controllers enabled down to each cgroup).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { mounts } from '../procruntime/procfs.js';
import { readCgroupV1, readCgroupV2 } from '../procruntime/stats.js';
import type { CgroupName, ResourceConfig } from './resource-config.js';

export interface CgroupManager {
  readonly version: 'v1' | 'v2';
  exists(name: CgroupName): boolean;
  /** Why the cgroup cannot be used as one the kubelet enforces limits on (missing paths or controllers), in its words; undefined when it can. */
  validate(name: CgroupName): string | undefined;
  /** Makes the cgroup (and its parents) and applies the config; throws what the kernel refused. */
  create(name: CgroupName, config: ResourceConfig): void;
  update(name: CgroupName, config: ResourceConfig): void;
  /** Removes the cgroup and the empty cgroups under it; throws when one still holds processes. */
  destroy(name: CgroupName): void;
  /** The processes in the cgroup and under it. */
  pids(name: CgroupName): number[];
  /** The names of the cgroup's children. */
  children(name: CgroupName): string[];
  /** Its memory working set (usage less inactive file pages, as cAdvisor counts it), if it can be read. */
  memoryWorkingSet(name: CgroupName): number | undefined;
}

export class CgroupError extends Error {
  override name = 'CgroupError';
}

export const CGROUP_ROOT = '/sys/fs/cgroup';

/** Go's %q of a []string: ["a" "b"]. */
const goStrings = (name: CgroupName) => `[${name.map((n) => JSON.stringify(n)).join(' ')}]`;

/** cpu.shares to cpu.weight as runc converts them: the kubelet's 100m (102 shares) is weight 4. */
export const sharesToWeight = (shares: number) => Math.max(1, Math.min(10000, 1 + Math.floor(((Math.max(2, shares) - 2) * 9999) / 262142)));

function write(path: string, value: string): void {
  try {
    writeFileSync(path, value);
  } catch (err) {
    throw new CgroupError(`failed to write "${value}" to "${path}": ${(err as Error).message}`);
  }
}

function readPids(dir: string, into: Set<number>): void {
  let entries: string[];
  try {
    for (const l of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (l) into.add(Number(l));
    entries = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return;
  }
  for (const e of entries) readPids(join(dir, e), into);
}

/**
 * The cgroup at `parts` under hierarchy `h`, each level made if missing: a new cpuset cgroup has no
 * cpus or memory nodes (no process may join it) until given its parent's. Returns its directory.
 */
export function ensureCgroupPath(h: string, parts: readonly string[]): string {
  let d = h;
  for (const p of parts) {
    const next = join(d, p);
    if (!existsSync(next)) {
      try {
        mkdirSync(next);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new CgroupError(`failed to create cgroup "${next}": ${(err as Error).message}`);
      }
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        if (existsSync(join(next, f)) && !readFileSync(join(next, f), 'utf8').trim()) write(join(next, f), readFileSync(join(d, f), 'utf8').trim());
      }
    }
    d = next;
  }
  return d;
}

/** rmdir bottom-up: a cgroup directory goes only once its children have. */
function removeTree(dir: string): void {
  let entries: string[];
  try {
    entries = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new CgroupError(`failed to read cgroup "${dir}": ${(err as Error).message}`);
  }
  for (const e of entries) removeTree(join(dir, e));
  try {
    rmdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new CgroupError(`failed to remove cgroup "${dir}": ${(err as Error).message}`);
  }
}

function childNames(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return [];
  }
}

/** cgroup v1: one directory per mounted hierarchy (cpu, memory, pids, cpuset, ... name=systemd, and a hybrid host's unified one). */
export class V1CgroupManager implements CgroupManager {
  readonly version = 'v1';
  constructor(private readonly hierarchies: string[]) {}

  private dirs(name: CgroupName): string[] {
    return this.hierarchies.map((h) => join(h, ...name));
  }

  exists(name: CgroupName): boolean {
    return this.dirs(name).every((d) => existsSync(d));
  }

  validate(name: CgroupName): string | undefined {
    // The controllers the kubelet looks at; a hierarchy of others (net_cls, blkio ...) may lack it.
    const wanted = ['cpu', 'cpuacct', 'cpuset', 'memory', 'systemd', 'pids', 'hugetlb'];
    const missing = this.hierarchies.filter((h) => basename(h).split(',').some((c) => wanted.includes(c.replace(/^name=/, '')))).map((h) => join(h, ...name)).filter((d) => !existsSync(d));
    return missing.length ? `cgroup ${goStrings(name)} has some missing paths: ${missing.join(', ')}` : undefined;
  }

  create(name: CgroupName, config: ResourceConfig): void {
    for (const h of this.hierarchies) ensureCgroupPath(h, name);
    this.update(name, config);
  }

  update(name: CgroupName, config: ResourceConfig): void {
    const at = (file: string) => this.dirs(name).map((d) => join(d, file)).find((f) => existsSync(f));
    const set = (file: string, value: number | string | undefined) => {
      if (value === undefined) return;
      const f = at(file);
      if (f) write(f, String(value));
    };
    set('cpu.shares', config.cpuShares);
    // The period first: a quota is checked against the period in place.
    set('cpu.cfs_period_us', config.cpuPeriod);
    set('cpu.cfs_quota_us', config.cpuQuota === undefined ? undefined : config.cpuQuota <= 0 ? -1 : config.cpuQuota);
    set('memory.limit_in_bytes', config.memory === undefined ? undefined : config.memory <= 0 ? -1 : config.memory);
    set('pids.max', config.pidsLimit === undefined ? undefined : config.pidsLimit <= 0 ? 'max' : config.pidsLimit);
  }

  destroy(name: CgroupName): void {
    for (const d of this.dirs(name)) removeTree(d);
  }

  pids(name: CgroupName): number[] {
    const all = new Set<number>();
    for (const d of this.dirs(name)) readPids(d, all);
    return [...all];
  }

  children(name: CgroupName): string[] {
    const memory = this.hierarchies.find((h) => existsSync(join(h, 'memory.limit_in_bytes'))) ?? this.hierarchies[0];
    return memory ? childNames(join(memory, ...name)) : [];
  }

  memoryWorkingSet(name: CgroupName): number | undefined {
    const memory = this.hierarchies.find((h) => existsSync(join(h, 'memory.limit_in_bytes')));
    return memory ? readCgroupV1(join(memory, ...name), undefined)?.workingSetBytes : undefined;
  }
}

/** cgroup v2: one tree; a cgroup's controllers are those its parent enables for its children. */
export class V2CgroupManager implements CgroupManager {
  readonly version = 'v2';
  constructor(private readonly root: string) {}

  exists(name: CgroupName): boolean {
    return existsSync(join(this.root, ...name));
  }

  validate(name: CgroupName): string | undefined {
    const read = (dir: string) => readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/).filter(Boolean);
    let enabled: string[];
    try {
      enabled = read(join(this.root, ...name));
    } catch (err) {
      return `could not read controllers for cgroup ${goStrings(name)}: ${(err as Error).message}`;
    }
    // Those of the kubelet's the machine has at all.
    const supported = ['cpu', 'cpuset', 'memory', 'hugetlb', 'pids'].filter((c) => read(this.root).includes(c));
    const missing = supported.filter((c) => !enabled.includes(c)).sort();
    return missing.length ? `cgroup ${goStrings(name)} has some missing controllers: ${missing.join(', ')}` : undefined;
  }

  /** Enables, in the cgroup's subtree_control, every controller it has (as libcontainer does for each parent). */
  private enableChildren(dir: string): void {
    let available: string[];
    try {
      available = readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/).filter(Boolean);
    } catch {
      return;
    }
    const enabled = new Set(readFileSync(join(dir, 'cgroup.subtree_control'), 'utf8').trim().split(/\s+/).filter(Boolean));
    const wanted = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids'].filter((c) => available.includes(c) && !enabled.has(c));
    if (wanted.length) write(join(dir, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
  }

  create(name: CgroupName, config: ResourceConfig): void {
    for (let i = 0; i < name.length; i++) {
      const parent = join(this.root, ...name.slice(0, i));
      this.enableChildren(parent);
      const d = join(parent, name[i]!);
      try {
        mkdirSync(d);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new CgroupError(`failed to create cgroup "${d}": ${(err as Error).message}`);
      }
    }
    // Its children (the pod's containers) get the controllers too.
    this.enableChildren(join(this.root, ...name));
    this.update(name, config);
  }

  update(name: CgroupName, config: ResourceConfig): void {
    const d = join(this.root, ...name);
    const set = (file: string, value: number | string | undefined) => {
      if (value !== undefined && existsSync(join(d, file))) write(join(d, file), String(value));
    };
    set('cpu.weight', config.cpuShares === undefined ? undefined : sharesToWeight(config.cpuShares));
    if (config.cpuQuota !== undefined || config.cpuPeriod !== undefined) {
      const quota = config.cpuQuota === undefined || config.cpuQuota <= 0 ? 'max' : String(config.cpuQuota);
      set('cpu.max', `${quota} ${config.cpuPeriod ?? 100000}`);
    }
    set('memory.max', config.memory === undefined ? undefined : config.memory <= 0 ? 'max' : config.memory);
    set('pids.max', config.pidsLimit === undefined ? undefined : config.pidsLimit <= 0 ? 'max' : config.pidsLimit);
  }

  destroy(name: CgroupName): void {
    removeTree(join(this.root, ...name));
  }

  pids(name: CgroupName): number[] {
    const all = new Set<number>();
    readPids(join(this.root, ...name), all);
    return [...all];
  }

  children(name: CgroupName): string[] {
    return childNames(join(this.root, ...name));
  }

  memoryWorkingSet(name: CgroupName): number | undefined {
    return readCgroupV2(join(this.root, ...name))?.workingSetBytes;
  }
}

/** The host's cgroups: v2 when the unified hierarchy is mounted at the root, else every v1 hierarchy. */
export function detectCgroupManager(root = CGROUP_ROOT): CgroupManager | undefined {
  if (existsSync(join(root, 'cgroup.controllers'))) return new V2CgroupManager(root);
  // A hybrid host's unified hierarchy (cgroup2 at /sys/fs/cgroup/unified) too: runc puts containers
  // there as well, so the pod's cgroup is made and removed there as in the others.
  const hierarchies = mounts()
    .filter((m) => (m.fstype === 'cgroup' || m.fstype === 'cgroup2') && m.point.startsWith(`${root}/`))
    .map((m) => m.point);
  return hierarchies.length ? new V1CgroupManager([...new Set(hierarchies)]) : undefined;
}
