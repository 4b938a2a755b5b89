// The real kubelet as a node of the test cluster, on its API server and containerd: the bench's
// second column and the conformance run's reference agent. It runs only while no other agent's
// pods are in that containerd: it kills every pod sandbox it did not start as an orphan. Its
// settings, and why each is needed here, are in bench/README.md.
import * as k8s from '@kubernetes/client-node';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, readlinkSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../../src/cri/client.js';
import { clusterEnv, eventually, projectRoot } from './cluster.js';

export interface KubeletOptions {
  /** The node's name (the kubelet's --hostname-override, and so its Hostname address). */
  node: string;
  maxPods: number;
  /**
   * Serve the node API as on a production node: clients authenticated by certificates of the
   * cluster CA (the API server's kubelet client certificate) or by bearer tokens (TokenReview),
   * each request authorized with a SubjectAccessReview. Without it nobody is let in.
   */
  serveNodeApi?: boolean;
  /**
   * As the kubelet's node e2e suite configures it: the kubelet's cgroup hierarchy (kubepods under
   * cgroup root "/", node allocatable enforced on it) and static pods from a directory.
   */
  nodeE2E?: { staticPodPath: string };
  /** The node API's port (default KUBELET_PORT). */
  port?: number;
}

export interface RunningKubelet {
  node: string;
  pid: number;
  version: string;
  logFile: string;
  /** Its --root-dir (pods' directories under pods/). */
  rootDir: string;
  /** SIGTERM (SIGKILL after 15 s), then everything it leaves: sandboxes, mounts, Node, CSINode, Lease. */
  stop(): Promise<void>;
}

function kubeVersion(): string {
  const m = /^KUBE_VERSION=(\S+)/m.exec(readFileSync(join(projectRoot, 'hack/versions.sh'), 'utf8'));
  if (!m) throw new Error('hack/versions.sh has no KUBE_VERSION');
  return m[1]!;
}

/** The kubelet binary, built once (cached) by hack/build-go-bins.sh. */
export function kubeletBinary(): { path: string; version: string } {
  const version = kubeVersion();
  const path = join(process.env.NODELET_CACHE ?? join(homedir(), '.cache/nodelet'), 'bin', `kubelet-${version}`);
  if (!existsSync(path)) {
    const build = spawnSync(join(projectRoot, 'hack/build-go-bins.sh'), ['kubelet'], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (build.status !== 0 || !existsSync(path)) throw new Error(`hack/build-go-bins.sh kubelet failed (exit ${build.status})`);
  }
  return { path, version };
}

function dirs() {
  const env = clusterEnv();
  const base = join(env.clusterDir, 'kubelet');
  return { env, base, root: join(base, 'root'), pki: join(base, 'pki'), config: join(base, 'config.yaml'), logs: join(env.clusterDir, 'logs/kubelet-pods'), pidFile: join(base, 'kubelet.pid'), logFile: join(base, 'kubelet.log'), clientCa: join(env.clusterDir, 'pki/ca.crt') };
}

/** The kubelet's node API port (off 10250, which `make agent-up`'s nodelet uses). */
export const KUBELET_PORT = 10270;

/** The KubeletConfiguration; bench/README.md says why each setting is there. */
function kubeletConfig(socket: string, podLogsDir: string, opts: KubeletOptions, clientCa: string): string {
  const env = clusterEnv();
  // The API server verifies the node API's certificate (--kubelet-certificate-authority): the
  // kubelet gets the cluster's node serving certificate, as nodelet does.
  const auth = opts.serveNodeApi
    ? `authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: ${clientCa}}}
authorization: {mode: Webhook}
tlsCertFile: ${env.nodeTlsCert}
tlsPrivateKeyFile: ${env.nodeTlsKey}
`
    : '';
  const cgroups = opts.nodeE2E
    ? `cgroupsPerQOS: true
cgroupRoot: /
staticPodPath: ${opts.nodeE2E.staticPodPath}
fileCheckFrequency: 10s
readOnlyPort: 10255
`
    : `cgroupsPerQOS: false
enforceNodeAllocatable: []
`;
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://${socket}
cgroupDriver: cgroupfs
failCgroupV1: false
${cgroups}failSwapOn: false
address: 127.0.0.1
port: ${opts.port ?? KUBELET_PORT}
healthzPort: ${opts.nodeE2E ? 10248 : 10271}
maxPods: ${opts.maxPods}
podLogsDir: ${podLogsDir}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
${auth}`;
}

/** Mount points under `dir` (deepest first), from /proc/self/mountinfo. */
export function mountsUnder(dir: string): string[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => unescape(l.split(' ')[4] ?? ''))
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function stopPid(pid: number, graceMs: number): Promise<void> {
  if (!pidAlive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pidAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (pidAlive(pid)) {
    console.error(`kubelet: kubelet (pid ${pid}) ignored SIGTERM for ${graceMs / 1000} s: SIGKILL`);
    process.kill(pid, 'SIGKILL');
    while (pidAlive(pid)) await new Promise((r) => setTimeout(r, 100));
  }
}

/** A kubelet started earlier and never stopped (its starter was killed): the PID it recorded, if it is still that kubelet. */
async function stopLeftover(pidFile: string, binary: string): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  let exe = '';
  try {
    exe = readlinkSync(`/proc/${pid}/exe`);
  } catch {
    /* gone */
  }
  if (pid > 0 && exe === binary) {
    console.error(`kubelet: stopping the kubelet an earlier run left running (pid ${pid})`);
    await stopPid(pid, 15_000);
  }
  unlinkSync(pidFile);
}

/** Stops and removes the pod sandboxes `match` picks by their labels; returns how many others are left. */
export async function sweepSandboxes(endpoint: string, match: (labels: Record<string, string>) => boolean): Promise<number> {
  const cri = new CriClient(endpoint);
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      const all = await cri.listPodSandbox();
      const ours = all.filter((sb) => match(sb.labels ?? {}));
      if (ours.length === 0) return all.length;
      // Eight at a time: a containerd on 2 cores stops hundreds of sandboxes faster that way than all at once.
      for (let i = 0; i < ours.length; i += 8) {
        await Promise.all(ours.slice(i, i + 8).map(async (sb) => {
          await cri.stopPodSandbox(sb.id).catch(() => undefined);
          await cri.removePodSandbox(sb.id).catch(() => undefined);
        }));
      }
    }
    const left = await cri.listPodSandbox();
    return left.length;
  } finally {
    cri.close();
  }
}

/** Waits until the cluster's containerd has no pod sandbox at all: the kubelet would kill any as an orphan. */
async function requireEmptyContainerd(endpoint: string): Promise<void> {
  const cri = new CriClient(endpoint);
  try {
    await eventually('the containerd to hold no pod sandbox before the kubelet starts (it would kill any it did not start)', 60_000, async () => {
      const left = await cri.listPodSandbox();
      if (left.length > 0) throw new Error(`${left.length} sandboxes left, e.g. ${left.slice(0, 3).map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`).join(', ')}`);
      return true;
    }, 1000);
  } finally {
    cri.close();
  }
}

