// Runs the real nodelet CLI as a child process against the test cluster, as its own node: on this
// machine, or in a lab node (a cgroup v2 machine of user-mode Linux, test/support/lab-place.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { agentCgroupRoot, removeCgroupRoot, withCgroupRoot } from './cgroups.js';
import { clusterEnv, eventually, freePort, projectRoot } from './cluster.js';

/** Where an agent runs when not on this machine: a lab node. */
export interface AgentPlace {
  /** Runs a command there, its output coming back; SIGTERM and SIGINT reach it, SIGKILL ends it. */
  spawn(argv: string[]): ChildProcess;
  /** An agent's flags there (its kubeconfig, node IP, serving certificate), and its directories. */
  agent(nodeName: string): { flags: string[]; rootDir: string; podLogRoot: string };
  /** An agent's port `port` there (its read-only port) at the same port of this machine's loopback; resolves to its closer. */
  forwardPort(port: number): Promise<() => void>;
  /** The node API of an agent there (at `port`), from this machine. */
  nodeApi(port: number): Promise<{ port: number; servername: string; close(): void }>;
}

export interface RunningAgent {
  nodeName: string;
  /** The node API's port (HTTPS, authenticated). */
  port: number;
  /** The read-only port: plain HTTP /healthz, /pods, /metrics on loopback. */
  localPort: number;
  process: ChildProcess;
  logFile: string;
  /** Its --root-dir (pods' directories under pods/): a path of the place it runs in. */
  rootDir: string;
  /** Its --pod-log-root, readable from this machine. */
  podLogRoot: string;
  /** Runs in a lab node, not on this machine. */
  remote?: boolean;
  /** Every log line so far, parsed. */
  lines: Array<Record<string, unknown>>;
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
}

/** A child's stdout and stderr as the JSON lines it writes (a line that is not JSON: its text as the message). */
export function jsonLines(child: { stdout: NodeJS.ReadableStream | null; stderr: NodeJS.ReadableStream | null }, tee: (chunk: Buffer) => void = () => undefined): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  let buf = '';
  const onData = (chunk: Buffer) => {
    tee(chunk);
    buf += chunk.toString('utf8');
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ message: line });
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return lines;
}

export function uniqueNodeName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/**
 * Starts the agent (in `place` when given, else on this machine); unless `waitForStart` is false,
 * waits until it says it started and answers /healthz.
 */
export async function startAgent(nodeName: string, extraFlags: string[] = [], opts: { waitForStart?: boolean; place?: AgentPlace; readOnlyPort?: number } = {}): Promise<RunningAgent> {
  const env = clusterEnv();
  const logDir = join(env.clusterDir, 'test-agents');
  mkdirSync(logDir, { recursive: true });
  const logFile = join(logDir, `${nodeName}.log`);
  const out = createWriteStream(logFile, { flags: 'a' });
  const localPort = opts.readOnlyPort ?? (await freePort());
  const { place } = opts;
  const there = place?.agent(nodeName) ?? {
    flags: ['--kubeconfig', env.kubeconfig, '--runtime-endpoint', env.runtimeEndpoint, '--tls-cert-file', env.nodeTlsCert, '--tls-private-key-file', env.nodeTlsKey, '--client-ca-file', env.clientCA],
    // Each agent's pod directories (volumes, /etc/hosts, termination messages) of its own.
    rootDir: join(logDir, nodeName),
    podLogRoot: env.podLogRoot,
  };
  const { rootDir, podLogRoot } = there;
  const cgroupRoot = agentCgroupRoot(nodeName);
  const argv = withCgroupRoot(cgroupRoot, [
    join(projectRoot, 'dist/src/cli/main.js'),
    'run',
    '--node-name', nodeName,
    '--cgroup-root', cgroupRoot,
    ...there.flags,
    '--pod-log-root', podLogRoot,
    // The legacy log links beside the logs, never in the machine's /var/log/containers.
    '--container-logs-dir', join(dirname(podLogRoot), 'containers'),
    '--root-dir', rootDir,
    // The node API on a port of its own, with the node serving certificate; the read-only port
    // (loopback, plain HTTP) is where the tests read /healthz, /pods, /metrics.
    '--port', '0',
    '--healthz-port', '0',
    '--read-only-port', String(localPort),
    '--log-format', 'json',
    '--log-level', 'debug',
    ...extraFlags,
  ]);
  const child = place ? place.spawn(argv) : spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  const unforward = place ? await place.forwardPort(localPort) : () => undefined;
  const lines = jsonLines(child, (chunk) => out.write(chunk));
  let dead = false;
  let how = '';
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      dead = true;
      how = signal ? `killed by ${signal}` : `exit code ${code}`;
      unforward();
      resolve(code);
    }),
  );

  const agent = (port: number): RunningAgent => ({
    nodeName,
    port,
    localPort,
    process: child,
    logFile,
    rootDir,
    podLogRoot,
    remote: place !== undefined,
    lines,
    async stop() {
      if (!dead) child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (!dead) child.kill('SIGKILL');
      await exited;
    },
  });
  // An agent that waits for something before it starts (a bootstrap's certificate), as it is.
  if (opts.waitForStart === false) return agent(0);
  const port = await eventually(`agent ${nodeName} to start (log ${logFile})`, 30_000, async () => {
    if (dead) throw new Error(`agent exited early (${how}); log: ${logFile}`);
    const started = lines.find((l) => l.message === 'nodelet started');
    return started ? Number(started.port) : undefined;
  });
  await eventually(`agent ${nodeName} /healthz`, 30_000, async () => {
    const res = await fetch(`http://127.0.0.1:${localPort}/healthz`).catch(() => undefined);
    return res?.ok ? true : undefined;
  });
  return agent(port);
}

/**
 * Test cleanup: deletes the node's pods through the API (the agent stops them and removes the
 * objects), stops the agent, and removes any sandbox of that node still in the runtime.
 */
export async function cleanupAgent(agent: RunningAgent, runtimeEndpoint = clusterEnv().runtimeEndpoint): Promise<void> {
  const { core } = await import('./kube.js');
  const { CriClient } = await import('../../src/cri/client.js');
  const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${agent.nodeName}` });
  await Promise.all(list.items.map((p) => core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: p.metadata!.namespace!, gracePeriodSeconds: 1 }).catch(() => undefined)));
  await eventually('the node\'s pods to be gone', 30_000, async () => {
    const left = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${agent.nodeName}` });
    return left.items.length === 0 ? true : undefined;
  }).catch(() => undefined);
  await agent.stop();
  await core.deleteNode({ name: agent.nodeName }).catch(() => undefined);
  // Best effort: a runtime already gone has nothing left to remove, and the suite's own teardown
  // (its runtime stopped, its doors closed) must still run after this.
  const cri = new CriClient(runtimeEndpoint);
  try {
    for (const sb of await cri.listPodSandbox({ label_selector: { 'nodelet.io/node-name': agent.nodeName } })) {
      await cri.stopPodSandbox(sb.id).catch(() => undefined);
      await cri.removePodSandbox(sb.id).catch(() => undefined);
    }
  } catch {
    /* the runtime is not there */
  } finally {
    cri.close();
  }
  // Its pods' cgroups (on this machine; a lab node's go with the node).
  if (!agent.remote) removeCgroupRoot(agentCgroupRoot(agent.nodeName));
}
