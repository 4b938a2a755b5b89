// /stats/summary and /metrics/resource: the Summary API (k8s.io/kubelet/pkg/apis/stats/v1alpha1)
// built as the kubelet's CRI stats provider builds it: node figures from /proc and the node's
// filesystems, pods and containers from CRI ListContainerStats (CPU, memory, writable layer),
// container logs and pod volumes measured on disk, the image filesystem from CRI ImageFsInfo. The
// resource metrics are the same figures in the names metrics-server reads.
import { readFileSync, statfsSync } from 'node:fs';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, ContainerStats, ImageFsInfoResponse } from '../cri/types.js';
import { processCount } from '../kube/host.js';

const CLK_TCK = 100;

export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface CpuStats {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface InterfaceStats {
  name: string;
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
}

export interface NetworkStats extends Partial<InterfaceStats> {
  time: string;
  interfaces: InterfaceStats[];
}

/** /proc/<pid>/net/dev: each interface but loopback; the first (eth0 when there is one) is the default. */
export function parseNetDev(text: string, time: string): NetworkStats {
  const interfaces: InterfaceStats[] = [];
  for (const line of text.split('\n').slice(2)) {
    const m = /^\s*([^:]+):\s*(.*)$/.exec(line);
    if (!m || m[1] === 'lo') continue;
    const f = m[2]!.trim().split(/\s+/).map(Number);
    interfaces.push({ name: m[1]!, rxBytes: f[0]!, rxErrors: f[2]!, txBytes: f[8]!, txErrors: f[10]! });
  }
  const main = interfaces.find((i) => i.name === 'eth0') ?? interfaces[0];
  return { time, ...(main ?? {}), interfaces };
}

async function networkOf(pid: number | 'host' | undefined, time: string): Promise<NetworkStats | undefined> {
  if (pid === undefined) return undefined;
  try {
    return parseNetDev(await readFile(pid === 'host' ? '/proc/net/dev' : `/proc/${pid}/net/dev`, 'utf8'), time);
  } catch {
    return undefined;
  }
}

export interface ContainerSummary {
  name: string;
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
}

export interface PodSummary {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerSummary[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: Array<FsStats & { name: string }>;
  'ephemeral-storage'?: FsStats;
  process_stats?: { process_count?: number };
}

export interface Summary {
  node: {
    nodeName: string;
    startTime: string;
    cpu: CpuStats;
    memory: MemoryStats;
    network?: NetworkStats;
    fs: FsStats;
    runtime?: { imageFs?: FsStats };
    rlimit: { time: string; maxpid?: number; curproc?: number };
  };
  pods: PodSummary[];
}

export interface StatsSources {
  nodeName: string;
  /** The node filesystem: where pod logs and the agent's pod directories are. */
  podLogRoot: string;
  rootDir: string;
  listContainerStats(): Promise<ContainerStats[]>;
  listContainers(): Promise<Container[]>;
  imageFsInfo(): Promise<ImageFsInfoResponse>;
  /** A process in the pod's network namespace (its sandbox's); 'host' when the pod has the host's; undefined when unknown. */
  sandboxPid(uid: string): Promise<number | 'host' | undefined>;
  /** The processes of a pod (its cgroup's); undefined when not known. */
  podProcessCount?(uid: string): number | undefined;
  /** Pods this agent runs, for their start time (the API's status.startTime). */
  podStartTime(uid: string): string | undefined;
  now(): number;
}

/** Capacity, availability and inodes of the filesystem holding `path` (statfs); only `time` when it cannot be read. */
export function fsOf(path: string, time: string): FsStats {
  try {
    const s = statfsSync(path);
    return { time, availableBytes: s.bavail * s.bsize, capacityBytes: s.blocks * s.bsize, usedBytes: (s.blocks - s.bfree) * s.bsize, inodesFree: s.ffree, inodes: s.files, inodesUsed: s.files - s.ffree };
  } catch {
    return { time };
  }
}

/** Bytes and inodes under a directory (links not followed; bounded so that no walk runs away). */
export async function diskUsage(dir: string, limit = 100_000): Promise<{ bytes: number; inodes: number }> {
  let bytes = 0;
  let inodes = 0;
  const stack = [dir];
  while (stack.length && inodes < limit) {
    const d = stack.pop()!;
    let entries: string[];
    try {
      entries = await readdir(d);
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = join(d, e);
      try {
        const st = await lstat(p);
        inodes++;
        bytes += st.blocks * 512;
        if (st.isDirectory()) stack.push(p);
      } catch {
        /* gone while walking */
      }
    }
  }
  return { bytes, inodes };
}

const num = (v: { value?: unknown } | null | undefined) => (v?.value === undefined || v.value === null ? undefined : Number(String(v.value)));
const iso = (ns: unknown) => new Date(Math.floor(Number(String(ns ?? 0)) / 1e6) || Date.now()).toISOString().replace(/\.\d+Z$/, 'Z');

function sum<T extends object>(items: Array<T | undefined>, keys: Array<keyof T>, time: string): T | undefined {
  const present = items.filter((x): x is T => x !== undefined);
  if (present.length === 0) return undefined;
  const out: Record<string, unknown> = { time };
  for (const k of keys) {
    const vals = present.map((x) => x[k] as unknown as number | undefined).filter((v): v is number => typeof v === 'number');
    if (vals.length) out[k as string] = vals.reduce((a, b) => a + b, 0);
  }
  return out as T;
}

/** The node's CPU time so far (all but idle and iowait), and the last reading for a rate. */
export class NodeCpu {
  private last?: { ns: number; at: number };

  read(nowMs: number, statText = readFileSync('/proc/stat', 'utf8')): CpuStats {
    const f = /^cpu\s+(.*)$/m.exec(statText)?.[1]?.trim().split(/\s+/).map(Number) ?? [];
    const busy = f.reduce((a, b, i) => (i === 3 || i === 4 || i >= 8 ? a : a + b), 0);
    const ns = (busy * 1e9) / CLK_TCK;
    const time = new Date(nowMs).toISOString().replace(/\.\d+Z$/, 'Z');
    let usageNanoCores: number | undefined;
    if (this.last && nowMs > this.last.at) usageNanoCores = Math.round((ns - this.last.ns) / ((nowMs - this.last.at) / 1000));
    this.last = { ns, at: nowMs };
    return { time, usageCoreNanoSeconds: ns, usageNanoCores };
  }
}

export function nodeMemory(time: string): MemoryStats {
  let text = '';
  let vm = '';
  try {
    text = readFileSync('/proc/meminfo', 'utf8');
    vm = readFileSync('/proc/vmstat', 'utf8');
  } catch {
    return { time };
  }
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  const v = (k: string) => Number(new RegExp(`^${k} (\\d+)$`, 'm').exec(vm)?.[1] ?? 0);
  const total = kb('MemTotal');
  const usage = total - kb('MemFree');
  // As cAdvisor: the working set is usage less inactive file pages.
  const workingSet = Math.max(0, usage - kb('Inactive\\(file\\)'));
  return { time, availableBytes: Math.max(0, total - workingSet), usageBytes: usage, workingSetBytes: workingSet, rssBytes: kb('AnonPages'), pageFaults: v('pgfault'), majorPageFaults: v('pgmajfault') };
}

function bootTime(): string {
  try {
    const btime = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]);
    return new Date(btime * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  } catch {
    return new Date(0).toISOString();
  }
}

export async function buildSummary(src: StatsSources, cpu: NodeCpu): Promise<Summary> {
  const now = src.now();
  const time = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
  const [stats, containers, imageFs] = await Promise.all([src.listContainerStats(), src.listContainers(), src.imageFsInfo().catch(() => undefined)]);
  const created = new Map(containers.map((c) => [c.id, c]));
  const pods = new Map<string, PodSummary>();
  for (const s of stats) {
    const labels = s.attributes?.labels ?? {};
    const uid = labels['io.kubernetes.pod.uid'];
    const name = labels['io.kubernetes.container.name'] ?? s.attributes?.metadata?.name;
    if (!uid || !name || name === 'POD') continue;
    let pod = pods.get(uid);
    if (!pod) {
      pod = { podRef: { name: labels['io.kubernetes.pod.name'] ?? '', namespace: labels['io.kubernetes.pod.namespace'] ?? '', uid }, startTime: src.podStartTime(uid) ?? time, containers: [] };
      pods.set(uid, pod);
    }
    const c = created.get(s.attributes?.id ?? '');
    // One entry per container name: the newest instance.
    const startTime = iso(c?.created_at);
    const existing = pod.containers.findIndex((x) => x.name === name);
    if (existing >= 0 && pod.containers[existing]!.startTime > startTime) continue;
    const logDir = join(src.podLogRoot, `${pod.podRef.namespace}_${pod.podRef.name}_${uid}`, name);
    const logs = await diskUsage(logDir);
    const summary: ContainerSummary = {
      name,
      startTime,
      cpu: s.cpu ? { time: iso(s.cpu.timestamp), usageNanoCores: num(s.cpu.usage_nano_cores), usageCoreNanoSeconds: num(s.cpu.usage_core_nano_seconds) } : undefined,
      memory: s.memory
        ? { time: iso(s.memory.timestamp), availableBytes: num(s.memory.available_bytes), usageBytes: num(s.memory.usage_bytes), workingSetBytes: num(s.memory.working_set_bytes), rssBytes: num(s.memory.rss_bytes), pageFaults: num(s.memory.page_faults), majorPageFaults: num(s.memory.major_page_faults) }
        : undefined,
      rootfs: s.writable_layer ? { ...fsOf(src.rootDir, iso(s.writable_layer.timestamp)), usedBytes: num(s.writable_layer.used_bytes), inodesUsed: num(s.writable_layer.inodes_used) } : undefined,
      logs: { ...fsOf(src.podLogRoot, time), usedBytes: logs.bytes, inodesUsed: logs.inodes },
    };
    if (existing >= 0) pod.containers[existing] = summary;
    else pod.containers.push(summary);
  }
  for (const pod of pods.values()) {
    pod.cpu = sum(pod.containers.map((c) => c.cpu), ['usageNanoCores', 'usageCoreNanoSeconds'], time);
    pod.memory = sum(pod.containers.map((c) => c.memory), ['usageBytes', 'workingSetBytes', 'rssBytes', 'pageFaults', 'majorPageFaults'], time);
    pod.volume = await podVolumes(src.rootDir, pod.podRef.uid, time);
    pod.network = await networkOf(await src.sandboxPid(pod.podRef.uid).catch(() => undefined), time);
    const used = pod.containers.reduce((a, c) => a + (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0), 0) + pod.volume.reduce((a, v) => a + (v.usedBytes ?? 0), 0);
    pod['ephemeral-storage'] = { ...fsOf(src.rootDir, time), usedBytes: used };
    const procs = src.podProcessCount?.(pod.podRef.uid);
    if (procs !== undefined) pod.process_stats = { process_count: procs };
  }
  const fsInfo = imageFs?.image_filesystems?.[0];
  const curproc = (await processCount()) ?? 0;
  return {
    node: {
      nodeName: src.nodeName,
      startTime: bootTime(),
      cpu: cpu.read(now),
      memory: nodeMemory(time),
      network: await networkOf('host', time),
      fs: fsOf(src.podLogRoot, time),
      runtime: fsInfo ? { imageFs: { ...fsOf(fsInfo.fs_id?.mountpoint || src.rootDir, time), usedBytes: num(fsInfo.used_bytes), inodesUsed: num(fsInfo.inodes_used) } } : undefined,
      rlimit: { time, maxpid: Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim()) || undefined, curproc },
    },
    pods: [...pods.values()],
  };
}

