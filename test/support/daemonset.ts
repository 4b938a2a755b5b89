// nodelet as a DaemonSet on a real kubelet node, as an operator installs it: the real kubelet
// v1.37.2 runs as node `host-0` on the test cluster's containerd, nodelet's image (built by
// hack/build-image.sh, no engine) is imported there, and deploy/ is applied with `kubectl apply -k`
// through an overlay that only says where this machine keeps the host's directories (the state
// directory on a shared mount, as / is on a systemd host), which image tag to run, that the API
// server is on loopback (no kube-proxy here to route the `kubernetes` Service's address), and that
// the node API and /healthz listen on loopback only.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { clusterEnv, eventually, projectRoot } from './cluster.js';
import { core } from './kube.js';
import { deleteNodeObjects, mountsUnder, startKubelet, sweepSandboxes, type RunningKubelet } from './kubelet.js';

export const HOST_NODE = 'host-0';
export const NODELET_NODE = `${HOST_NODE}-nodelet`;
export const IMAGE_NAME = 'nodelet.test/nodelet';

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function kubectl(args: string[], input?: string, timeoutMs = 60_000): Run {
  const env = clusterEnv();
  const r = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { input, encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** kubectl that must succeed: its output, or an error with what it said. */
export function kubectlOk(args: string[], input?: string, timeoutMs?: number): string {
  const r = kubectl(args, input, timeoutMs);
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

function sh(cmd: string, args: string[], timeoutMs = 600_000): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${(r.stderr ?? '').trim().split('\n').slice(-5).join(' | ')}`);
  return r.stdout;
}

/** nodelet's image at `tag`, built (reproducibly: an unchanged tree rebuilds the same digest) and imported into the kubelet's containerd. */
export function buildAndImportImage(tag: string): { ref: string; archive: string } {
  const env = clusterEnv();
  const out = sh(join(projectRoot, 'hack/build-image.sh'), ['--tag', tag]);
  const archive = join(projectRoot, 'dist/image', `nodelet_${tag}.tar`);
  if (!existsSync(archive)) throw new Error(`hack/build-image.sh did not write ${archive}: ${out}`);
  sh('ctr', ['-a', env.containerdSock, '-n', 'k8s.io', 'images', 'import', archive]);
  return { ref: `${IMAGE_NAME}:${tag}`, archive };
}

export interface HostDirs {
  base: string;
  /** The host's /var/lib/nodelet: nodelet's state, its process runtime's root, its certificates. */
  state: string;
  logs: string;
  overlay: string;
  /** The process runtime's CRI socket, as the host sees it. */
  runtimeSocket: string;
  /** nodelet's client certificate and key (its node identity), as stored on the host. */
  clientCert: string;
}

export function hostDirs(): HostDirs {
  const base = join(clusterEnv().clusterDir, 'daemonset', HOST_NODE);
  const state = join(base, 'state');
  return { base, state, logs: join(base, 'logs'), overlay: join(clusterEnv().clusterDir, 'daemonset', 'overlay'), runtimeSocket: join(state, 'process', 'cri.sock'), clientCert: join(state, 'pki', 'nodelet-client-current.pem') };
}

/** The host's state directory as a shared mount of its own (Bidirectional propagation asks for one). */
function sharedStateDir(d: HostDirs): void {
  mkdirSync(d.state, { recursive: true });
  mkdirSync(d.logs, { recursive: true });
  if (!mountsUnder(d.state).includes(d.state)) sh('mount', ['--bind', d.state, d.state]);
  sh('mount', ['--make-rshared', d.state]);
}

/** Whatever an earlier DaemonSet left on the host: its containers, mounts and files. */
export function releaseHost(d: HostDirs): void {
  // `nodelet runtime reset` where the pod saw the state (/var/lib/nodelet: its records name paths
  // there), in a mount namespace of its own so that nothing of this is seen on the host.
  if (existsSync(join(d.state, 'process'))) {
    const script = 'mount -t tmpfs tmpfs /var/lib && mkdir /var/lib/nodelet && mount --rbind "$1" /var/lib/nodelet && exec "$2" runtime reset --root /var/lib/nodelet/process';
    const r = spawnSync('unshare', ['-m', '--propagation', 'unchanged', 'sh', '-c', script, 'sh', d.state, join(projectRoot, 'dist/src/cli/main.js')], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 120_000 });
    if (r.status !== 0) console.error(`nodelet runtime reset of ${d.state} exited ${r.status}`);
  }
  for (const m of mountsUnder(d.state)) {
    if (spawnSync('umount', [m]).status !== 0) spawnSync('umount', ['-l', m]);
  }
  // The pods' bridge the DaemonSet's CNI configuration made on the host.
  spawnSync('ip', ['link', 'del', 'nodelet1'], { stdio: 'ignore' });
  // The pods' cgroups the entrypoint made (its default root, /nodelet/<host node>), now empty.
  spawnSync(join(projectRoot, 'deploy/cgroup-root.sh'), ['remove', `/nodelet/${HOST_NODE}`], { stdio: 'ignore' });
  rmSync(d.base, { recursive: true, force: true });
}

/** The overlay on deploy/: host paths, the image tag, the API server's loopback address. */
export function writeOverlay(d: HostDirs, tag: string): void {
  const env = clusterEnv();
  mkdirSync(d.overlay, { recursive: true });
  const apiPort = new URL(env.apiserver).port;
  // The node API and /healthz on loopback: the API server dials this machine's name, which resolves
  // there, and no test traffic goes to the machine's other addresses (the node's InternalIP).
  const config = readFileSync(join(projectRoot, 'deploy/config.yaml'), 'utf8')
    .replace(/^address: .*$/m, 'address: 127.0.0.1')
    .replace(/^healthzBindAddress: .*$/m, 'healthzBindAddress: 127.0.0.1');
  writeFileSync(join(d.overlay, 'config.yaml'), config);
  writeFileSync(
    join(d.overlay, 'kustomization.yaml'),
    `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ${relative(d.overlay, join(projectRoot, 'deploy'))}
images:
  - {name: ${IMAGE_NAME}, newTag: "${tag}"}
configMapGenerator:
  - {name: nodelet-config, namespace: kube-system, behavior: replace, files: [config.yaml]}
generatorOptions:
  disableNameSuffixHash: true
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: DaemonSet
      metadata: {name: nodelet, namespace: kube-system}
      spec:
        template:
          spec:
            nodeSelector: {kubernetes.io/hostname: ${HOST_NODE}}
            containers:
              - name: nodelet
                env:
                  - {name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}
                  - {name: KUBERNETES_SERVICE_PORT, value: "${apiPort}"}
                  - {name: NODELET_POD_CIDR, value: 10.218.0.0/16}
                  - {name: NODELET_BRIDGE, value: nodelet1}
                  - {name: NODELET_IP_MASQ, value: "false"}
                livenessProbe: {httpGet: {host: 127.0.0.1}}
            volumes:
              - {name: state, hostPath: {path: ${d.state}}}
              - {name: logs, hostPath: {path: ${d.logs}}}
              - {name: registry-certs, hostPath: {path: ${env.registryCertsDir}}}
  # The approver too reaches the API server on loopback here, so it shares the host's network.
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: nodelet-csr-approver, namespace: kube-system}
      spec:
        template:
          spec:
            hostNetwork: true
            nodeSelector: {kubernetes.io/hostname: ${HOST_NODE}}
            containers:
              - name: approver
                env:
                  - {name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}
                  - {name: KUBERNETES_SERVICE_PORT, value: "${apiPort}"}
`,
  );
}

export interface DaemonSetCluster {
  kubelet: RunningKubelet;
  dirs: HostDirs;
  stop(): Promise<void>;
}

/** The kubelet as node host-0, on the state of a fresh host. */
export async function startHostNode(): Promise<DaemonSetCluster> {
  const dirs = hostDirs();
  await removeDaemonSet(dirs);
  releaseHost(dirs);
  sharedStateDir(dirs);
  await deleteNodeObjects(core, NODELET_NODE);
  const kubelet = await startKubelet(core, { node: HOST_NODE, maxPods: 20 });
  return {
    kubelet,
    dirs,
    async stop() {
      await removeDaemonSet(dirs);
      // What the DaemonSet's nodelet ran is the host's until someone removes it, as with a dead kubelet.
      releaseHost(dirs);
      await kubelet.stop();
      await deleteNodeObjects(core, NODELET_NODE);
    },
  };
}

/**
 * The DaemonSet and what it applied (its config, RBAC), its pods deleted outright (an earlier run's
 * kubelet may be gone), and their containers with them: no nodelet of an earlier run goes on.
 */
export async function removeDaemonSet(d: HostDirs): Promise<void> {
  if (existsSync(join(d.overlay, 'kustomization.yaml'))) kubectl(['delete', '-k', d.overlay, '--ignore-not-found', '--wait=false']);
  kubectl(['-n', 'kube-system', 'delete', 'pod', '-l', 'app.kubernetes.io/name=nodelet', '--ignore-not-found', '--grace-period=0', '--force']);
  await sweepSandboxes(clusterEnv().runtimeEndpoint, (l) => l['io.kubernetes.pod.namespace'] === 'kube-system' && (l['io.kubernetes.pod.name'] ?? '').startsWith('nodelet-'));
}

/** A namespace and its pods gone, even where no agent is left to confirm their end. */
export async function forceDeleteNamespace(ns: string): Promise<void> {
  kubectl(['delete', 'namespace', ns, '--ignore-not-found', '--wait=false']);
  await eventually(`namespace ${ns} to be gone`, 120_000, async () => {
    kubectl(['-n', ns, 'delete', 'pods', '--all', '--grace-period=0', '--force', '--ignore-not-found']);
    return kubectl(['get', 'namespace', ns]).status !== 0 ? true : undefined;
  }, 2000);
}

/** nodelet's client certificate (its node identity) as the host sees it: the current link names a file beside it. */
export function clientCertificate(d: HostDirs): string {
  return join(d.state, 'pki', basename(readlinkSync(d.clientCert)));
}

/** Approves the node API's serving certificate requests of the nodelet node, as an approver (kubelet-csr-approver) or an admin does. */
export function approveServingCsrs(node: string): number {
  const list = JSON.parse(kubectlOk(['get', 'csr', '-o', 'json'])) as { items: Array<{ metadata: { name: string }; spec: { signerName: string; username: string }; status?: { conditions?: unknown[] } }> };
  const pending = list.items.filter((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.spec.username === `system:node:${node}` && !(c.status?.conditions ?? []).length);
  for (const c of pending) kubectlOk(['certificate', 'approve', c.metadata.name]);
  return pending.length;
}
