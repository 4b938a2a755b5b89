// `make bench`: pod start latency, burst, density, deletion and agent cost, measured the same way
// for three agents one after the other: nodelet on the test cluster's containerd, the real kubelet
// on that containerd, and nodelet with its embedded process runtime; each against its runtime's CRI
// floor (the same pod straight through CRI). Prints a summary and one JSON document (also
// bench/results/latest.json; BENCH_OUT moves it). BENCH_REDUCED=1 runs a small version (5 pods) for
// the test suite; BENCH_AGENTS=nodelet,kubelet,nodelet_process picks the columns.
import * as k8s from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { CriClient } from '../src/cri/client.js';
import { startAgent, uniqueNodeName, type RunningAgent } from '../test/support/agent.js';
import { clusterEnv, projectRoot } from '../test/support/cluster.js';
import { processRuntime, processRuntimeAgentConfig, resetProcessRuntime } from '../test/support/runtimes.js';
import { deleteNodeObjects, startKubelet, sweepSandboxes } from '../test/support/kubelet.js';
import { summarize, type Summary } from './stats.js';
import { measureHistoryMemory } from './history-memory.js';
import { benchSvg, type Samples } from './svg.js';
import { parseScrape, startPath, type Scrape, type StartPath } from './start-path.js';
import { containerdNode, footprintBetween, processRuntimeNode, readProcesses, type FootprintPart, type NodeFootprint, type ProcSample, type Part } from './footprint.js';

const env = clusterEnv();
const reduced = process.env.BENCH_REDUCED === '1';
const MAX_PODS = 400;
/**
 * nodelet and the kubelet on containerd: 20 single starts, a burst of 100, 110 then 300 pods; 15 s
 * at rest (twice) with 110 pods. The rest times are what was shortened for the whole `make bench`
 * to fit in 20 minutes on 2 cores.
 */
const PLAN: Plan = reduced
  ? { single: 3, burst: 5, density: [[5, 5]], restMs: 3000, probed: 3 }
  : { single: 20, burst: 100, density: [[110, 110], [300, 300]], restMs: 15_000, probed: 100 };
/** CPU at rest is measured over this long (a minute: what runs once a minute is counted once). */
const REST_WINDOW_MS = reduced ? 3000 : 60_000;
/** The process runtime: the same, its top density set by BENCH_PROCESS_DENSITY (see bench/README.md). */
const PROCESS_TOP = Number(process.env.BENCH_PROCESS_DENSITY ?? 500);
/** (10 s at rest, for the same reason.) */
const PROCESS_PLAN: Plan = reduced ? PLAN : { ...PLAN, density: [[110, 110], [PROCESS_TOP, PROCESS_TOP]], restMs: 10_000 };

const kc = new k8s.KubeConfig();
kc.loadFromFile(env.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);

/**
 * A pod probed as real workloads are: an exec liveness probe and an httpGet readiness probe, every
 * 10 s, against busybox's httpd on port 8080 of the pod's own network (on either runtime).
 */
function probedPodSpec(node: string, name: string, port = 8080): k8s.V1Pod {
  const pod = podSpec(node, name, 'probed');
  const c = pod.spec!.containers[0]!;
  c.command = ['sh', '-c', `mkdir -p /tmp/www && echo ok > /tmp/www/index.html && httpd -f -p ${port} -h /tmp/www & trap 'exit 0' TERM; sleep 3600 & wait`];
  c.livenessProbe = { exec: { command: ['sh', '-c', 'true'] }, periodSeconds: 10 };
  c.readinessProbe = { httpGet: { path: '/', port }, periodSeconds: 10 };
  return pod;
}

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

async function createProbed(node: string, n: number): Promise<string[]> {
  const names = Array.from({ length: n }, (_, i) => `probed-${i}-${randomUUID().slice(0, 6)}`);
  await Promise.all(names.map((name) => core.createNamespacedPod({ namespace: 'default', body: probedPodSpec(node, name) })));
  return names;
}

