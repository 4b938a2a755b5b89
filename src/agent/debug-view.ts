// What /debug shows: each pod's plan (what the next sync would do and why, computed without
// acting), its sync history, and a live summary of every pod with its worker's state, back-off
// countdowns and probe results.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { SyncHistory, type SyncRecord, type SyncTrigger } from '../debug/sync-history.js';
import type { WorkerState, PodWorkers } from '../pods/pod-workers.js';
import type { RuntimeManagerDeps } from '../runtime/deps.js';
import { computePodActions } from '../runtime/pod-actions.js';
import { acts, explainPodActions, explainTermination, terminationWhy, type PlanStep } from '../runtime/plan.js';
import { getPodStatus } from '../runtime/pod-status.js';
import type { PodSyncResult } from '../runtime/sync-result.js';
import type { Clock } from '../util/clock.js';
import { isMirrorPod, podNamed } from '../pods/mirror-pods.js';

export interface PodPlan {
  namespace: string;
  name: string;
  uid: string;
  /** When the plan was made (ms since the epoch). */
  at: number;
  worker?: WorkerState;
  /** Why the pod is where it is when no sync would act on it (finished, not admitted ...). */
  note?: string;
  steps: PlanStep[];
}

export interface DebugContainer {
  name: string;
  init: boolean;
  state: string;
  ready: boolean;
  started?: boolean;
  restartCount: number;
}

export interface DebugPod {
  namespace: string;
  name: string;
  uid: string;
  phase: string;
  containers: DebugContainer[];
  worker?: WorkerState;
  /** The steps of the last sync that act, with their back-off ends turned into times. */
  pending: Array<PlanStep & { until?: number }>;
  /** When the last sync began. */
  lastSyncAt?: number;
  /** The kept syncs, oldest first, for the page's timeline. */
  timeline: TimelineMark[];
}

export interface TimelineMark {
  at: number;
  trigger: SyncTrigger;
  durationMs: number;
  /** 'idle': nothing to do; 'acted': something was started or killed; 'failed': an action or the sync failed. */
  outcome: 'idle' | 'acted' | 'failed';
  repeats?: number;
  lastAt?: number;
}

function mark(r: SyncRecord): TimelineMark {
  const failed = !!r.error || r.results.some((a) => !a.ok);
  const outcome = failed ? 'failed' : r.plan.length || r.results.length ? 'acted' : 'idle';
  return { at: r.at, trigger: r.trigger, durationMs: r.durationMs, outcome, repeats: r.repeats, lastAt: r.lastAt };
}

export interface DebugViewHost {
  clock: Clock;
  workers: Pick<PodWorkers, 'state' | 'isPodTerminationRequested' | 'terminatingPod'>;
  pods(): V1Pod[];
  podStatus(uid: string): V1PodStatus | undefined;
  deps(): RuntimeManagerDeps;
  /** The pod with the resources allocated to it (what the sync runs). */
  allocatedPod(pod: V1Pod): V1Pod;
}

/** Deleted pods whose history is kept. */
const RETIRED_PODS = 50;

export class DebugView {
  readonly history: SyncHistory;
  private readonly retired = new Map<string, { uid: string; syncs: readonly SyncRecord[] }>();

  constructor(
    private readonly host: DebugViewHost,
    historyLength?: number,
  ) {
    this.history = new SyncHistory(historyLength);
  }

  /** One sync's record: its plan and results when it reached the runtime manager, else just its error. */
  recordSync(uid: string, trigger: SyncTrigger, at: number, result: PodSyncResult | undefined, error?: Error): void {
    const rec: SyncRecord = {
      at,
      trigger,
      durationMs: this.host.clock.now() - at,
      plan: (result?.plan ?? []).filter(acts),
      results: (result?.results ?? [])
        .filter((r) => r.action !== 'ConfigPodSandbox' || r.failed)
        .map((r) => ({ action: r.action, target: r.target, ok: !r.failed, reason: r.reason, message: r.message || undefined, durationMs: r.durationMs })),
      error: error?.message,
    };
    this.history.record(uid, rec);
  }

  /** A termination's record: what was stopped. */
  recordTermination(uid: string, at: number, steps: PlanStep[], error?: Error): void {
    this.history.record(uid, { at, trigger: 'terminate', durationMs: this.host.clock.now() - at, plan: steps, results: [], error: error?.message });
  }

