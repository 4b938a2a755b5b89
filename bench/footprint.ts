// The whole node's footprint: not only the agent's PID but its runtime and every process the
// runtime keeps per pod (containerd, its shims and their pause processes; the process runtime's
// launchers, which stay as each container's monitor and hold shared PID namespaces). The
// containers' own processes are the workload and are not counted in any column.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcSample {
  pid: number;
  ppid: number;
  comm: string;
  cmdline: string;
  /** utime + stime in clock ticks (100 per second here). */
  ticks: number;
  rssKB: number;
  /** Proportional set size: pages shared by N processes count 1/N each (many shims share one binary). */
  pssKB: number;
}

export type Part = 'agent' | 'runtime' | 'per_pod';

export interface FootprintPart {
  processes: number;
  rss_mb: number;
  pss_mb: number;
  cpu_s_per_min: number;
}

export interface NodeFootprint {
  rss_mb: number;
  pss_mb: number;
  cpu_s_per_min: number;
  parts: { agent: FootprintPart; runtime?: FootprintPart; per_pod: FootprintPart };
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // the process ended while /proc was walked
  }
}

function kB(text: string | undefined, key: string): number {
  return Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text ?? '')?.[1] ?? 0);
}

/** Every process on the machine, as /proc shows it now. */
export function readProcesses(): Map<number, ProcSample> {
  const out = new Map<number, ProcSample>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = read(`/proc/${name}/stat`);
    if (!stat) continue;
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    out.set(Number(name), {
      pid: Number(name),
      ppid: Number(f[1]),
      comm,
      cmdline: (read(`/proc/${name}/cmdline`) ?? '').replaceAll('\0', ' ').trim(),
      ticks: Number(f[11]) + Number(f[12]),
      rssKB: kB(read(`/proc/${name}/status`), 'VmRSS'),
      // Kernel threads and processes of other users may not show it: 0 then.
      pssKB: kB(read(`/proc/${name}/smaps_rollup`), 'Pss'),
    });
  }
  return out;
}

/** Which part of a node on containerd a process is: the agent, containerd, or its shims and pauses. */
export function containerdNode(agentPid: number, containerdPid: number, containerdSocket: string): (p: ProcSample, all: Map<number, ProcSample>) => Part | undefined {
  const isShim = (p: ProcSample | undefined) => !!p && p.comm.startsWith('containerd-shim') && p.cmdline.includes(containerdSocket);
  return (p, all) => {
    if (p.pid === agentPid) return 'agent';
    if (p.pid === containerdPid) return 'runtime';
    if (isShim(p)) return 'per_pod';
    // The pause process of each sandbox (containerd's per-pod cost); other children of a shim are containers.
    if (p.comm === 'pause' && isShim(all.get(p.ppid))) return 'per_pod';
    return undefined;
  };
}

/** The process runtime runs in the agent's process; what it keeps per container is a launcher. */
export function processRuntimeNode(agentPid: number, launcher = 'nodelet-launch'): (p: ProcSample) => Part | undefined {
  return (p) => (p.pid === agentPid ? 'agent' : p.comm === launcher ? 'per_pod' : undefined);
}

const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10;

/**
 * The footprint over a window: memory as it is at its end, CPU used between the two samples by
 * the processes present at both (a process that came or went in the window is not at rest).
 */
export function footprintBetween(
  before: Map<number, ProcSample>,
  after: Map<number, ProcSample>,
  windowMs: number,
  classify: (p: ProcSample, all: Map<number, ProcSample>) => Part | undefined,
): NodeFootprint {
  const sums: Record<Part, { processes: number; rssKB: number; pssKB: number; ticks: number }> = {
    agent: { processes: 0, rssKB: 0, pssKB: 0, ticks: 0 },
    runtime: { processes: 0, rssKB: 0, pssKB: 0, ticks: 0 },
    per_pod: { processes: 0, rssKB: 0, pssKB: 0, ticks: 0 },
  };
  for (const p of after.values()) {
    const part = classify(p, after);
    if (!part) continue;
    const s = sums[part];
    s.processes++;
    s.rssKB += p.rssKB;
    s.pssKB += p.pssKB;
    const was = before.get(p.pid);
    if (was && was.comm === p.comm) s.ticks += p.ticks - was.ticks;
  }
  const perMin = (ticks: number) => Math.round(((ticks / 100) * 60_000 / windowMs) * 100) / 100;
  const part = (k: Part): FootprintPart => ({ processes: sums[k].processes, rss_mb: mb(sums[k].rssKB), pss_mb: mb(sums[k].pssKB), cpu_s_per_min: perMin(sums[k].ticks) });
  const all = Object.values(sums);
  const total = (f: (s: (typeof all)[number]) => number) => all.reduce((a, s) => a + f(s), 0);
  return {
    rss_mb: mb(total((s) => s.rssKB)),
    pss_mb: mb(total((s) => s.pssKB)),
    cpu_s_per_min: perMin(total((s) => s.ticks)),
    parts: { agent: part('agent'), ...(sums.runtime.processes > 0 ? { runtime: part('runtime') } : {}), per_pod: part('per_pod') },
  };
}
