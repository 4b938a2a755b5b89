// The container runtimes the pipeline tests run against: the test cluster's containerd, and
// nodelet's own process runtime (started here as `nodelet runtime serve`).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CriClient } from '../../src/cri/client.js';
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
  stop(): Promise<void>;
}

export function containerdRuntime(): TestRuntime {
  const env = clusterEnv();
  return {
    name: 'containerd',
    endpoint: env.runtimeEndpoint,
    idScheme: 'containerd',
    handler: 'runc',
    podNetwork: true,
    checkPodIP: (ip) => ipInCidr(ip, env.podCidr),
    stop: async () => undefined,
  };
}

export interface ProcessRuntimeHandle extends TestRuntime {
  process: ChildProcess;
  /** SIGKILL and start again on the same state (a crash and a restart). */
  restart(): Promise<void>;
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
    const child = spawn(join(projectRoot, 'dist/src/cli/main.js'), ['runtime', 'serve', '--socket', socket, '--root', join(dir, 'root'), '--images-dir', join(env.clusterDir, 'images'), '--log-format', 'json', ...extraArgs], {
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    const cri = new CriClient(`unix://${socket}`, { statusTimeoutMs: 1000 });
    try {
      await eventually('the process runtime to serve', 20_000, async () => ((await cri.version('0.1.0')).runtime_name === 'nodelet-process' ? true : undefined));
    } finally {
      cri.close();
    }
    return child;
  };
  const handle: ProcessRuntimeHandle = {
    name: 'process',
    endpoint: `unix://${socket}`,
    idScheme: 'nodelet-process',
    handler: 'process',
    podNetwork: false,
    checkPodIP: (ip, hostIP) => ip === hostIP,
    process: await launch(),
    async restart() {
      const old = handle.process;
      const exited = new Promise((r) => old.once('exit', r));
      old.kill('SIGKILL');
      await exited;
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
export function processRuntimeAgentConfig(dir: string, socketName: string): { config: string; root: string } {
  const env = clusterEnv();
  const root = join(dir, 'root');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // unix socket paths are limited to 107 bytes: a deep checkout puts the socket in the state directory.
  const socket = join(env.clusterDir.length < 60 ? join(env.clusterDir, 'run') : dir, socketName);
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\nruntime: process\nprocessRuntime: {root: ${root}, imagesDir: ${join(env.clusterDir, 'images')}, socket: ${socket}}\n`);
  return { config, root };
}

/** `nodelet runtime reset`: stops and removes whatever is left in a process runtime's state. */
export function resetProcessRuntime(root: string): void {
  const r = spawnSync(join(projectRoot, 'dist/src/cli/main.js'), ['runtime', 'reset', '--root', root], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 120_000 });
  if (r.status !== 0) console.error(`nodelet runtime reset --root ${root} exited ${r.status}`);
}
