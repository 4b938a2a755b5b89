// The container runtimes the pipeline tests run against: the test cluster's containerd, and
// nodelet's own process runtime (started here as `nodelet runtime serve`).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CriClient } from '../../src/cri/client.js';
import type { AgentPlace } from './agent.js';
import { clusterEnv, eventually, ipInCidr, projectRoot } from './cluster.js';

export interface TestRuntime {
  name: 'containerd' | 'process';
  endpoint: string;
  /** containerd:// or nodelet-process:// */
  idScheme: string;
  /** A CRI runtime handler it has (what a RuntimeClass's `handler` names). */
  handler: string;
  /** Whether a pod gets an IP of its own (a network namespace on the bridge) or the host's. */
  podNetwork: boolean;
  checkPodIP(ip: string, hostIP: string): boolean;
  /** Where it runs, and its agents with it, when not on this machine (a lab node); `endpoint` is then the same path on both sides. */
  place?: AgentPlace;
  stop(): Promise<void>;
}

/** What a runtime of each kind is, wherever it runs: its name, container ID scheme and CRI handler. */
export const RUNTIME_KINDS = {
  containerd: { name: 'containerd', idScheme: 'containerd', handler: 'runc', podNetwork: true },
  process: { name: 'process', idScheme: 'nodelet-process', handler: 'process', podNetwork: true },
} as const;

/** Waits until the CRI endpoint answers Version as `runtimeName` (containerd, nodelet-process). */
export async function criServes(endpoint: string, runtimeName: string, timeoutMs: number, intervalMs = 100, statusTimeoutMs = 1000): Promise<void> {
  const cri = new CriClient(endpoint, { statusTimeoutMs });
  try {
    await eventually(`${runtimeName} to serve at ${endpoint}`, timeoutMs, async () => ((await cri.version('0.1.0').catch(() => undefined))?.runtime_name === runtimeName ? true : undefined), intervalMs);
  } finally {
    cri.close();
  }
}

export function containerdRuntime(): TestRuntime {
  const env = clusterEnv();
  return {
    ...RUNTIME_KINDS.containerd,
    endpoint: env.runtimeEndpoint,
    checkPodIP: (ip) => ipInCidr(ip, env.podCidr),
    stop: async () => undefined,
  };
}

export interface ProcessRuntimeHandle extends TestRuntime {
  process: ChildProcess;
  /** SIGKILL and start again on the same state (a crash and a restart). */
  restart(): Promise<void>;
  /** SIGKILL only (its containers' monitors keep running); `start` brings it back on the same state. */
  crash(): Promise<void>;
  start(): Promise<void>;
}

