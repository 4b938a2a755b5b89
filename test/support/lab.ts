// The lab (hack/lab.sh, README "The lab") from the tests: a lab of their own beside any a user
// runs (its directory .lab-test, network namespace nodelet-labtest, API door 127.0.0.1:36444),
// its nodes' commands through the exec door, and the real kubectl against its cluster.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from './cluster.js';

export type LabAgent = 'nodelet-containerd' | 'nodelet-process' | 'kubelet';

// NODELET_TEST_LAB_*: another test lab beside this one (a second checkout's run at the same time).
export const LAB_DIR = process.env.NODELET_TEST_LAB_DIR ?? join(projectRoot, '.lab-test');
export const LAB_NETNS = process.env.NODELET_TEST_LAB_NETNS ?? 'nodelet-labtest';
export const LAB_API_PORT = process.env.NODELET_TEST_LAB_API_PORT ?? '36444';
const KUBE_VERSION = 'v1.37.2';
export const LAB_IMAGE = 'nodelet.test/busybox:1';

export const labEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  NODELET_LAB_DIR: LAB_DIR,
  NODELET_LAB_NETNS: LAB_NETNS,
  LAB_API_PORT,
  ...extra,
});

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number, input?: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input ?? '');
  });
}

const labSh = (args: string[], timeoutMs: number, extra: Record<string, string> = {}) =>
  run(join(projectRoot, 'hack/lab.sh'), args, labEnv(extra), timeoutMs);

/** `hack/lab.sh up`: nodes lab-1..N, each with its agent; throws with the script's last lines. */
export async function labUp(agents: LabAgent[], memory: string, pidMax: number): Promise<void> {
  const r = await labSh(['up'], 600_000, { LAB_NODES: String(agents.length), LAB_AGENTS: agents.join(','), LAB_NODE_MEMORY: memory, LAB_PID_MAX: String(pidMax) });
  if (r.code !== 0) throw new Error(`hack/lab.sh up exited ${r.code}:\n${r.stderr.split('\n').slice(-15).join('\n')}`);
}

export async function labDown(): Promise<void> {
  const r = await labSh(['down'], 120_000);
  if (r.code !== 0) throw new Error(`hack/lab.sh down exited ${r.code}: ${r.stderr}`);
}

/** `hack/lab.sh kill NODE`: the node's power cut. */
export async function labKill(node: string): Promise<void> {
  const r = await labSh(['kill', node], 60_000);
  if (r.code !== 0) throw new Error(`hack/lab.sh kill ${node} exited ${r.code}: ${r.stderr}`);
}

/** A command as root in a node, through its exec door: its exit code and output. */
export function labExec(node: string, cmd: string[], timeoutMs = 60_000): Promise<Result> {
  return labSh(['exec', node, '--', ...cmd], timeoutMs);
}

/** A shell script in a node; throws unless it exits 0. */
export async function labSh0(node: string, script: string, timeoutMs = 60_000): Promise<string> {
  const r = await labExec(node, ['sh', '-c', script], timeoutMs);
  if (r.code !== 0) throw new Error(`${node}: sh -c '${script}' exited ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** The PIDs of the lab's own processes (its control plane, doors and nodes), from its run directory. */
export function labPids(): number[] {
  const run = join(LAB_DIR, 'run');
  if (!existsSync(run)) return [];
  return readdirSync(run)
    .filter((f) => f.endsWith('.pid'))
    .map((f) => Number(readFileSync(join(run, f), 'utf8').trim()))
    .filter((p) => Number.isInteger(p) && p > 0);
}

export const KUBECTL = join(process.env.HOME ?? '/root', '.cache/nodelet/bin', `kubectl-${KUBE_VERSION}`);

/** The real kubectl against the lab's cluster. */
export function kubectl(args: string[], input?: string, timeoutMs = 120_000): Promise<Result> {
  return run(KUBECTL, ['--kubeconfig', join(LAB_DIR, 'kubeconfig'), ...args], process.env, timeoutMs, input);
}

/** kubectl that must succeed; its output. */
export async function kubectlOk(args: string[], input?: string, timeoutMs?: number): Promise<string> {
  const r = await kubectl(args, input, timeoutMs);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

export async function kubectlJson<T>(args: string[]): Promise<T> {
  return JSON.parse(await kubectlOk([...args, '-o', 'json'])) as T;
}

export function nodeReady(node: { status?: { conditions?: { type: string; status: string }[] } }): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
