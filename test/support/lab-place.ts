// The integration suites on a lab node (README "The lab"): the lab's cluster as the tests' cluster,
// a node of it as the place their agents and runtimes run (cgroup v2, one CPU, user-mode Linux).
// Everything crosses through the node's exec door (hack/lab.sh exec): the agent itself, its
// read-only port, and the runtime's CRI socket, which is one path on both sides (in the node the
// runtime's own socket or a link to it, on this machine a door to it), so the flags and endpoints
// the suites pass mean the same on both.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { AgentPlace } from './agent.js';
import { freePort, ipInCidr, projectRoot, type ClusterEnv } from './cluster.js';
import { KUBECTL, LAB_API_PORT, LAB_DIR, LAB_NETNS, labEnv, labSh0 } from './lab.js';
import { criServes, RUNTIME_KINDS, type TestRuntime } from './runtimes.js';
import type { KubeletNode } from './suites/node-api.js';

const NONE = '(the lab has none)';
const BIN = join(process.env.HOME ?? '/root', '.cache/nodelet/bin');

/** The lab's cluster in the form of the test cluster's (.cluster/env); what it lacks says so. */
export function labClusterEnv(): ClusterEnv {
  return {
    clusterDir: LAB_DIR,
    kubeconfig: join(LAB_DIR, 'kubeconfig'),
    apiserver: `https://127.0.0.1:${LAB_API_PORT}`,
    // Each node's runtime is reached through its place (labContainerd, labProcessRuntime).
    runtimeEndpoint: NONE,
    containerdSock: NONE,
    podCidr: '10.251.0.0/16',
    pauseImage: 'nodelet.test/pause:1',
    testImage: 'nodelet.test/busybox:1',
    testImage2: 'nodelet.test/busybox:2',
    podLogRoot: NONE,
    kubectl: KUBECTL,
    crictl: join(BIN, 'crictl-v1.37.0'),
    nodeTlsCert: NONE,
    nodeTlsKey: NONE,
    clientCA: join(LAB_DIR, 'pki/ca.crt'),
    nodeE2EApiserver: NONE,
    nodeApiNetnsIP: NONE,
    adminTokenFile: NONE,
    registry: NONE,
    publicRegistry: NONE,
    registryUser: NONE,
    registryPassword: NONE,
    registryCertsDir: NONE,
    privateImage: NONE,
    publicImage: NONE,
    // A pod starts some 40 times slower in a lab node than here; the suites' waits are sized for here.
    slowness: 4,
  };
}

/** A unix socket path of this lab, short enough for sun_path, the same in the node and here. */
function socketPath(name: string): string {
  const p = join(LAB_DIR, 'run', name);
  return p.length <= 100 ? p : join('/tmp', `${LAB_NETNS}-${name}`);
}

/** A lab node as the place the suites' agents and runtimes run. */
export class LabNode implements AgentPlace {
  readonly ip: string;
  readonly podCidr: string;
  readonly dir: string;

  constructor(readonly name: string) {
    const m = /^lab-(\d+)$/.exec(name);
    if (!m) throw new Error(`no such lab node: ${name}`);
    // As hack/lab.sh numbers them.
    this.ip = `10.250.0.${10 + Number(m[1])}`;
    this.podCidr = `10.251.${m[1]}.0/24`;
    this.dir = join(LAB_DIR, 'nodes', name);
  }

  spawn(argv: string[], stdin: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
    return spawn(join(projectRoot, 'hack/lab.sh'), ['exec', this.name, '--', ...argv], { env: labEnv(), stdio: [stdin, 'pipe', 'pipe'] });
  }

  agent(nodeName: string): { flags: string[]; rootDir: string; podLogRoot: string } {
    const pki = join(LAB_DIR, 'pki');
    return {
      flags: [
        '--kubeconfig', join(LAB_DIR, 'in-node.kubeconfig'),
        // The API server dials a node's InternalIP, and checks its serving certificate for it.
        '--node-ip', this.ip,
        '--address', this.ip,
        '--tls-cert-file', join(pki, `serving-${this.name}.crt`),
        '--tls-private-key-file', join(pki, `serving-${this.name}.key`),
        '--client-ca-file', join(pki, 'ca.crt'),
      ],
      // Pods' directories in the node's own memory; their logs in its scratch directory, which this machine reads.
      rootDir: `/var/lib/nodelet-test/${nodeName}`,
      podLogRoot: join(this.dir, 'pod-logs'),
    };
  }