  /**
   * A pod gone from the node: its history moves to the few kept of deleted pods (a user asks why a
   * pod was killed after it is gone), the oldest dropped past RETIRED_PODS.
   */
  retire(pod: V1Pod): void {
    const { namespace = '', name = '', uid = '' } = pod.metadata ?? {};
    const syncs = this.history.get(uid);
    this.history.forget(uid);
    if (!syncs.length) return;
    const key = `${namespace}/${name}`;
    this.retired.delete(key);
    this.retired.set(key, { uid, syncs });
    if (this.retired.size > RETIRED_PODS) this.retired.delete(this.retired.keys().next().value!);
  }

  /** The history of a pod by name: the one on the node, else the last one of that name deleted. */
  historyOf(namespace: string, name: string): { uid: string; syncs: readonly SyncRecord[]; deleted: boolean } | undefined {
    const pod = this.find(namespace, name);
    if (pod) return { uid: pod.metadata?.uid ?? '', syncs: this.history.get(pod.metadata?.uid ?? ''), deleted: false };
    const r = this.retired.get(`${namespace}/${name}`);
    return r ? { ...r, deleted: true } : undefined;
  }

  workerState(uid: string): WorkerState | undefined {
    return this.host.workers.state(uid);
  }

  /** The pod of that namespace and name as this agent runs it (a static pod, not its mirror). */
  find(namespace: string, name: string): V1Pod | undefined {
    return podNamed(this.host.pods(), namespace, name);
  }

  /** What the next sync of the pod would do, from a fresh read of the runtime; nothing is changed. */
  async plan(pod: V1Pod): Promise<PodPlan> {
    const { namespace = '', name = '', uid = '' } = pod.metadata ?? {};
    const deps = this.host.deps();
    const worker = this.host.workers.state(uid);
    const base = { namespace, name, uid, at: this.host.clock.now(), worker };
    // The runtime is read only for a plan that needs it.
    if (!worker) return { ...base, note: 'no worker has this pod (not admitted, or not yet seen)', steps: [] };
    if (worker.phase === 'terminated') return { ...base, note: 'the pod has terminated: nothing of it runs', steps: [] };
    if (this.host.workers.isPodTerminationRequested(uid)) {
      const terminating = this.host.workers.terminatingPod(uid) ?? pod;
      return { ...base, steps: explainTermination(terminating, await getPodStatus(deps, uid, name, namespace), terminationWhy(terminating)) };
    }
    const apiPhase = this.host.podStatus(uid)?.phase ?? pod.status?.phase;
    if (apiPhase === 'Succeeded' || apiPhase === 'Failed') return { ...base, note: `the pod has finished (${apiPhase}): it is never started again`, steps: [] };
    const status = await getPodStatus(deps, uid, name, namespace);
    const allocated = this.host.allocatedPod(pod);
    const actions = computePodActions(allocated, status, deps.probes);
    return { ...base, steps: explainPodActions({ pod: allocated, status, actions, probes: deps.probes, backoff: deps.crashLoopBackoff }) };
  }

  /** Every pod with its containers, worker and what its last sync left waiting. */
  summary(): DebugPod[] {
    const now = this.host.clock.now();
    return this.host
      .pods()
      .filter((p) => !isMirrorPod(p))
      .map((pod) => {
        const { namespace = '', name = '', uid = '' } = pod.metadata ?? {};
        const st = this.host.podStatus(uid) ?? pod.status ?? {};
        const history = this.history.get(uid);
        const last = history[history.length - 1];
        const lastAt = last ? (last.lastAt ?? last.at) : undefined;
        const containers: DebugContainer[] = [
          ...(st.initContainerStatuses ?? []).map((c) => ({ c, init: true })),
          ...(st.containerStatuses ?? []).map((c) => ({ c, init: false })),
        ].map(({ c, init }) => ({
          name: c.name,
          init,
          state: c.state?.running ? 'Running' : c.state?.terminated ? `Terminated (${c.state.terminated.reason ?? c.state.terminated.exitCode})` : (c.state?.waiting?.reason ?? 'Waiting'),
          ready: c.ready,
          started: c.started,
          restartCount: c.restartCount,
        }));
        const pending = (last?.plan ?? []).map((s) => (s.backOffRemainingMs !== undefined ? { ...s, until: last!.at + s.backOffRemainingMs } : s)).filter((s) => !('until' in s) || (s.until ?? 0) > now);
        return { namespace, name, uid, phase: pod.metadata?.deletionTimestamp ? 'Terminating' : (st.phase ?? 'Pending'), containers, worker: this.host.workers.state(uid), pending, lastSyncAt: lastAt, timeline: history.map(mark) };
      })
      .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  }
}