export async function startKubelet(core: k8s.CoreV1Api, opts: KubeletOptions): Promise<RunningKubelet> {
  const { env, root, pki, config, logs, pidFile, logFile, clientCa } = dirs();
  const node = opts.node;
  const bin = kubeletBinary();
  await stopLeftover(pidFile, bin.path);
  await releaseRoot(root);
  // No kubelet runs now: sandboxes no nodelet made are a dead kubelet's (one killed with the
  // machine, say), and so its own to remove. A nodelet's are left alone, and must be gone.
  await sweepSandboxes(env.runtimeEndpoint, (l) => l['nodelet.io/node-name'] === undefined);
  await requireEmptyContainerd(env.runtimeEndpoint);
  await deleteNodeObjects(core, node);
  for (const d of [root, pki, logs]) mkdirSync(d, { recursive: true });
  writeFileSync(config, kubeletConfig(env.containerdSock, logs, opts, clientCa));
  const log = openSync(logFile, 'w');
  const child: ChildProcess = spawn(bin.path, ['--config', config, '--kubeconfig', env.kubeconfig, '--hostname-override', node, '--root-dir', root, '--cert-dir', pki], { stdio: ['ignore', log, log] });
  closeSync(log);
  const pid = child.pid!;
  writeFileSync(pidFile, String(pid));
  // If the process that started it dies, its kubelet does not outlive it.
  const onExit = () => {
    if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
  };
  process.once('exit', onExit);
  let exited = false;
  child.once('exit', () => (exited = true));
  await eventually(`the kubelet's node ${node} to be Ready (log ${logFile})`, 60_000, async () => {
    if (exited) throw new Error(`the kubelet exited; log: ${logFile}`);
    const n = await core.readNode({ name: node }).catch(() => undefined);
    return n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
  }, 250);
  return {
    node,
    pid,
    version: bin.version,
    logFile,
    rootDir: root,
    async stop() {
      await stopPid(pid, 15_000);
      process.removeListener('exit', onExit);
      if (existsSync(pidFile)) unlinkSync(pidFile);
      // Nothing else used this containerd while the kubelet ran: what it left is its own.
      await sweepSandboxes(env.runtimeEndpoint, () => true);
      await releaseRoot(root);
      // Symlinks the kubelet keeps in /var/log/containers to its pods' logs.
      removeLinksInto('/var/log/containers', logs);
      rmSync(logs, { recursive: true, force: true });
      await deleteNodeObjects(core, node);
    },
  };
}

/** Removes the symbolic links in `dir` that lead under `target` (an agent's legacy log links to its logs). */
export function removeLinksInto(dir: string, target: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return; // no such directory
  }
  for (const n of names) {
    try {
      if (readlinkSync(join(dir, n)).startsWith(`${target}/`)) unlinkSync(join(dir, n));
    } catch {
      /* not a link */
    }
  }
}

/** Unmounts what the kubelet left under its root-dir (its own bind mount of it, pods' volumes), then empties it. */
async function releaseRoot(root: string): Promise<void> {
  for (const m of mountsUnder(root)) {
    if (spawnSync('umount', [m]).status !== 0) spawnSync('umount', ['-l', m]);
  }
  const left = mountsUnder(root);
  if (left.length > 0) throw new Error(`could not unmount ${left.join(', ')}`);
  // A fresh root-dir each time: no checkpoints or pod directories of an earlier run.
  rmSync(root, { recursive: true, force: true });
}

/** The Node and what the kubelet creates beside it (its Lease and CSINode), removed at once. */
export async function deleteNodeObjects(core: k8s.CoreV1Api, node: string): Promise<void> {
  const env = clusterEnv();
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(env.kubeconfig);
  await core.deleteNode({ name: node }).catch(() => undefined);
  await kc.makeApiClient(k8s.StorageV1Api).deleteCSINode({ name: node }).catch(() => undefined);
  await kc.makeApiClient(k8s.CoordinationV1Api).deleteNamespacedLease({ name: node, namespace: 'kube-node-lease' }).catch(() => undefined);
}