async function deleteGroup(w: PodWatch, group: string, names: string[]): Promise<number> {
  const t0 = performance.now();
  await core.deleteCollectionNamespacedPod({ namespace: 'default', labelSelector: `bench=${group}` });
  await w.until(`${group} deleted`, () => names.every((n) => w.deletedAt.has(n)), 300_000);
  return (performance.now() - t0) / 1000;
}

interface Density {
  /** Pods created at once (the key is the nominal size; a column may use fewer, see bench/README.md). */
  pods: number;
  all_ready_s: number;
  ok: boolean;
}

/** What is measured through the API for one agent (the floor is added per runtime). */
interface Measured {
  start_single: Summary;
  start_burst100: Summary;
  density: Record<string, Density>;
  rss_mb_max: number;
  rss_mb_rest110: number;
  cpu_s_burst: number;
  cpu_s_per_min_rest110: number;
  api_requests_per_pod: number;
  delete_burst100_s: number;
  /** At rest with pods whose probes run (an exec liveness and an http readiness probe each, every 10 s). */
  probed: { pods: number; ok: boolean; cpu_s_per_min_rest: number; rss_mb_rest: number };
  /** The agent, its runtime and the runtime's per-pod processes, over the same rest window (bench/footprint.ts). */
  node_footprint: NodeFootprint;
  /** Where a single start's time went, on average (nodelet only: from its own metrics). */
  start_path: StartPath | null;
  /** The latencies themselves (ms), for the picture. */
  samples: Pick<Samples, 'start_single' | 'start_burst100'>;
}

interface AgentResult extends Omit<Measured, 'samples'> {
  cri_floor: Summary;
  cri_floor_burst100: Summary;
  overhead_ms_p50: number;
  samples: Samples;
}

/** Which processes make a node under one agent, told apart by part. */
type NodeProcesses = (p: ProcSample, all: Map<number, ProcSample>) => Part | undefined;

interface Plan {
  single: number;
  burst: number;
  /** [nominal size, pods actually created] */
  density: Array<[number, number]>;
  restMs: number;
  /** Pods of the probed phase. */
  probed: number;
}

const round = (x: number) => Math.round(x * 100) / 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Between one single start's deletion and the next create. */
const SETTLE_AFTER_DELETE_MS = 2000;

/** nodelet's own /metrics (its read-only port), for the start path; the kubelet's column has none. */
async function scrape(url: string | undefined): Promise<Scrape | undefined> {
  return url ? parseScrape(await (await fetch(url)).text()) : undefined;
}

/**
 * The same measurement for every agent: pods bound to `node`, Ready and deletion seen through one
 * watch, the agent's RSS and CPU from /proc/`pid`, API requests from the API server's counter.
 */

/**
 * Waits until the agent has cleaned up after the pods deleted so far: no more pod directories under
 * its root-dir than pods of the node still in the API. A rest window measures the node at rest, and
 * the clean-up of 500 deleted pods (their volumes' unmounts, their directories, their logs) ran for
 * a minute into the probed pods' window before this wait (the same wait for every agent).
 */
async function settled(w: PodWatch, rootDir: string, what: string): Promise<void> {
  const t0 = performance.now();
  const dirs = () => {
    try {
      return readdirSync(join(rootDir, 'pods')).length;
    } catch {
      return 0;
    }
  };
  const live = () => [...w.readyAt.keys()].filter((n) => !w.deletedAt.has(n)).length;
  const ok = await w.until(`${what}: the deleted pods' directories gone`, () => dirs() <= live(), 300_000);
  const s = Math.round((performance.now() - t0) / 100) / 10;
  if (s >= 1 || !ok) console.log(`  ${what}: ${ok ? '' : 'NOT '}cleaned up after the deleted pods in ${s} s`);
}

