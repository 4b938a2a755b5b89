// Resource usage of the process runtime's containers, for CRI's stats calls: read from the
// container's cgroups where it has them, else from its init process in /proc.
import { readFileSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** One reading of a container's usage. Fields the host cannot tell are left out. */
export interface UsageSample {
  /** Cumulative CPU time, in nanoseconds. */
  cpuNs?: bigint;
  memoryUsageBytes?: number;
  /** Usage less the inactive file cache: what the kubelet calls the working set. */
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  /** Limit minus working set, where there is a limit. */
  availableBytes?: number;
}

/** Parses `key value` lines (memory.stat, cpu.stat) into numbers. */
export function parseFlatKeyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && /^\d+$/.test(v)) out.set(k, Number(v));
  }
  return out;
}

/** The kubelet's working set: usage minus inactive file pages, never below zero. */
export function workingSet(usage: number, inactiveFile: number | undefined): number {
  return Math.max(0, usage - (inactiveFile ?? 0));
}

/** A limit that is "no limit" (v1's page-rounded max int64, v2's "max") reads as undefined. */
export function parseLimit(text: string): number | undefined {
  const t = text.trim();
  if (t === 'max' || !/^\d+$/.test(t)) return undefined;
  const n = Number(t);
  return n >= 2 ** 62 ? undefined : n;
}

/** CPU use between two readings, in nano-cores (1e9 = one core busy), as CRI's usage_nano_cores. */
export function nanoCores(prev: { cpuNs: bigint; atNs: bigint } | undefined, cur: { cpuNs: bigint; atNs: bigint }): bigint | undefined {
  if (!prev || cur.atNs <= prev.atNs || cur.cpuNs < prev.cpuNs) return undefined;
  return ((cur.cpuNs - prev.cpuNs) * 1_000_000_000n) / (cur.atNs - prev.atNs);
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The memory files of one cgroup version: where usage and limit are, and memory.stat's keys. */
interface MemoryLayout {
  usage: string;
  limit: string;
  inactiveFile: string;
  rss: string;
  pgfault: string;
  pgmajfault: string;
}

const V2: MemoryLayout = { usage: 'memory.current', limit: 'memory.max', inactiveFile: 'inactive_file', rss: 'anon', pgfault: 'pgfault', pgmajfault: 'pgmajfault' };
const V1: MemoryLayout = {
  usage: 'memory.usage_in_bytes',
  limit: 'memory.limit_in_bytes',
  inactiveFile: 'total_inactive_file',
  rss: 'total_rss',
  pgfault: 'total_pgfault',
  pgmajfault: 'total_pgmajfault',
};

/** Memory figures into `s` from a cgroup directory; false when it has none. */
function readMemory(dir: string, l: MemoryLayout, s: UsageSample): boolean {
  const usage = read(join(dir, l.usage));
  if (usage === undefined) return false;
  const stat = parseFlatKeyed(read(join(dir, 'memory.stat')) ?? '');
  s.memoryUsageBytes = Number(usage.trim());
  s.workingSetBytes = workingSet(s.memoryUsageBytes, stat.get(l.inactiveFile));
  s.rssBytes = stat.get(l.rss);
  s.pageFaults = stat.get(l.pgfault);
  s.majorPageFaults = stat.get(l.pgmajfault);
  const limit = parseLimit(read(join(dir, l.limit)) ?? '');
  if (limit !== undefined) s.availableBytes = Math.max(0, limit - s.workingSetBytes);
  return true;
}

/** Usage from cgroup v2 files in `dir`. */
export function readCgroupV2(dir: string): UsageSample | undefined {
  const s: UsageSample = {};
  const usec = parseFlatKeyed(read(join(dir, 'cpu.stat')) ?? '').get('usage_usec');
  if (usec !== undefined) s.cpuNs = BigInt(usec) * 1000n;
  return readMemory(dir, V2, s) || s.cpuNs !== undefined ? s : undefined;
}

/** Usage from cgroup v1 memory and cpuacct directories. */
export function readCgroupV1(memoryDir: string, cpuacctDir: string | undefined): UsageSample | undefined {
  const s: UsageSample = {};
  const cpu = cpuacctDir ? read(join(cpuacctDir, 'cpuacct.usage'))?.trim() : undefined;
  if (cpu !== undefined && /^\d+$/.test(cpu)) s.cpuNs = BigInt(cpu);
  return readMemory(memoryDir, V1, s) || s.cpuNs !== undefined ? s : undefined;
}

/** Without cgroups: the init's own CPU time (children it reaped included) and resident set. */
export function readProc(pid: number, clockTicksPerSecond = 100, pageSize = 4096): UsageSample | undefined {
  const stat = read(`/proc/${pid}/stat`);
  const statm = read(`/proc/${pid}/statm`);
  if (!stat) return undefined;
  // Fields after the command name: utime is the 14th field of the line, so 12th after ") ".
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(f[i] ?? 0), 0);
  const rss = statm ? Number(statm.split(' ')[1] ?? 0) * pageSize : undefined;
  return {
    cpuNs: (BigInt(ticks) * 1_000_000_000n) / BigInt(clockTicksPerSecond),
    memoryUsageBytes: rss,
    workingSetBytes: rss,
    rssBytes: rss,
    pageFaults: Number(f[7] ?? 0) + Number(f[8] ?? 0),
    majorPageFaults: Number(f[9] ?? 0) + Number(f[10] ?? 0),
  };
}

export interface DiskUsage {
  bytes: number;
  inodes: number;
}

/**
 * Bytes and inodes used under `dir` (a container's writable layer), not crossing into mounts.
 * Asynchronous: a private copy of an image can hold thousands of files, and the runtime's
 * other calls must not wait behind the walk.
 */
export async function diskUsage(dir: string): Promise<DiskUsage> {
  let bytes = 0;
  let inodes = 0;
  let dev: number | undefined;
  const walk = async (p: string): Promise<void> => {
    let st;
    try {
      st = await lstat(p);
    } catch {
      return;
    }
    dev ??= st.dev;
    if (st.dev !== dev) return;
    inodes++;
    bytes += st.blocks * 512;
    if (!st.isDirectory()) return;
    let names: string[] = [];
    try {
      names = await readdir(p);
    } catch {
      return;
    }
    for (const n of names) await walk(join(p, n));
  };
  await walk(dir);
  return { bytes, inodes };
}

/**
 * Writable-layer usage, measured at most once per `maxAgeMs` for each container, as containerd
 * collects its snapshot usage on a period (stats_collect_period, 10 s) rather than on every call.
 * Callers that ask while a walk is under way share it.
 */
export class DiskUsageCache {
  private readonly entries = new Map<string, { at: number; value: Promise<DiskUsage> }>();

  constructor(
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
    private readonly measure: (dir: string) => Promise<DiskUsage> = diskUsage,
  ) {}

  get(key: string, dir: string): Promise<DiskUsage> {
    const e = this.entries.get(key);
    if (e && this.now() - e.at < this.maxAgeMs) return e.value;
    const value = this.measure(dir);
    this.entries.set(key, { at: this.now(), value });
    return value;
  }

  forget(key: string): void {
    this.entries.delete(key);
  }
}
