// The node a drill run stands on: nodelet (crashable, restartable on the same state), the runtime
// under it (the test cluster's containerd, or a process runtime of its own), and a pod log root on a
// small loop-mounted filesystem of its own.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CriClient } from '../../src/cri/client.js';
import { startAgent, type RunningAgent } from '../support/agent.js';
import { clusterEnv, eventually } from '../support/cluster.js';
import { processRuntime, resetProcessRuntime, type ProcessRuntimeHandle } from '../support/runtimes.js';
import { componentPid, startComponents, stopComponent } from './cluster-control.js';
import { ApiProxy, proxiedKubeconfig } from './api-proxy.js';
import type { DrillAgent, DrillRuntime, RuntimeName } from './types.js';

export interface DrillNode {
  agent: DrillAgent;
  runtime: DrillRuntime;
  apiProxy: ApiProxy;
  /** Stops the agent and the runtime it started, unmounts and removes its directories. */
  teardown(): Promise<void>;
}

export interface DrillNodeOptions {
  runtime: RuntimeName;
  nodeName: string;
  /** Where the node's directories go. */
  dir: string;
  /** The pod log root's filesystem size. */
  logFsMiB: number;
  /** Extra flags for nodelet. */
  flags?: string[];
}

/** Runs `sh -c` with a clear error. */
function sh(script: string): void {
  const r = spawnSync('sh', ['-c', script], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${script}: ${r.stderr.trim()}`);
}

function mountLogFs(image: string, mountpoint: string, mib: number): void {
  mkdirSync(mountpoint, { recursive: true });
  sh(`truncate -s ${mib}M ${image} && mkfs.ext4 -q -F -m 0 ${image} && mount -o loop ${image} ${mountpoint}`);
}

function unmount(mountpoint: string): void {
  spawnSync('umount', ['-l', mountpoint], { stdio: 'ignore' });
}

function containerdRuntime(): DrillRuntime {
  const env = clusterEnv();
  const cri = new CriClient(env.runtimeEndpoint, { statusTimeoutMs: 2000 });
  return {
    name: 'containerd',
    endpoint: env.runtimeEndpoint,
    async stop() {
      await stopComponent('containerd');
    },
    async start() {
      if (componentPid('containerd') === undefined) startComponents();
      await eventually('containerd to serve', 30_000, async () => ((await cri.version('0.1.0').catch(() => undefined)) ? true : undefined), 200);
    },
    containerPids: (id) => containerPids(cri, id),
  };
}

function processDrillRuntime(handle: ProcessRuntimeHandle): DrillRuntime {
  const cri = new CriClient(handle.endpoint, { statusTimeoutMs: 2000 });
  return {
    name: 'process',
    endpoint: handle.endpoint,
    stop: () => handle.crash(),
    start: () => handle.start(),
    containerPids: (id) => containerPids(cri, id),
  };
}

/** The container's init PID (from the runtime's verbose status) and its descendants. */
async function containerPids(cri: CriClient, id: string): Promise<number[]> {
  const st = await cri.containerStatus(id, true);
  const info = JSON.parse(st.info?.info ?? '{}') as { pid?: number };
  if (!info.pid) return [];
  const out = [info.pid];
  const children = spawnSync('pgrep', ['-P', String(info.pid)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
  return out.concat(children);
}

/** The pressure transition period of a drill node (the kubelet's default, 5 min, would stall the disk-full drill). */
export const PRESSURE_TRANSITION_SECONDS = 30;

export async function startDrillNode(opts: DrillNodeOptions): Promise<DrillNode> {
  const env = clusterEnv();
  rmSync(opts.dir, { recursive: true, force: true });
  const rootDir = join(opts.dir, 'root');
  const podLogRoot = join(opts.dir, 'logs');
  const staticPodDir = join(opts.dir, 'manifests');
  mkdirSync(rootDir, { recursive: true });
  mkdirSync(staticPodDir, { recursive: true });
  mountLogFs(join(opts.dir, 'logs.img'), podLogRoot, opts.logFsMiB);
  try {
    return await startOn(opts, { rootDir, podLogRoot, staticPodDir });
  } catch (err) {
    unmount(podLogRoot);
    throw err;
  }
}

async function startOn(opts: DrillNodeOptions, dirs: { rootDir: string; podLogRoot: string; staticPodDir: string }): Promise<DrillNode> {
  const env = clusterEnv();
  const { rootDir, podLogRoot, staticPodDir } = dirs;

  let proc: ProcessRuntimeHandle | undefined;
  let runtime: DrillRuntime;
  if (opts.runtime === 'process') {
    // It trusts the test registries as the cluster's containerd does (the bad-input drill pulls from them).
    proc = await processRuntime(`drills-${opts.nodeName}`, ['--registry-certs-dir', env.registryCertsDir]);
    runtime = processDrillRuntime(proc);
  } else {
    runtime = containerdRuntime();
  }
  // The agent's API server connections go through a proxy the watch drill can silence.
  const api = new URL(env.apiserver);
  const apiProxy = new ApiProxy(api.hostname, Number(api.port));
  await apiProxy.start();
  const kubeconfig = join(opts.dir, 'kubeconfig');
  proxiedKubeconfig(env.kubeconfig, kubeconfig, apiProxy.port);
  // The log filesystem's pressure is reported at once (DiskPressure) but, a soft threshold with an
  // hour's grace, evicts nothing within a drill: the disk-full drill is about a full disk lived
  // through with the standing workload in place; evictions are tested on their own.
  const config = join(opts.dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'apiVersion: nodelet.io/v1alpha1',
      'kind: NodeletConfiguration',
      'evictionHard: {memory.available: 100Mi, imagefs.available: 15%, imagefs.inodesFree: 5%}',
      'evictionSoft: {nodefs.available: 10%, nodefs.inodesFree: 5%}',
      'evictionSoftGracePeriod: {nodefs.available: 1h, nodefs.inodesFree: 1h}',
      '',
    ].join('\n'),
  );
  const flags = [
    '--config', config,
    '--kubeconfig', kubeconfig,
    '--runtime-endpoint', runtime.endpoint,
    '--root-dir', rootDir,
    '--pod-log-root', podLogRoot,
    '--container-logs-dir', join(opts.dir, 'containers'),
    '--static-pod-path', staticPodDir,
    '--eviction-pressure-transition-period', `${PRESSURE_TRANSITION_SECONDS}s`,
    ...(opts.flags ?? []),
  ];
  let current: RunningAgent = await startAgent(opts.nodeName, flags);
  let alive = true;
  const watchExit = (a: RunningAgent) => a.process.once('exit', () => { if (a === current) alive = false; });
  watchExit(current);

  const agent: DrillAgent = {
    nodeName: opts.nodeName,
    get pid() { return current.process.pid!; },
    get localPort() { return current.localPort; },
    rootDir,
    podLogRoot,
    staticPodDir,
    get lines() { return current.lines; },
    async kill() {
      await current.kill();
    },
    async start() {
      current = await startAgent(opts.nodeName, flags);
      alive = true;
      watchExit(current);
    },
    alive: () => alive,
    async get(path: string) {
      const res = await fetch(`http://127.0.0.1:${current.localPort}${path}`);
      if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status}`);
      return res.text();
    },
  };

  return {
    agent,
    runtime,
    apiProxy,
    async teardown() {
      if (alive) await current.stop();
      await apiProxy.stop();
      if (proc) {
        // Whatever a failed drill left in the process runtime goes with it.
        await proc.stop().catch(() => undefined);
        resetProcessRuntime(join(env.clusterDir, `process-drills-${opts.nodeName}`, 'root'));
      }
      unmount(podLogRoot);
      rmSync(opts.dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}