async function measureAgent(node: string, pid: number, plan: Plan, nodeProcesses: NodeProcesses, rootDir: string, metricsUrl?: string): Promise<Measured> {
  const w = new PodWatch();
  await w.start(node);
  try {
    // One pod at a time (the first warms up connections and is not counted).
    const single: number[] = [];
    let pathBefore: Scrape | undefined;
    for (let i = 0; i <= plan.single; i++) {
      if (i === 1) pathBefore = await scrape(metricsUrl);
      const started = await createMany(node, 'single', 1);
      const [name, t0] = [...started][0]!;
      if (!(await w.until(`${name} Ready`, () => w.readyAt.has(name), 60_000))) throw new Error(`${node}: pod ${name} not Ready after 60 s`);
      if (i > 0) single.push(w.readyAt.get(name)! - t0);
      await core.deleteNamespacedPod({ name, namespace: 'default' });
      await w.until(`${name} deleted`, () => w.deletedAt.has(name), 60_000);
      // The agent removes the deleted pod's containers and sandbox now (as the kubelet's container
      // deletor does): a start overlapping that clean-up measured 309 ms instead of 176 (reduced run,
      // process runtime). One at a time means one start alone.
      await sleep(SETTLE_AFTER_DELETE_MS);
    }

    const pathAfter = await scrape(metricsUrl);
    const meanSingle = single.reduce((a, b) => a + b, 0) / single.length;
    const path = pathBefore && pathAfter ? startPath(pathBefore, pathAfter, single.length, meanSingle) : undefined;

    // A burst, all created at once.
    const apiBefore = await apiRequestTotal();
    const cpuBefore = procStat(pid).cpuSeconds;
    const burst = await createMany(node, 'burst', plan.burst);
    if (!(await w.until('burst Ready', () => [...burst.keys()].every((n) => w.readyAt.has(n)), 300_000))) throw new Error(`${node}: the burst was not all Ready after 300 s`);
    const cpuBurst = procStat(pid).cpuSeconds - cpuBefore;
    // Requests of the bench itself in that window: one create per pod.
    const apiPerPod = (await apiRequestTotal() - apiBefore - plan.burst) / plan.burst;
    const burstLatency = [...burst].map(([n, t0]) => w.readyAt.get(n)! - t0);
    const deleteBurst = await deleteGroup(w, 'burst', [...burst.keys()]);

    const density: Record<string, Density> = {};
    let rssRest = 0;
    let cpuRestPerMin = 0;
    let footprint: NodeFootprint | undefined;
    for (const [nominal, n] of plan.density) {
      const group = `density${nominal}`;
      const t0 = performance.now();
      const pods = await createMany(node, group, n);
      const ok = await w.until(`${group} Ready`, () => [...pods.keys()].every((p) => w.readyAt.has(p)), 600_000);
      const last = Math.max(...[...pods.keys()].map((p) => w.readyAt.get(p) ?? performance.now()));
      density[String(nominal)] = { pods: n, all_ready_s: Math.round(((last - t0) / 1000) * 10) / 10, ok };
      if (nominal === plan.density[0]![0]) {
        // At rest with the first density's pods running, over a whole minute: an agent's periodic
        // work (resyncs, GC, housekeeping) comes once a minute, and a shorter window over- or
        // under-counts it by chance.
        await settled(w, rootDir, `${group} at rest`);
        await sleep(plan.restMs);
        const a = procStat(pid);
        const nodeBefore = readProcesses();
        await sleep(REST_WINDOW_MS);
        const b = procStat(pid);
        footprint = footprintBetween(nodeBefore, readProcesses(), REST_WINDOW_MS, nodeProcesses);
        rssRest = b.rssMB;
        cpuRestPerMin = ((b.cpuSeconds - a.cpuSeconds) * 60_000) / REST_WINDOW_MS;
      }
      await deleteGroup(w, group, [...pods.keys()]);
    }

    // Probes' cost: pods at rest whose probes run, measured over twice the rest time (several periods).
    const probedNames = await createProbed(node, plan.probed);
    const probedOk = await w.until('probed Ready', () => probedNames.every((p) => w.readyAt.has(p)), 600_000);
    await settled(w, rootDir, 'probed at rest');
    await sleep(plan.restMs);
    const pa = procStat(pid);
    await sleep(REST_WINDOW_MS);
    const pb = procStat(pid);
    const probed = { pods: plan.probed, ok: probedOk, cpu_s_per_min_rest: round(((pb.cpuSeconds - pa.cpuSeconds) * 60_000) / REST_WINDOW_MS), rss_mb_rest: round(pb.rssMB) };
    await deleteGroup(w, 'probed', probedNames);
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
      probed,
      node_footprint: footprint!,
      start_path: path ?? null,
      samples: { start_single: single.map(round), start_burst100: burstLatency.map(round) },
    };
  } finally {
    w.stop();
  }
}

