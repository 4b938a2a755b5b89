// `make bench`: pod start latency, burst, density, deletion and agent cost of nodelet on the test
// cluster's containerd, against the CRI floor (the same pod straight through CRI). Prints a summary
// and one JSON document (also bench/results/latest.json; BENCH_OUT moves it).
// BENCH_REDUCED=1 runs a small version (5 pods) for the test suite.
import * as k8s from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { CriClient } from '../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../test/support/agent.js';
import { clusterEnv, projectRoot } from '../test/support/cluster.js';
import { summarize, type Summary } from './stats.js';

const env = clusterEnv();
const reduced = process.env.BENCH_REDUCED === '1';
const SINGLE = reduced ? 3 : 20;
const BURST = reduced ? 5 : 100;
const DENSITY = reduced ? [5] : [110, 300];
const REST_MS = reduced ? 3000 : 20_000;

const kc = new k8s.KubeConfig();
kc.loadFromFile(env.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);

function podSpec(node: string, name: string, group: string): k8s.V1Pod {
  return {
    metadata: { name, namespace: 'default', labels: { bench: group } },
    // A grace period, so that deletion goes through the agent (with 0 the API server deletes at once);
    // the container ends on SIGTERM, so the agent's own work is what is measured.
    spec: { nodeName: node, terminationGracePeriodSeconds: 5, containers: [{ name: 'c', image: env.testImage, command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] }] },
  };
}

/** Watches the node's pods: when each became Ready, and when each was deleted. */
class PodWatch {
  readonly readyAt = new Map<string, number>();
  readonly deletedAt = new Map<string, number>();
  private waiters: Array<() => void> = [];
  private abort?: AbortController;

  private stopped = false;

  private seen(type: string, pod: k8s.V1Pod): void {
    const name = pod.metadata?.name ?? '';
    if (type === 'DELETED') this.deletedAt.set(name, performance.now());
    else if (!this.readyAt.has(name) && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) this.readyAt.set(name, performance.now());
    this.waiters.forEach((w) => w());
  }

  async start(node: string): Promise<void> {
    const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
    for (const p of list.items) this.seen('ADDED', p);
    this.abort = await new k8s.Watch(kc).watch(
      '/api/v1/pods',
      { fieldSelector: `spec.nodeName=${node}`, resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
      (type: string, pod: k8s.V1Pod) => this.seen(type, pod),
      // A watch the server ends (or that breaks) is opened again from the last state.
      () => {
        if (!this.stopped) void this.start(node).catch((err) => console.error(`bench: watch restart failed: ${(err as Error).message}`));
      },
    );
  }

  async until(what: string, cond: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) {
        console.error(`bench: timed out waiting for ${what}`);
        return false;
      }
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
      this.waiters = [];
    }
    return true;
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }
}

function procStat(pid: number): { cpuSeconds: number; rssMB: number; hwmMB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { cpuSeconds: ticks / 100, rssMB: kb('VmRSS') / 1024, hwmMB: kb('VmHWM') / 1024 };
}

async function apiRequestTotal(): Promise<number> {
  const text = await fetchMetrics();
  let sum = 0;
  for (const m of text.matchAll(/^apiserver_request_total\{[^}]*\} (\d+(?:\.\d+)?(?:e[+-]?\d+)?)$/gm)) sum += Number(m[1]);
  return sum;
}

async function fetchMetrics(): Promise<string> {
  const url = new URL(`${env.apiserver}/metrics`);
  const opts: https.RequestOptions = { hostname: url.hostname, port: url.port, path: url.pathname, method: 'GET' };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    https
      .get(opts, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

async function createMany(node: string, group: string, n: number): Promise<Map<string, number>> {
  const started = new Map<string, number>();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const name = `${group}-${i}-${randomUUID().slice(0, 6)}`;
      started.set(name, performance.now());
      await core.createNamespacedPod({ namespace: 'default', body: podSpec(node, name, group) });
    }),
  );
  return started;
}

async function deleteGroup(w: PodWatch, group: string, names: string[]): Promise<number> {
  const t0 = performance.now();
  await core.deleteCollectionNamespacedPod({ namespace: 'default', labelSelector: `bench=${group}` });
  await w.until(`${group} deleted`, () => names.every((n) => w.deletedAt.has(n)), 300_000);
  return (performance.now() - t0) / 1000;
}