  forwardPort(port: number): Promise<() => void> {
    // The agents here serve on the node's address (--address), the read-only port too.
    return this.door({ port, host: '127.0.0.1' }, `TCP:${this.ip}:${port}`);
  }

  async nodeApi(port: number): Promise<{ port: number; servername: string; close(): void }> {
    const here = await freePort();
    const close = await this.door({ port: here, host: '127.0.0.1' }, `TCP:${this.ip}:${port}`);
    // The node's serving certificate names it (and its address, which this machine cannot reach).
    return { port: here, servername: this.name, close };
  }

  /**
   * Serves `listen` on this machine; each connection to it is one to `target` (a socat address)
   * in the node, through an exec of socat there. Resolves to the door's closer.
   */
  async door(listen: { path: string } | { port: number; host: string }, target: string): Promise<() => void> {
    const open = new Set<{ sock: Socket; child: ChildProcess }>();
    const server: Server = createServer((sock) => {
      const child = this.spawn(['socat', 'STDIO', target], 'pipe');
      const conn = { sock, child };
      open.add(conn);
      sock.pipe(child.stdin!);
      child.stdin!.on('error', () => undefined);
      child.stdout!.pipe(sock);
      child.stderr!.resume();
      sock.on('error', () => child.kill('SIGKILL'));
      sock.on('close', () => child.kill('SIGKILL'));
      child.on('exit', () => {
        open.delete(conn);
        sock.end();
      });
    });
    if ('path' in listen) rmSync(listen.path, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if ('path' in listen) server.listen(listen.path, resolve);
      else server.listen(listen.port, listen.host, resolve);
    });
    return () => {
      server.close();
      for (const c of open) {
        c.sock.destroy();
        c.child.kill('SIGKILL');
      }
    };
  }
}

/** The node's containerd (its boot started it), for the suites' agents there. */
let containerdDoors = 0;

export async function labContainerd(node: LabNode): Promise<TestRuntime> {
  // A door of its own per suite: two suites on one node's containerd must not close each other's.
  const socket = socketPath(`containerd-${node.name}-${++containerdDoors}.sock`);
  // In the node the path is a link to containerd's socket; here, a door to it.
  await labSh0(node.name, `mkdir -p '${join(socket, '..')}' && ln -sfn /run/containerd/containerd.sock '${socket}'`);
  const close = await node.door({ path: socket }, 'UNIX-CONNECT:/run/containerd/containerd.sock');
  const endpoint = `unix://${socket}`;
  await criServes(endpoint, 'containerd', 30_000, 500, 5000);
  return {
    ...RUNTIME_KINDS.containerd,
    endpoint,
    checkPodIP: (ip) => ipInCidr(ip, node.podCidr),
    place: node,
    stop: async () => close(),
  };
}

/** `nodelet runtime serve` in the node, a runtime of the suite's own beside whatever the node runs. */
export async function labProcessRuntime(node: LabNode, tag: string): Promise<TestRuntime> {
  const socket = socketPath(`process-${node.name}-${tag}.sock`);
  const root = `/var/lib/nodelet-test/process-${tag}`;
  const log = createWriteStream(join(node.dir, 'log', `process-${tag}.log`), { flags: 'a' });
  const child = node.spawn([join(projectRoot, 'dist/src/cli/main.js'), 'runtime', 'serve', '--socket', socket, '--root', root, '--images-dir', join(LAB_DIR, 'images'), '--cni-conf-dir', '/etc/cni/net.d', '--log-format', 'json']);
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise((r) => child.once('exit', r));
  // The door only once the runtime has its socket in the node: this machine's socket at the same
  // path must not be what the node's overlay shows it first.
  await labSh0(node.name, `for _ in $(seq 1 600); do [ -S '${socket}' ] && exit 0; sleep 0.1; done; echo 'no ${socket}' >&2; exit 1`, 90_000);
  const close = await node.door({ path: socket }, `UNIX-CONNECT:${socket}`);
  const endpoint = `unix://${socket}`;
  await criServes(endpoint, 'nodelet-process', 60_000, 500, 5000);
  return {
    ...RUNTIME_KINDS.process,
    endpoint,
    checkPodIP: (ip) => ipInCidr(ip, node.podCidr),
    place: node,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      close();
      rmSync(socket, { force: true });
    },
  };
}

/** The kubelet a lab node runs (LAB_AGENTS' kubelet), to observe beside nodelet's. */
export async function labKubelet(node: LabNode): Promise<KubeletNode> {
  const api = await node.nodeApi(10250);
  return { node: node.name, api, stop: async () => api.close() };
}