/** Deletes what is left of the node's pods, stops the agent, removes its Node and Lease. */
async function stopNodelet(agent: RunningAgent): Promise<void> {
  const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${agent.nodeName}` });
  await Promise.all(list.items.map((p) => core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: p.metadata!.namespace!, gracePeriodSeconds: 0 }).catch(() => undefined)));
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([agent.stop(), new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 30_000)))]);
  clearTimeout(timer);
  if (code === 'timeout') await agent.kill();
  await deleteNodeObjects(core, agent.nodeName);
}

/** A node on the test cluster's containerd (its PID from cluster-up's pid file), under the agent `agentPid`. */
function containerdNodeOf(agentPid: number): NodeProcesses {
  const containerdPid = Number(readFileSync(join(env.clusterDir, 'containerd.pid'), 'utf8').trim());
  return containerdNode(agentPid, containerdPid, env.runtimeEndpoint.replace(/^unix:\/\//, ''));
}

/** nodelet on the cluster's containerd. */
async function measureNodelet(plan: Plan): Promise<Measured> {
  const node = uniqueNodeName('bench-nodelet');
  const agent = await startAgent(node, ['--log-level', 'info', '--max-pods', String(MAX_PODS)]);
  try {
    return await measureAgent(node, agent.process.pid!, plan, containerdNodeOf(agent.process.pid!), agent.rootDir, `http://127.0.0.1:${agent.localPort}/metrics`);
  } finally {
    await stopNodelet(agent);
    // Sandboxes of deleted pods that the agent had not collected yet.
    await sweepBenchSandboxes(env.runtimeEndpoint, (n) => n === node);
  }
}

/**
 * The bench's pod sandboxes in a runtime: the kubelet copies pod labels onto its sandboxes
 * (`bench=...`); nodelet's carry `nodelet.io/node-name`; the CRI floor's `nodelet.io/bench`.
 * Returns how many other sandboxes are there.
 */
function sweepBenchSandboxes(endpoint: string, nodes: (node: string | undefined) => boolean): Promise<number> {
  return sweepSandboxes(endpoint, (l) => 'bench' in l || 'nodelet.io/bench' in l || nodes(l['nodelet.io/node-name']));
}

const KUBELET_NODE = 'bench-kubelet';

/** The kubelet on the same containerd, as node bench-kubelet. */
async function measureKubelet(plan: Plan): Promise<{ measured: Measured; version: string }> {
  await sweepBenchSandboxes(env.runtimeEndpoint, (n) => n?.startsWith('bench-') ?? false);
  const kubelet = await timed('the kubelet: start until its node is Ready', () => startKubelet(core, { node: KUBELET_NODE, maxPods: MAX_PODS }));
  try {
    return { measured: await measureAgent(kubelet.node, kubelet.pid, plan, containerdNodeOf(kubelet.pid), kubelet.rootDir), version: kubelet.version };
  } finally {
    await timed('the kubelet: stop and clean up', () => kubelet.stop());
  }
}