/** The pod's volumes as the kubelet lays them out (<rootDir>/pods/<uid>/volumes/<plugin>/<name>). */
async function podVolumes(rootDir: string, uid: string, time: string): Promise<Array<FsStats & { name: string }>> {
  const base = join(rootDir, 'pods', uid, 'volumes');
  const out: Array<FsStats & { name: string }> = [];
  let plugins: string[] = [];
  try {
    plugins = await readdir(base);
  } catch {
    return out;
  }
  for (const plugin of plugins) {
    let names: string[] = [];
    try {
      names = await readdir(join(base, plugin));
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = join(base, plugin, name);
      const du = await diskUsage(dir);
      out.push({ ...fsOf(dir, time), usedBytes: du.bytes, inodesUsed: du.inodes, name });
    }
  }
  return out;
}

/** The resource metrics (Prometheus text) metrics-server reads, from a summary. */
export function resourceMetrics(s: Summary): string {
  const ms = (t: string) => Date.parse(t);
  const lines: string[] = [];
  const help = (name: string, text: string, type = 'gauge') => lines.push(`# HELP ${name} [STABLE] ${text}`, `# TYPE ${name} ${type}`);
  const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  const containers = s.pods.flatMap((p) => p.containers.map((c) => ({ p, c })));
  help('container_cpu_usage_seconds_total', 'Cumulative cpu time consumed by the container in core-seconds', 'counter');
  for (const { p, c } of containers) if (c.cpu?.usageCoreNanoSeconds !== undefined) lines.push(`container_cpu_usage_seconds_total{container="${esc(c.name)}",namespace="${esc(p.podRef.namespace)}",pod="${esc(p.podRef.name)}"} ${c.cpu.usageCoreNanoSeconds / 1e9} ${ms(c.cpu.time)}`);
  help('container_memory_working_set_bytes', 'Current working set of the container in bytes');
  for (const { p, c } of containers) if (c.memory?.workingSetBytes !== undefined) lines.push(`container_memory_working_set_bytes{container="${esc(c.name)}",namespace="${esc(p.podRef.namespace)}",pod="${esc(p.podRef.name)}"} ${c.memory.workingSetBytes} ${ms(c.memory.time)}`);
  help('container_start_time_seconds', 'Start time of the container since unix epoch in seconds');
  for (const { p, c } of containers) lines.push(`container_start_time_seconds{container="${esc(c.name)}",namespace="${esc(p.podRef.namespace)}",pod="${esc(p.podRef.name)}"} ${ms(c.startTime) / 1000} ${ms(c.startTime)}`);
  help('node_cpu_usage_seconds_total', 'Cumulative cpu time consumed by the node in core-seconds', 'counter');
  if (s.node.cpu.usageCoreNanoSeconds !== undefined) lines.push(`node_cpu_usage_seconds_total ${s.node.cpu.usageCoreNanoSeconds / 1e9} ${ms(s.node.cpu.time)}`);
  help('node_memory_working_set_bytes', 'Current working set of the node in bytes');
  if (s.node.memory.workingSetBytes !== undefined) lines.push(`node_memory_working_set_bytes ${s.node.memory.workingSetBytes} ${ms(s.node.memory.time)}`);
  help('pod_cpu_usage_seconds_total', 'Cumulative cpu time consumed by the pod in core-seconds', 'counter');
  for (const p of s.pods) if (p.cpu?.usageCoreNanoSeconds !== undefined) lines.push(`pod_cpu_usage_seconds_total{namespace="${esc(p.podRef.namespace)}",pod="${esc(p.podRef.name)}"} ${p.cpu.usageCoreNanoSeconds / 1e9} ${ms(p.cpu.time)}`);
  help('pod_memory_working_set_bytes', 'Current working set of the pod in bytes');
  for (const p of s.pods) if (p.memory?.workingSetBytes !== undefined) lines.push(`pod_memory_working_set_bytes{namespace="${esc(p.podRef.namespace)}",pod="${esc(p.podRef.name)}"} ${p.memory.workingSetBytes} ${ms(p.memory.time)}`);
  help('scrape_error', '1 if there was an error while getting container metrics, 0 otherwise');
  lines.push('scrape_error 0');
  return `${lines.join('\n')}\n`;
}
