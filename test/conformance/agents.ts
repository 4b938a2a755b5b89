// The agents a conformance run measures, each as the cluster's only schedulable node: nodelet on
// the test cluster's containerd, nodelet with its process runtime, and the real kubelet on that
// same containerd. One at a time: the kubelet kills every pod sandbox it did not start.
import type * as k8s from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startAgent, type RunningAgent } from '../support/agent.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';
import { deleteNodeObjects, KUBELET_PORT, startKubelet, sweepSandboxes } from '../support/kubelet.js';
import { processRuntimeAgentConfig, resetProcessRuntime } from '../support/runtimes.js';

export type AgentKind = 'nodelet' | 'process' | 'kubelet';
export const AGENT_KINDS: AgentKind[] = ['nodelet', 'process', 'kubelet'];

export const AGENT_TITLES: Record<AgentKind, string> = {
  nodelet: 'nodelet (containerd)',
  process: 'nodelet (process runtime)',
  kubelet: 'kubelet v1.37.2 (containerd)',
};

export interface ConformanceAgent {
  kind: AgentKind;
  node: string;
  version: string;
  logFile: string;
  /** The node API's port on this machine's loopback. */
  port: number;
  /** Its CRI endpoint (unix://...), which the node e2e suite also calls. */
  runtimeEndpoint: string;
  stop(): Promise<void>;
}

/**
 * Makes the cluster ready for one agent as its only node: Nodes left by earlier runs (not Ready,
 * or Ready on a Lease nobody renews) are deleted so that nothing is scheduled there; a node that
 * is alive is another agent's, and the run refuses to share the cluster with it.
 */
export async function clearNodes(core: k8s.CoreV1Api, coordination: k8s.CoordinationV1Api, now = Date.now()): Promise<string[]> {
  const deleted: string[] = [];
  for (const node of (await core.listNode()).items) {
    const name = node.metadata!.name!;
    const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    const lease = await coordination.readNamespacedLease({ name, namespace: 'kube-node-lease' }).catch(() => undefined);
    const renewed = lease?.spec?.renewTime ? new Date(lease.spec.renewTime as unknown as string).getTime() : 0;
    if (ready && now - renewed < 40_000) {
      throw new Error(`node ${name} is Ready and its agent renews its Lease: a conformance run needs its agent as the only node (stop the other agent, e.g. make agent-down)`);
    }
    await deleteNodeObjects(core, name);
    deleted.push(name);
  }
  return deleted;
}

/** Waits until no pod is bound to the node (the e2e framework deletes its namespaces as specs end). */
export async function waitNodeDrained(core: k8s.CoreV1Api, node: string, timeoutMs: number): Promise<number> {
  try {
    await eventually(`the pods on ${node} to be gone`, timeoutMs, async () => {
      const left = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
      return left.items.length === 0 ? true : undefined;
    }, 2000);
    return 0;
  } catch {
    return (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items.length;
  }
}

/** Ready, and the not-ready taint the API server gives every new Node lifted by the node-lifecycle controller. */
async function waitSchedulable(core: k8s.CoreV1Api, node: string): Promise<void> {
  await eventually(`node ${node} to be Ready without taints`, 120_000, async () => {
    const n = await core.readNode({ name: node }).catch(() => undefined);
    const ready = n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    return ready && (n?.spec?.taints ?? []).length === 0 ? true : undefined;
  }, 500);
}

function nodeletVersion(): string {
  const r = spawnSync(join(projectRoot, 'dist/src/cli/main.js'), ['version'], { encoding: 'utf8' });
  return r.stdout.trim().split('\n')[0] ?? 'unknown';
}

function nodeletHandle(kind: AgentKind, agent: RunningAgent, runtimeEndpoint: string, after: () => Promise<void>, core: k8s.CoreV1Api): ConformanceAgent {
  return {
    kind,
    node: agent.nodeName,
    version: nodeletVersion(),
    logFile: agent.logFile,
    port: agent.port,
    runtimeEndpoint,
    async stop() {
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([agent.stop(), new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 30_000)))]);
      clearTimeout(timer);
      if (code === 'timeout') await agent.kill();
      await after();
      await deleteNodeObjects(core, agent.nodeName);
    },
  };
}

/** How a suite needs its node: configured as the node e2e suite configures a kubelet. */
export interface NodeProfile {
  /**
   * The kubelet's node e2e suite looks for pod cgroups under /kubepods (cgroup root "/", whatever
   * the agent's configuration says) and writes static pods into the configured staticPodPath.
   */
  nodeE2E?: boolean;
}

const NODE_E2E_PORT = 10250;
const NODE_E2E_READ_ONLY_PORT = 10255;

export async function startConformanceAgent(kind: AgentKind, node: string, core: k8s.CoreV1Api, workDir: string, profile: NodeProfile = {}): Promise<ConformanceAgent> {
  const env = clusterEnv();
  mkdirSync(workDir, { recursive: true });
  const staticPodPath = join(workDir, 'static-pods');
  if (profile.nodeE2E) mkdirSync(staticPodPath, { recursive: true });
  // The suite also reaches the node API at <node>:10250 through the API server, checks the agent's
  // health at 127.0.0.1:10248, reads /stats/summary and /metrics/cadvisor on the read-only port
  // 10255 and looks for the legacy log links in /var/log/containers (the kubelet's, constants of
  // its framework, and its configuration there): there the agent listens and links, as the kubelet
  // does in the same run.
  const nodeE2EStart = profile.nodeE2E ? { readOnlyPort: NODE_E2E_READ_ONLY_PORT } : {};
  const nodeE2EFlags = profile.nodeE2E ? ['--cgroup-root', '/', '--static-pod-path', staticPodPath, '--port', String(NODE_E2E_PORT), '--healthz-port', '10248', '--container-logs-dir', '/var/log/containers'] : [];
  if (kind === 'kubelet') {
    const k = await startKubelet(core, { node, maxPods: 110, serveNodeApi: true, ...(profile.nodeE2E ? { nodeE2E: { staticPodPath }, port: NODE_E2E_PORT } : {}) });
    await waitSchedulable(core, node);
    return { kind, node, version: k.version, logFile: k.logFile, port: profile.nodeE2E ? NODE_E2E_PORT : KUBELET_PORT, runtimeEndpoint: env.runtimeEndpoint, stop: () => k.stop() };
  }
  if (kind === 'nodelet') {
    const agent = await startAgent(node, ['--log-level', 'info', ...nodeE2EFlags], nodeE2EStart);
    await waitSchedulable(core, node);
    // Sandboxes of pods deleted while the agent stopped.
    const after = async () => void (await sweepSandboxes(env.runtimeEndpoint, (l) => l['nodelet.io/node-name'] === node));
    return nodeletHandle(kind, agent, env.runtimeEndpoint, after, core);
  }
  const { config, root, socket } = processRuntimeAgentConfig(join(workDir, 'process-runtime'), 'conformance-process.sock');
  // Its pods share the host's network (the process runtime has no per-pod network yet, issue 15),
  // and on this machine only loopback may receive test traffic: the node's IP, and so theirs, is 127.0.0.1.
  const agent = await startAgent(node, ['--config', config, '--log-level', 'info', '--node-ip', '127.0.0.1', ...nodeE2EFlags], nodeE2EStart);
  await waitSchedulable(core, node);
  const after = async () => resetProcessRuntime(root);
  return nodeletHandle(kind, agent, `unix://${socket}`, after, core);
}