/** nodelet with its embedded process runtime (`runtime: process`). */
async function measureNodeletProcess(plan: Plan): Promise<Measured> {
  const node = uniqueNodeName('bench-process');
  const { config, root } = processRuntimeAgentConfig(join(env.clusterDir, 'bench', 'process'), 'bench-process.sock');
  const agent = await startAgent(node, ['--config', config, '--log-level', 'info', '--max-pods', String(Math.max(MAX_PODS, PROCESS_TOP + 10))]);
  try {
    return await measureAgent(node, agent.process.pid!, plan, processRuntimeNode(agent.process.pid!), agent.rootDir, `http://127.0.0.1:${agent.localPort}/metrics`);
  } finally {
    await stopNodelet(agent);
    resetProcessRuntime(root);
  }
}

/** RunPodSandbox + CreateContainer + StartContainer of the bench's pod, straight on containerd. */
async function criFloor(endpoint: string, concurrency: number, count: number): Promise<number[]> {
  const cri = new CriClient(endpoint);
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
    // The image is local, as for the agents (the process runtime "pulls" it from its images dir).
    if (!(await cri.listImages()).some((i) => i.repo_tags?.includes(env.testImage))) await cri.pullImage({ image: env.testImage });
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
    for (let i = 0; i < sandboxes.length; i += 8) {
      await Promise.all(sandboxes.slice(i, i + 8).map(async (sb) => {
        await cri.stopPodSandbox(sb).catch(() => undefined);
        await cri.removePodSandbox(sb).catch(() => undefined);
      }));
    }
    return out;
  } finally {
    cri.close();
  }
}

type AgentKey = 'nodelet' | 'kubelet' | 'nodelet_process';
const AGENT_KEYS: AgentKey[] = ['nodelet', 'kubelet', 'nodelet_process'];

interface Floor {
  single: number[];
  burst: number[];
}

async function floorOn(endpoint: string, plan: Plan): Promise<Floor> {
  return { single: await criFloor(endpoint, 1, plan.single), burst: await criFloor(endpoint, plan.burst, plan.burst) };
}

/** The floor of the process runtime: the same sequences on a `nodelet runtime serve` of its own (no agent in that process). */
async function processFloor(plan: Plan): Promise<Floor> {
  const rt = await processRuntime('bench-floor');
  try {
    return await floorOn(rt.endpoint, plan);
  } finally {
    await rt.stop();
    resetProcessRuntime(join(env.clusterDir, 'process-bench-floor', 'root'));
  }
}

function withFloor(m: Measured, f: Floor): AgentResult {
  const [single, burst] = [summarize(f.single), summarize(f.burst)];
  return {
    ...m,
    cri_floor: single,
    cri_floor_burst100: burst,
    overhead_ms_p50: Math.round((m.start_single.p50 - single.p50) * 10) / 10,
    samples: { ...m.samples, cri_floor: f.single.map(round), cri_floor_burst100: f.burst.map(round) },
  };
}

async function timed<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  console.error(`bench: ${what}... (at ${Math.round(t0 / 1000)} s)`);
  const r = await fn();
  console.error(`bench: ${what} took ${Math.round((performance.now() - t0) / 1000)} s`);
  return r;
}