interface AgentResult {
  start_single: Summary;
  start_burst100: Summary;
  cri_floor: Summary;
  cri_floor_burst100: Summary;
  overhead_ms_p50: number;
  density: Record<string, { all_ready_s: number; ok: boolean }>;
  rss_mb_max: number;
  rss_mb_rest110: number;
  cpu_s_burst: number;
  cpu_s_per_min_rest110: number;
  api_requests_per_pod: number;
  delete_burst100_s: number;
}

async function measureNodelet(): Promise<Omit<AgentResult, 'cri_floor' | 'cri_floor_burst100' | 'overhead_ms_p50'>> {
  const node = uniqueNodeName('bench-nodelet');
  const agent: RunningAgent = await startAgent(node, ['--log-level', 'info', '--max-pods', '400']);
  const pid = agent.process.pid!;
  const w = new PodWatch();
  await w.start(node);
  try {
    // One pod at a time (the first warms up connections and is not counted).
    const single: number[] = [];
    for (let i = 0; i <= SINGLE; i++) {
      const started = await createMany(node, 'single', 1);
      const [name, t0] = [...started][0]!;
      await w.until(`${name} Ready`, () => w.readyAt.has(name), 60_000);
      if (i > 0) single.push(w.readyAt.get(name)! - t0);
      await core.deleteNamespacedPod({ name, namespace: 'default' });
      await w.until(`${name} deleted`, () => w.deletedAt.has(name), 60_000);
    }

    // A burst, all created at once.
    const apiBefore = await apiRequestTotal();
    const cpuBefore = procStat(pid).cpuSeconds;
    const burst = await createMany(node, 'burst', BURST);
    await w.until('burst Ready', () => [...burst.keys()].every((n) => w.readyAt.has(n)), 300_000);
    const cpuBurst = procStat(pid).cpuSeconds - cpuBefore;
    // Requests of the bench itself in that window: one create per pod.
    const apiPerPod = (await apiRequestTotal() - apiBefore - BURST) / BURST;
    const burstLatency = [...burst].map(([n, t0]) => w.readyAt.get(n)! - t0);
    const deleteBurst = await deleteGroup(w, 'burst', [...burst.keys()]);

    const density: Record<string, { all_ready_s: number; ok: boolean }> = {};
    let rssRest = 0;
    let cpuRestPerMin = 0;
    for (const n of DENSITY) {
      const group = `density${n}`;
      const t0 = performance.now();
      const pods = await createMany(node, group, n);
      const ok = await w.until(`${group} Ready`, () => [...pods.keys()].every((p) => w.readyAt.has(p)), 600_000);
      density[String(n)] = { all_ready_s: Math.round(((Math.max(...[...pods.keys()].map((p) => w.readyAt.get(p) ?? performance.now())) - t0) / 1000) * 10) / 10, ok };
      if (n === DENSITY[0]) {
        // At rest with the first density's pods running.
        await new Promise((r) => setTimeout(r, REST_MS));
        const a = procStat(pid);
        await new Promise((r) => setTimeout(r, REST_MS));
        const b = procStat(pid);
        rssRest = b.rssMB;
        cpuRestPerMin = ((b.cpuSeconds - a.cpuSeconds) * 60_000) / REST_MS;
      }
      await deleteGroup(w, group, [...pods.keys()]);
    }
    const round = (x: number) => Math.round(x * 100) / 100;
    return {
      start_single: summarize(single),
      start_burst100: summarize(burstLatency),
      density,
      rss_mb_max: round(procStat(pid).hwmMB),
      rss_mb_rest110: round(rssRest),
      cpu_s_burst: round(cpuBurst),
      cpu_s_per_min_rest110: round(cpuRestPerMin),
      api_requests_per_pod: round(apiPerPod),
      delete_burst100_s: round(deleteBurst),
    };
  } finally {
    w.stop();
    await cleanupAgent(agent);
  }
}

