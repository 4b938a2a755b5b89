// Test access to the cluster that hack/cluster-up.sh started: its .cluster/env, read once.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface ClusterEnv {
  clusterDir: string;
  kubeconfig: string;
  apiserver: string;
  runtimeEndpoint: string;
  containerdSock: string;
  podCidr: string;
  pauseImage: string;
  testImage: string;
  testImage2: string;
  podLogRoot: string;
  kubectl: string;
  crictl: string;
  /** The nodes' serving certificate and key for the node API, and the CA its callers' certificates come from. */
  nodeTlsCert: string;
  nodeTlsKey: string;
  clientCA: string;
  /** The second API server the node e2e suite uses (it dials nodes by InternalIP; up on demand), the node address it reaches them at, the admin's token. */
  nodeE2EApiserver: string;
  nodeApiNetnsIP: string;
  adminTokenFile: string;
  /** The image registries (host:port; TLS from the CA under registryCertsDir/<host>/ca.crt): private takes user/password, public anyone. */
  registry: string;
  publicRegistry: string;
  registryUser: string;
  registryPassword: string;
  registryCertsDir: string;
  /** busybox images in them: private/busybox:1 (and :2) and public/busybox:1. */
  privateImage: string;
  publicImage: string;
  /** How many times longer than here a wait may take on this cluster's nodes (the lab's: one CPU, user-mode Linux); 1 when absent. */
  slowness?: number;
}

/** A loopback port free at the time of asking (for an agent's plain-HTTP ports, which take no 0). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

let cached: ClusterEnv | undefined;

/**
 * The cluster this test process works against instead of the test cluster's (the lab's, whose
 * nodes the suites then run their agents on). Called before anything reads clusterEnv().
 */
export function useClusterEnv(env: ClusterEnv): void {
  if (cached && cached !== env) throw new Error('useClusterEnv: clusterEnv() was read before, the process would mix two clusters');
  cached = env;
}

/** Reads .cluster/env; throws a clear error when the cluster was never started. */
export function clusterEnv(): ClusterEnv {
  if (cached) return cached;
  const file = process.env.NODELET_CLUSTER_DIR ? join(process.env.NODELET_CLUSTER_DIR, 'env') : join(projectRoot, '.cluster/env');
  if (!existsSync(file)) throw new Error(`${file} not found: start the test cluster with 'make cluster-up'`);
  const vars: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^export (\w+)='([^']*)'$/.exec(line);
    if (m) vars[m[1]!] = m[2]!;
  }
  const get = (k: string): string => {
    const v = vars[k];
    if (v === undefined) throw new Error(`${file} has no ${k}: re-run 'make cluster-up'`);
    return v;
  };
  cached = {
    clusterDir: get('NODELET_CLUSTER_DIR'),
    kubeconfig: get('KUBECONFIG'),
    apiserver: get('NODELET_APISERVER'),
    runtimeEndpoint: get('CONTAINER_RUNTIME_ENDPOINT'),
    containerdSock: get('NODELET_CONTAINERD_SOCK'),
    podCidr: get('NODELET_POD_CIDR'),
    pauseImage: get('NODELET_PAUSE_IMAGE'),
    testImage: get('NODELET_TEST_IMAGE'),
    testImage2: get('NODELET_TEST_IMAGE_2'),
    podLogRoot: get('NODELET_POD_LOG_ROOT'),
    kubectl: get('NODELET_KUBECTL'),
    crictl: get('NODELET_CRICTL'),
    nodeTlsCert: get('NODELET_NODE_TLS_CERT'),
    nodeTlsKey: get('NODELET_NODE_TLS_KEY'),
    clientCA: get('NODELET_CLIENT_CA'),
    nodeE2EApiserver: get('NODELET_NODE_E2E_APISERVER'),
    nodeApiNetnsIP: get('NODELET_NODE_API_NETNS_IP'),
    adminTokenFile: get('NODELET_ADMIN_TOKEN_FILE'),
    registry: get('NODELET_REGISTRY'),
    publicRegistry: get('NODELET_PUBLIC_REGISTRY'),
    registryUser: get('NODELET_REGISTRY_USER'),
    registryPassword: get('NODELET_REGISTRY_PASSWORD'),
    registryCertsDir: get('NODELET_REGISTRY_CERTS_DIR'),
    privateImage: get('NODELET_PRIVATE_IMAGE'),
    publicImage: get('NODELET_PUBLIC_IMAGE'),
  };
  return cached;
}

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs` with `what`. */
export async function eventually<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, intervalMs = 100): Promise<T> {
  // Scaled for the cluster the process works against (what was picked, without reading .cluster/env for it).
  timeoutMs *= cached?.slowness ?? 1;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** True when `ip` (IPv4) is inside `cidr`. */
export function ipInCidr(ip: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  const toInt = (a: string) => a.split('.').reduce((acc, o) => (acc << 8) + Number(o), 0) >>> 0;
  const bits = Number(bitsText);
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return (toInt(ip) & mask) === (toInt(base!) & mask);
}