async function main(): Promise<void> {
  const selected = (process.env.BENCH_AGENTS ?? AGENT_KEYS.join(',')).split(',').map((a) => a.trim()) as AgentKey[];
  for (const a of selected) if (!AGENT_KEYS.includes(a)) throw new Error(`BENCH_AGENTS: unknown agent ${a} (${AGENT_KEYS.join(', ')})`);
  const t0 = performance.now();
  // Sandboxes an interrupted earlier run left in containerd (the kubelet would kill them anyway).
  await sweepBenchSandboxes(env.runtimeEndpoint, (n) => n?.startsWith('bench-') ?? false);

  const agents: Record<AgentKey, AgentResult | null> = { nodelet: null, kubelet: null, nodelet_process: null };
  let containerdFloor: Floor | undefined;
  let kubeletVersion: string | undefined;
  if (selected.includes('nodelet')) {
    const m = await timed('nodelet on containerd', () => measureNodelet(PLAN));
    containerdFloor = await timed('CRI floor on containerd', () => floorOn(env.runtimeEndpoint, PLAN));
    agents.nodelet = withFloor(m, containerdFloor);
  }
  if (selected.includes('kubelet')) {
    // The floor first if nodelet was not measured: nothing may share containerd with the kubelet.
    containerdFloor ??= await timed('CRI floor on containerd', () => floorOn(env.runtimeEndpoint, PLAN));
    const k = await timed('the kubelet on containerd', () => measureKubelet(PLAN));
    kubeletVersion = k.version;
    agents.kubelet = withFloor(k.measured, containerdFloor);
  }
  if (selected.includes('nodelet_process')) {
    const m = await timed('nodelet with its process runtime', () => measureNodeletProcess(PROCESS_PLAN));
    agents.nodelet_process = withFloor(m, await timed('CRI floor on the process runtime', () => processFloor(PROCESS_PLAN)));
  }

  // The sync history's bound (issue 20): 300 pods with 1,000 syncs each (reduced: 5 with 50).
  const historyMemory = await timed('the sync history\'s memory', () => (reduced ? measureHistoryMemory(5, 50) : measureHistoryMemory(300, 1000)));

  const cri = new CriClient(env.runtimeEndpoint);
  const runtime = await cri.version('0.1.0');
  cri.close();
  const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 ? round(a / b) : null);
  const n = agents.nodelet ?? undefined;
  const k = agents.kubelet ?? undefined;
  const p = agents.nodelet_process ?? undefined;
  const result = {
    date: new Date().toISOString(),
    reduced,
    duration_s: 0,
    machine: {
      cpus: os.cpus().length,
      cpu_model: os.cpus()[0]?.model,
      memory_gib: Math.round(os.totalmem() / 2 ** 30),
      kernel: os.release(),
      node: process.version,
      runtime: `${runtime.runtime_name} ${runtime.runtime_version}`,
      kubelet: kubeletVersion ?? null,
    },
    plan: {
      single: PLAN.single,
      burst: PLAN.burst,
      rest_s: PLAN.restMs / 1000,
      density: Object.fromEntries(PLAN.density),
      nodelet_process_density: Object.fromEntries(PROCESS_PLAN.density),
      nodelet_process_rest_s: PROCESS_PLAN.restMs / 1000,
    },
    agents,
    history_memory: historyMemory,
    kubelet_missing_reason: agents.kubelet ? null : 'not selected (BENCH_AGENTS)',
    ratios: {
      start_single_p50_nodelet_over_kubelet: ratio(n?.start_single.p50, k?.start_single.p50),
      start_burst100_p99_nodelet_over_kubelet: ratio(n?.start_burst100.p99, k?.start_burst100.p99),
      burst100_p99_over_floor: ratio(n?.start_burst100.p99, n?.cri_floor_burst100.p99),
      burst100_p99_over_floor_kubelet: ratio(k?.start_burst100.p99, k?.cri_floor_burst100.p99),
      burst100_p99_over_floor_nodelet_process: ratio(p?.start_burst100.p99, p?.cri_floor_burst100.p99),
      rss_mb_max_nodelet_over_kubelet: ratio(n?.rss_mb_max, k?.rss_mb_max),
      rss_mb_rest110_nodelet_over_kubelet: ratio(n?.rss_mb_rest110, k?.rss_mb_rest110),
      cpu_probed_nodelet_over_kubelet: ratio(n?.probed.cpu_s_per_min_rest, k?.probed.cpu_s_per_min_rest),
      api_requests_per_pod_nodelet_over_kubelet: ratio(n?.api_requests_per_pod, k?.api_requests_per_pod),
      node_rss_mb_nodelet_over_kubelet: ratio(n?.node_footprint.rss_mb, k?.node_footprint.rss_mb),
      node_rss_mb_nodelet_process_over_kubelet: ratio(p?.node_footprint.rss_mb, k?.node_footprint.rss_mb),
      node_cpu_nodelet_process_over_kubelet: ratio(p?.node_footprint.cpu_s_per_min, k?.node_footprint.cpu_s_per_min),
    },
  };
  result.duration_s = Math.round((performance.now() - t0) / 1000);

  const fmt = (s: Summary) => `p50 ${s.p50} ms  p90 ${s.p90}  p99 ${s.p99}  max ${s.max}  (n=${s.n})`;
  console.log(`bench on ${result.machine.runtime}, ${result.machine.cpus} cores, ${result.duration_s} s${reduced ? ' (REDUCED run)' : ''}`);
  for (const key of AGENT_KEYS) {
    const a = agents[key];
    if (!a) continue;
    console.log(`${key}${key === 'kubelet' ? ` ${kubeletVersion}` : ''}:`);
    console.log(`  start, one at a time       ${fmt(a.start_single)}`);
    console.log(`  CRI floor, one at a time   ${fmt(a.cri_floor)}   overhead p50 ${a.overhead_ms_p50} ms`);
    console.log(`  start, burst               ${fmt(a.start_burst100)}`);
    console.log(`  CRI floor, burst           ${fmt(a.cri_floor_burst100)}   p99 ratio ${ratio(a.start_burst100.p99, a.cri_floor_burst100.p99)}`);
    for (const [size, d] of Object.entries(a.density)) console.log(`  density ${size}: ${d.pods} pods all Ready in ${d.all_ready_s} s (${d.ok ? 'all Ready' : 'NOT all Ready'})`);
    console.log(`  deletion of the burst: ${a.delete_burst100_s} s; API requests per pod started: ${a.api_requests_per_pod}`);
    console.log(`  RSS max ${a.rss_mb_max} MB, at rest with the first density's pods ${a.rss_mb_rest110} MB; CPU ${a.cpu_s_burst} s in the burst, ${a.cpu_s_per_min_rest110} s/min at rest`);
    const fp = a.node_footprint;
    const part = (name: string, x: FootprintPart | undefined) => (x ? `${name} ${x.processes}: ${x.rss_mb} MB RSS (${x.pss_mb} PSS), ${x.cpu_s_per_min} s/min` : '');
    console.log(`  whole node at rest with the first density's pods: ${fp.rss_mb} MB RSS (${fp.pss_mb} MB PSS), ${fp.cpu_s_per_min} s/min CPU; ${[part('agent', fp.parts.agent), part('runtime', fp.parts.runtime), part('per-pod', fp.parts.per_pod)].filter(Boolean).join('; ')}`);
    const sp = a.start_path;
    if (sp) {
      const calls = Object.entries(sp.cri_ms).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(', ');
      console.log(`  start path, mean ms per start: API and watches ${sp.api_and_watch_ms}, queue ${sp.queue_ms}, sync ${sp.sync_ms} (CRI: ${calls}; the rest ${sp.sync_other_ms}), status ${sp.status_ms}`);
    }
    console.log(`  probed: ${a.probed.pods} pods with an exec liveness and an http readiness probe every 10 s${a.probed.ok ? '' : ' (NOT all Ready)'}: ${a.probed.cpu_s_per_min_rest} s/min CPU at rest, RSS ${a.probed.rss_mb_rest} MB`);
  }
  const hm = result.history_memory;
  console.log(`sync history: ${hm.pods} pods with ${hm.syncs_per_pod} syncs each (${hm.records_kept} records kept): RSS ${hm.rss_mb_with} MB against ${hm.rss_mb_without} MB without history (+${hm.rss_delta_mb} MB; heap +${hm.heap_delta_mb} MB)`);
  console.log(`ratios: ${JSON.stringify(result.ratios)}`);
  const out = process.env.BENCH_OUT ?? join(projectRoot, 'bench/results/latest.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  // The picture beside it (bench/README.md shows bench/results/latest.svg).
  const svg = out.replace(/\.json$/, '') + '.svg';
  writeFileSync(svg, benchSvg(result));
  console.error(`bench: wrote ${out} and ${svg}`);
  console.log(JSON.stringify(result));
}

main().catch((err) => {
  console.error(`bench failed: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