/** RunPodSandbox + CreateContainer + StartContainer of the bench's pod, straight on containerd. */
async function criFloor(concurrency: number, count: number): Promise<number[]> {
  const cri = new CriClient(env.runtimeEndpoint);
  const one = async (i: number) => {
    const uid = randomUUID();
    const logDir = join(env.podLogRoot, `bench_floor-${i}_${uid}`);
    mkdirSync(logDir, { recursive: true });
    const config = {
      metadata: { name: `floor-${i}`, uid, namespace: 'bench', attempt: 0 },
      hostname: `floor-${i}`,
      log_directory: logDir,
      labels: { 'nodelet.io/bench': 'floor' },
      linux: { security_context: { namespace_options: { network: 'POD' as const, pid: 'CONTAINER' as const, ipc: 'POD' as const } } },
    };
    const t0 = performance.now();
    const sb = await cri.runPodSandbox(config);
    const c = await cri.createContainer(sb, { metadata: { name: 'c', attempt: 0 }, image: { image: env.testImage }, command: ['sleep', '3600'], log_path: 'c/0.log' }, config);
    await cri.startContainer(c);
    return { ms: performance.now() - t0, sb };
  };
  try {
    const out: number[] = [];
    const sandboxes: string[] = [];
    if (concurrency === 1) {
      for (let i = 0; i <= count; i++) {
        const r = await one(i);
        if (i > 0) out.push(r.ms);
        sandboxes.push(r.sb);
      }
    } else {
      const rs = await Promise.all(Array.from({ length: count }, (_, i) => one(i)));
      rs.forEach((r) => (out.push(r.ms), sandboxes.push(r.sb)));
    }
    await Promise.all(sandboxes.map(async (sb) => {
      await cri.stopPodSandbox(sb).catch(() => undefined);
      await cri.removePodSandbox(sb).catch(() => undefined);
    }));
    return out;
  } finally {
    cri.close();
  }
}

async function main(): Promise<void> {
  const nodelet = await measureNodelet();
  const floor = summarize(await criFloor(1, SINGLE));
  const floorBurst = summarize(await criFloor(BURST, BURST));
  const agent: AgentResult = {
    ...nodelet,
    cri_floor: floor,
    cri_floor_burst100: floorBurst,
    overhead_ms_p50: Math.round((nodelet.start_single.p50 - floor.p50) * 10) / 10,
  };
  const cri = new CriClient(env.runtimeEndpoint);
  const runtime = await cri.version('0.1.0');
  cri.close();
  const result = {
    date: new Date().toISOString(),
    reduced,
    machine: {
      cpus: os.cpus().length,
      cpu_model: os.cpus()[0]?.model,
      memory_gib: Math.round(os.totalmem() / 2 ** 30),
      kernel: os.release(),
      node: process.version,
      runtime: `${runtime.runtime_name} ${runtime.runtime_version}`,
    },
    agents: {
      nodelet: agent,
      kubelet: null,
    },
    kubelet_missing_reason:
      'not measured yet: the kubelet column (kubelet v1.37.2 built by hack/build-go-bins.sh kubelet, run against the same containerd as a second node) is the next step of issue 6',
    ratios: {
      burst100_p99_over_floor: Math.round((agent.start_burst100.p99 / agent.cri_floor_burst100.p99) * 100) / 100,
    },
  };
  const fmt = (s: Summary) => `p50 ${s.p50} ms  p90 ${s.p90}  p99 ${s.p99}  max ${s.max}  (n=${s.n})`;
  console.log(`nodelet on ${result.machine.runtime}, ${result.machine.cpus} cores${reduced ? ' (REDUCED run)' : ''}`);
  console.log(`  start, one at a time       ${fmt(agent.start_single)}`);
  console.log(`  CRI floor, one at a time   ${fmt(agent.cri_floor)}   overhead p50 ${agent.overhead_ms_p50} ms`);
  console.log(`  start, burst of ${BURST}       ${fmt(agent.start_burst100)}`);
  console.log(`  CRI floor, burst of ${BURST}   ${fmt(agent.cri_floor_burst100)}   p99 ratio ${result.ratios.burst100_p99_over_floor}`);
  for (const [n, d] of Object.entries(agent.density)) console.log(`  density ${n}: all Ready in ${d.all_ready_s} s (${d.ok ? 'all Ready' : 'NOT all Ready'})`);
  console.log(`  deletion of the burst: ${agent.delete_burst100_s} s; API requests per pod started: ${agent.api_requests_per_pod}`);
  console.log(`  RSS max ${agent.rss_mb_max} MB, at rest with ${DENSITY[0]} pods ${agent.rss_mb_rest110} MB; CPU ${agent.cpu_s_burst} s in the burst, ${agent.cpu_s_per_min_rest110} s/min at rest`);
  const out = process.env.BENCH_OUT ?? join(projectRoot, 'bench/results/latest.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  console.log(JSON.stringify(result));
}

main().catch((err) => {
  console.error(`bench failed: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
