// The invariants every drill is held to, checked from the outside (the runtime over CRI, the API
// server, /proc): no container duplicated, restart counts neither lost nor jumped, the API's pod
// status equal to the runtime's within one resync, nothing left over, and the agent still serving.
import { readdirSync, readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../../src/cri/client.js';
import type { Container, PodSandbox } from '../../src/cri/types.js';
import { eventually } from '../support/cluster.js';
import type { KubeClients } from './workload.js';

const UID = 'io.kubernetes.pod.uid';
const NAME = 'io.kubernetes.container.name';
const RESTARTS = 'io.kubernetes.container.restartCount';
const NODE = 'nodelet.io/node-name';

interface SeenContainer {
  id: string;
  uid: string;
  name: string;
  attempt: number;
  createdAt: number;
}

/**
 * Polls the runtime every second while drills run: every container and sandbox of the node it
 * ever saw, and every moment two instances of one container ran, or two sandboxes of one pod were
 * ready at once. A runtime that is down is simply not seen for a while.
 */
export class RuntimeObserver {
  readonly containers = new Map<string, SeenContainer>();
  readonly sandboxes = new Map<string, string>(); // sandbox id -> pod uid
  readonly violations: string[] = [];
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;
  polls = 0;

  constructor(private readonly cri: CriClient, private readonly node: string) {}

  start(): void {
    const tick = () => {
      this.polling = this.poll().then(() => undefined).finally(() => {
        if (this.timer !== undefined) this.timer = setTimeout(tick, 1000);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  /** One look now (also used directly by the checks). */
  async poll(): Promise<{ sandboxes: PodSandbox[]; containers: Container[] } | undefined> {
    let sandboxes: PodSandbox[];
    let containers: Container[];
    try {
      [sandboxes, containers] = await Promise.all([this.cri.listPodSandbox({ label_selector: { [NODE]: this.node } }), this.cri.listContainers({ label_selector: { [NODE]: this.node } })]);
    } catch {
      return undefined;
    }
    this.polls++;
    const ready = new Map<string, number>();
    for (const s of sandboxes) {
      const uid = s.labels?.[UID] ?? '';
      this.sandboxes.set(s.id, uid);
      if (s.state === 'SANDBOX_READY') ready.set(uid, (ready.get(uid) ?? 0) + 1);
    }
    for (const [uid, n] of ready) if (n > 1) this.violation(`pod ${uid}: ${n} ready sandboxes at once`);
    const runningByName = new Map<string, string[]>();
    for (const c of containers) {
      const uid = c.labels?.[UID] ?? '';
      const name = c.labels?.[NAME] ?? c.metadata?.name ?? '';
      if (!this.containers.has(c.id)) this.containers.set(c.id, { id: c.id, uid, name, attempt: Number(c.annotations?.[RESTARTS] ?? c.metadata?.attempt ?? 0), createdAt: Number(c.created_at ?? 0) });
      if (c.state === 'CONTAINER_RUNNING') {
        const k = `${uid}/${name}`;
        runningByName.set(k, [...(runningByName.get(k) ?? []), c.id.slice(0, 12)]);
      }
    }
    for (const [k, ids] of runningByName) if (ids.length > 1) this.violation(`container ${k}: ${ids.length} running instances at once (${ids.join(', ')})`);
    return { sandboxes, containers };
  }

  private violation(text: string): void {
    if (!this.violations.includes(text)) this.violations.push(text);
  }

  /** Every container ever seen for one pod's container, oldest attempt first. */
  history(uid: string, name: string): SeenContainer[] {
    return [...this.containers.values()].filter((c) => c.uid === uid && c.name === name).sort((a, b) => a.attempt - b.attempt || a.createdAt - b.createdAt);
  }
}

/** restartCount per pod UID and container name, from the API. */
export type RestartLedger = Map<string, number>;

export function restartLedger(pods: V1Pod[]): RestartLedger {
  const m: RestartLedger = new Map();
  for (const p of pods) for (const cs of p.status?.containerStatuses ?? []) m.set(`${p.metadata!.uid}/${cs.name}`, cs.restartCount);
  return m;
}

/**
 * Restart counts: none lower than before; the runtime's attempts for each container consecutive
 * (a gap is a jump, a repeat a lost count); and containers that should not have restarted (not
 * crash-looping, not restarted by the drill on purpose) with no new instance.
 */
export function checkRestarts(before: RestartLedger, after: RestartLedger, observer: RuntimeObserver, opts: { seenBefore: Set<string>; mayRestart: (uid: string, name: string) => boolean; mustRestart: Set<string> }): string[] {
  const errors: string[] = [];
  for (const [key, was] of before) {
    const now = after.get(key);
    if (now === undefined) continue; // the pod is gone or its status was reset by a re-creation
    const [uid, name] = key.split('/') as [string, string];
    if (now < was) errors.push(`${key}: restartCount went from ${was} to ${now}`);
    const hist = observer.history(uid, name);
    for (let i = 1; i < hist.length; i++) {
      if (hist[i]!.attempt !== hist[i - 1]!.attempt + 1) errors.push(`${key}: runtime attempts ${hist[i - 1]!.attempt} then ${hist[i]!.attempt} (containers ${hist[i - 1]!.id.slice(0, 12)}, ${hist[i]!.id.slice(0, 12)})`);
    }
    const fresh = hist.filter((c) => !opts.seenBefore.has(c.id)).length;
    if (fresh > 0 && !opts.mayRestart(uid, name)) errors.push(`${key}: restarted ${fresh} time(s) though nothing should have restarted it (restartCount ${was} -> ${now})`);
    if (opts.mustRestart.has(key) && now <= was) errors.push(`${key}: the drill restarted it, but restartCount stayed ${now}`);
  }
  return errors;
}

/** Differences between the API's pod status and the runtime's view, for the pods listed. */
export function statusDifferences(pods: V1Pod[], sandboxes: PodSandbox[], containers: Container[], idScheme: string): string[] {
  const errors: string[] = [];
  for (const p of pods) {
    if (p.metadata?.deletionTimestamp) continue;
    const uid = p.metadata!.uid!;
    const name = p.metadata!.name!;
    const mine = containers.filter((c) => c.labels?.[UID] === uid);
    if (p.status?.phase === 'Running' && !sandboxes.some((s) => s.labels?.[UID] === uid && s.state === 'SANDBOX_READY')) errors.push(`${name}: Running in the API without a ready sandbox`);
    for (const cs of p.status?.containerStatuses ?? []) {
      const newest = mine.filter((c) => c.labels?.[NAME] === cs.name).sort((a, b) => Number(b.created_at ?? 0) - Number(a.created_at ?? 0))[0];
      if (!newest) {
        if (cs.state?.running) errors.push(`${name}/${cs.name}: running in the API, absent from the runtime`);
        continue;
      }
      if (cs.containerID && cs.containerID !== `${idScheme}://${newest.id}`) errors.push(`${name}/${cs.name}: API has ${cs.containerID.slice(0, 30)}, the runtime's newest is ${newest.id.slice(0, 12)}`);
      const runningInRuntime = newest.state === 'CONTAINER_RUNNING';
      if (Boolean(cs.state?.running) !== runningInRuntime) errors.push(`${name}/${cs.name}: API says ${Object.keys(cs.state ?? {}).join(',') || 'no state'}, the runtime ${newest.state}`);
      const attempt = Number(newest.annotations?.[RESTARTS] ?? -1);
      if (attempt >= 0 && cs.restartCount !== attempt) errors.push(`${name}/${cs.name}: restartCount ${cs.restartCount} in the API, ${attempt} on the runtime's newest container`);
    }
  }
  return errors;
}

/** Waits until the API agrees with the runtime on every pod of the namespace; returns the seconds it took. */
export async function converge(kube: KubeClients, namespace: string, observer: RuntimeObserver, idScheme: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  let last: string[] = [];
  try {
    await eventually('pod status in the API to match the runtime', timeoutMs, async () => {
      const [pods, seen] = await Promise.all([kube.core.listNamespacedPod({ namespace }), observer.poll()]);
      if (!seen) return undefined;
      last = statusDifferences(pods.items, seen.sandboxes, seen.containers, idScheme);
      return last.length === 0 ? true : undefined;
    }, 1000);
  } catch {
    throw new Error(`the API's pod status still differs from the runtime after ${timeoutMs / 1000} s: ${last.join('; ')}`);
  }
  return (Date.now() - started) / 1000;
}

/** Hex IDs (12 to 64 characters) found in every process's cgroup paths and command line. */
function processIdTokens(): Map<number, Set<string>> {
  const out = new Map<number, Set<string>>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/cgroup`, 'utf8') + '\n' + readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const tokens = new Set(text.match(/[0-9a-f]{12,64}/g) ?? []);
      if (tokens.size) out.set(Number(entry), tokens);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export interface Leftovers {
  /** What still runs or is mounted for a deleted pod: processes, mounts, running containers, ready sandboxes. */
  resources: string[];
  /** Runtime records of deleted pods (stopped sandboxes, exited containers): garbage collection removes them within its period, as the kubelet's does. */
  records: string[];
  /**
   * containerd's own shims left running, with no process under them, for sandboxes it has removed:
   * containerd 1.6 loses a shim when a StopPodSandbox is cancelled half-way (the agent killed
   * meanwhile; containerd/containerd#10421, #8931). Counted, not held against the agent: the
   * kubelet killed at that moment leaves the same, and nothing through CRI can reach them.
   */
  runtimeShims: string[];
}

function childless(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim() === '';
  } catch {
    return true;
  }
}

/**
 * What deleted pods left behind: sandboxes and containers still in the runtime, processes whose
 * cgroup or command line names a sandbox or container the runtime no longer has, and mounts naming
 * a deleted pod's UID or a removed sandbox.
 */
export function leftovers(observer: RuntimeObserver, live: { sandboxes: PodSandbox[]; containers: Container[] }, podUids: Set<string>, rootDir: string): Leftovers {
  const resources: string[] = [];
  const records: string[] = [];
  const runtimeShims: string[] = [];
  for (const s of live.sandboxes) {
    if (podUids.has(s.labels?.[UID] ?? '')) continue;
    (s.state === 'SANDBOX_READY' ? resources : records).push(`sandbox ${s.id.slice(0, 12)} of deleted pod ${s.labels?.[UID]} (${s.state})`);
  }
  for (const c of live.containers) {
    if (podUids.has(c.labels?.[UID] ?? '')) continue;
    (c.state === 'CONTAINER_RUNNING' ? resources : records).push(`container ${c.id.slice(0, 12)} of deleted pod ${c.labels?.[UID]} (${c.state})`);
  }
  const liveIds = new Set([...live.sandboxes.map((s) => s.id), ...live.containers.map((c) => c.id)]);
  const goneIds = new Set([...observer.sandboxes.keys(), ...observer.containers.keys()].filter((id) => !liveIds.has(id)));
  for (const [pid, tokens] of processIdTokens()) {
    for (const t of tokens) {
      if (!goneIds.has(t)) continue;
      let cmd = '';
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        continue; // gone meanwhile
      }
      const text = `process ${pid} belongs to removed ${t.slice(0, 12)}: ${cmd.slice(0, 80)}`;
      (/^\S*containerd-shim/.test(cmd) && childless(pid) ? runtimeShims : resources).push(text);
    }
  }
  const goneUids = new Set([...observer.sandboxes.values()].filter((uid) => uid && !podUids.has(uid)));
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const point = line.split(' ')[4] ?? '';
    const named = [...goneUids].find((u) => point.includes(u)) ?? [...goneIds].find((id) => point.includes(id));
    if (named) resources.push(`mount ${point} of removed ${named.slice(0, 12)}`);
    else if (point.startsWith(`${rootDir}/pods/`)) {
      const uid = point.slice(rootDir.length + 6).split('/')[0]!;
      if (!podUids.has(uid)) resources.push(`mount ${point} of a pod the API no longer has`);
    }
  }
  return { resources, records, runtimeShims };
}

/** Open file descriptors of a process. */
export function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}
