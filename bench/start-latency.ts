// `make bench` (first part): pod start latency through nodelet, against the CRI floor, on the test cluster.
//   start_single: create -> Ready (observed through a watch), one pod at a time
//   cri_floor:    RunPodSandbox + CreateContainer + StartContainer of the same pod straight on containerd
// Prints a summary and writes bench/results/latest.json.
import * as k8s from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName } from '../test/support/agent.js';
import { clusterEnv, projectRoot } from '../test/support/cluster.js';
import { summarize } from './stats.js';

const env = clusterEnv();
const runs = Number(process.env.BENCH_RUNS ?? 20);

function podSpec(node: string, name: string): k8s.V1Pod {
  return {
    metadata: { name, namespace: 'default', labels: { bench: 'start' } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'c', image: env.testImage, command: ['sleep', '3600'] }],
    },
  };
}

async function measureAgentStart(node: string): Promise<number[]> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(env.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const readyAt = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const watch = await new k8s.Watch(kc).watch(
    '/api/v1/pods',
    { fieldSelector: `spec.nodeName=${node}` },
    (_type: string, pod: k8s.V1Pod) => {
      const name = pod.metadata?.name ?? '';
      if (readyAt.has(name)) return;
      if (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
        readyAt.set(name, performance.now());
        waiters.get(name)?.();
      }
    },
    () => undefined,
  );
  const latencies: number[] = [];
  try {
    for (let i = 0; i <= runs; i++) {
      const name = `bench-${randomUUID().slice(0, 8)}`;
      const ready = new Promise<void>((resolve) => waiters.set(name, resolve));
      const t0 = performance.now();
      await core.createNamespacedPod({ namespace: 'default', body: podSpec(node, name) });
      await Promise.race([ready, new Promise((_, rej) => setTimeout(() => rej(new Error(`${name} not Ready in 60 s`)), 60_000))]);
      if (i > 0) latencies.push(readyAt.get(name)! - t0); // the first pod warms up the agent's connections
      await core.deleteNamespacedPod({ name, namespace: 'default' });
    }
  } finally {
    watch.abort();
  }
  return latencies;
}

async function measureCriFloor(): Promise<number[]> {
  const cri = new CriClient(env.runtimeEndpoint);
  const out: number[] = [];
  try {
    for (let i = 0; i <= runs; i++) {
      const uid = randomUUID();
      const logDir = join(env.podLogRoot, `bench_floor_${uid}`);
      mkdirSync(logDir, { recursive: true });
      const sandboxConfig = {
        metadata: { name: `floor-${i}`, uid, namespace: 'bench', attempt: 0 },
        hostname: `floor-${i}`,
        log_directory: logDir,
        labels: { 'nodelet.io/bench': 'floor' },
        linux: { security_context: { namespace_options: { network: 'POD' as const, pid: 'CONTAINER' as const, ipc: 'POD' as const } } },
      };
      const t0 = performance.now();
      const sb = await cri.runPodSandbox(sandboxConfig);
      const c = await cri.createContainer(sb, { metadata: { name: 'c', attempt: 0 }, image: { image: env.testImage }, command: ['sleep', '3600'], log_path: 'c/0.log' }, sandboxConfig);
      await cri.startContainer(c);
      if (i > 0) out.push(performance.now() - t0);
      await cri.stopPodSandbox(sb);
      await cri.removePodSandbox(sb);
    }
  } finally {
    cri.close();
  }
  return out;
}

async function main(): Promise<void> {
  const node = uniqueNodeName('bench-nodelet');
  const agent = await startAgent(node, ['--log-level', 'info']);
  let single: number[];
  try {
    single = await measureAgentStart(node);
  } finally {
    await cleanupAgent(agent);
  }
  const floor = await measureCriFloor();
  const startSingle = summarize(single);
  const criFloor = summarize(floor);
  const result = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: Math.round(os.totalmem() / 2 ** 30), kernel: os.release(), node: process.version },
    agents: {
      nodelet: {
        start_single: startSingle,
        cri_floor: criFloor,
        overhead_ms_p50: Math.round((startSingle.p50 - criFloor.p50) * 10) / 10,
      },
    },
    notes: 'Only single-pod start latency and the CRI floor are measured so far; burst, density, cost and the kubelet column are open work (issue 6).',
  };
  const fmt = (s: ReturnType<typeof summarize>) => `p50 ${s.p50} ms  p90 ${s.p90} ms  p99 ${s.p99} ms  max ${s.max} ms  (n=${s.n})`;
  console.log(`nodelet pod start latency (create -> Ready, one at a time): ${fmt(startSingle)}`);
  console.log(`CRI floor (RunPodSandbox + CreateContainer + StartContainer):  ${fmt(criFloor)}`);
  console.log(`overhead above the floor at p50: ${result.agents.nodelet.overhead_ms_p50} ms`);
  const dir = join(projectRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'latest.json'), JSON.stringify(result, null, 2) + '\n');
  console.log(JSON.stringify(result));
}

main().catch((err) => {
  console.error(`bench failed: ${(err as Error).message}`);
  process.exit(1);
});