/** Starts `nodelet runtime serve` on a socket of its own, with the test images as its pull source. */
export async function processRuntime(tag: string, extraArgs: string[] = []): Promise<ProcessRuntimeHandle> {
  const env = clusterEnv();
  const dir = join(env.clusterDir, `process-${tag}`);
  const socket = join(env.clusterDir.length < 60 ? join(env.clusterDir, 'run') : dir, `process-${tag}.sock`);
  mkdirSync(dir, { recursive: true });
  const launch = async (): Promise<ChildProcess> => {
    // Its log goes to a file beside its state, not into the test report.
    const log = openSync(join(dir, 'runtime.log'), 'a');
    // Its pods' networks on the cluster's bridge, addressed from the same pool as containerd's.
    const cni = ['--cni-conf-dir', join(env.clusterDir, 'cni/net.d')];
    const child = spawn(join(projectRoot, 'dist/src/cli/main.js'), ['runtime', 'serve', '--socket', socket, '--root', join(dir, 'root'), '--images-dir', join(env.clusterDir, 'images'), ...cni, '--log-format', 'json', ...extraArgs], {
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    await criServes(`unix://${socket}`, 'nodelet-process', 20_000);
    return child;
  };
  const handle: ProcessRuntimeHandle = {
    ...RUNTIME_KINDS.process,
    endpoint: `unix://${socket}`,
    checkPodIP: (ip) => ipInCidr(ip, env.podCidr),
    process: await launch(),
    async restart() {
      await handle.crash();
      await handle.start();
    },
    async crash() {
      const old = handle.process;
      if (old.exitCode !== null || old.signalCode !== null) return;
      const exited = new Promise((r) => old.once('exit', r));
      old.kill('SIGKILL');
      await exited;
    },
    async start() {
      handle.process = await launch();
    },
    async stop() {
      const exited = new Promise((r) => handle.process.once('exit', r));
      handle.process.kill('SIGTERM');
      await exited;
    },
  };
  return handle;
}

/**
 * A fresh directory `dir` with a NodeletConfiguration in which the agent runs its own process
 * runtime (state under `dir/root`, images from the cluster's image archives). Returns the file.
 */
export function processRuntimeAgentConfig(dir: string, socketName: string): { config: string; root: string; socket: string } {
  const env = clusterEnv();
  const root = join(dir, 'root');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // unix socket paths are limited to 107 bytes: a deep checkout puts the socket in the state directory.
  const socket = join(env.clusterDir.length < 60 ? join(env.clusterDir, 'run') : dir, socketName);
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\nruntime: process\nprocessRuntime: {root: ${root}, imagesDir: ${join(env.clusterDir, 'images')}, socket: ${socket}, cniConfDir: ${join(env.clusterDir, 'cni/net.d')}}\n`);
  return { config, root, socket };
}

/** `nodelet runtime reset`: stops and removes whatever is left in a process runtime's state. */
export function resetProcessRuntime(root: string): void {
  const r = spawnSync(join(projectRoot, 'dist/src/cli/main.js'), ['runtime', 'reset', '--root', root], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 120_000 });
  if (r.status !== 0) console.error(`nodelet runtime reset --root ${root} exited ${r.status}`);
}

/** A runtime whose CNI configuration directory is empty at start (its network is then not ready). */
export interface RuntimeWithoutNetwork extends TestRuntime {
  cniConfDir: string;
  /** Gives it the test cluster's pod network (the same bridge), as a node's CNI setup would. */
  addPodNetwork(): void;
}

export type PrivateContainerd = RuntimeWithoutNetwork;

/** The process runtime with a CNI configuration directory of its own, empty at start. */
export async function processRuntimeWithoutNetwork(tag: string): Promise<RuntimeWithoutNetwork & ProcessRuntimeHandle> {
  const env = clusterEnv();
  const cniConfDir = join(env.clusterDir, `process-${tag}`, 'net.d');
  rmSync(cniConfDir, { recursive: true, force: true });
  mkdirSync(cniConfDir, { recursive: true });
  const rt = await processRuntime(tag, ['--cni-conf-dir', cniConfDir]);
  return Object.assign(rt, {
    cniConfDir,
    addPodNetwork() {
      copyFileSync(join(env.clusterDir, 'cni/net.d/10-nodelet.conflist'), join(cniConfDir, '10-nodelet.conflist'));
    },
  });
}

/**
 * A containerd of its own (root, state, socket and CNI directory apart from the test cluster's),
 * with the test images, for what cannot be done to the shared one: here, a node whose runtime has
 * no pod network yet.
 */
export async function privateContainerd(tag: string): Promise<PrivateContainerd> {
  const env = clusterEnv();
  const dir = join(env.clusterDir, `containerd-${tag}`);
  rmSync(dir, { recursive: true, force: true });
  const cniConfDir = join(dir, 'net.d');
  mkdirSync(cniConfDir, { recursive: true });
  const socket = join(env.clusterDir.length < 60 ? join(env.clusterDir, 'run') : dir, `containerd-${tag}.sock`);
  const shared = readFileSync(join(env.clusterDir, 'containerd/config.toml'), 'utf8');
  const config = shared
    .replace(/^root = .*$/m, `root = "${join(dir, 'root')}"`)
    .replace(/^state = .*$/m, `state = "${join(dir, 'state')}"`)
    .replace(/^(\s*address = )".*\.ttrpc"$/m, `$1"${socket}.ttrpc"`)
    .replace(/^(\s*address = )"(?!.*\.ttrpc").*\.sock"$/m, `$1"${socket}"`)
    .replace(/^(\s*path = ).*$/m, `$1"${join(dir, 'opt')}"`)
    .replace(/^(\s*conf_dir = ).*$/m, `$1"${cniConfDir}"`);
  writeFileSync(join(dir, 'config.toml'), config);
  const log = openSync(join(dir, 'containerd.log'), 'a');
  const child = spawn('containerd', ['--config', join(dir, 'config.toml'), '--log-level', 'warn'], { stdio: ['ignore', log, log] });
  closeSync(log);
  const endpoint = `unix://${socket}`;
  await criServes(endpoint, 'containerd', 30_000, 200);
  const images = join(env.clusterDir, 'images');
  for (const line of readFileSync(join(images, 'images.txt'), 'utf8').split('\n')) {
    const [file, ref] = line.split(' ');
    if (!file || (ref !== env.pauseImage && ref !== env.testImage)) continue;
    const r = spawnSync('ctr', ['-a', socket, '-n', 'k8s.io', 'images', 'import', '--no-unpack=false', join(images, file)], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`importing ${ref} into the private containerd: ${r.stderr}`);
  }
  return {
    ...RUNTIME_KINDS.containerd,
    endpoint,
    checkPodIP: (ip) => ipInCidr(ip, env.podCidr),
    cniConfDir,
    addPodNetwork() {
      copyFileSync(join(env.clusterDir, 'cni/net.d/10-nodelet.conflist'), join(cniConfDir, '10-nodelet.conflist'));
    },
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      // Its shims outlive it; `nodelet`'s cleanup removed the pods, and what is left goes with the directory.
      spawnSync('umount', ['-R', join(dir, 'state')], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}
