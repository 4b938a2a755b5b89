// Resource allocation, as the kubelet's allocation manager: the resources a pod was admitted with
// are its allocation; a resize (a new spec through pods/resize) is allocated only when the node
// still fits it beside every other pod's allocation, else it stays pending (PodResizePending,
// Deferred, with the fit check's message) and is tried again. Events as the kubelet's:
// ResizeStarted when allocated, ResizeDeferred while it waits.
import type { V1Container, V1Node, V1Pod, V1PodCondition, V1ResourceRequirements } from '@kubernetes/client-node';
import { admitPod } from './admission.js';

type Allocation = Map<string, V1ResourceRequirements>;

function containersOf(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

function allocationOf(pod: V1Pod): Allocation {
  return new Map(containersOf(pod).map((c) => [c.name, structuredClone(c.resources ?? {})]));
}

const same = (a: V1ResourceRequirements | undefined, b: V1ResourceRequirements | undefined) =>
  JSON.stringify(a?.requests ?? {}) === JSON.stringify(b?.requests ?? {}) && JSON.stringify(a?.limits ?? {}) === JSON.stringify(b?.limits ?? {});

/** `pod` with the resources of `allocation` in place of its spec's. */
function withAllocation(pod: V1Pod, allocation: Allocation): V1Pod {
  const put = (c: V1Container) => ({ ...c, resources: allocation.get(c.name) ?? c.resources });
  return { ...pod, spec: { ...pod.spec!, containers: (pod.spec?.containers ?? []).map(put), initContainers: pod.spec?.initContainers?.map(put) } };
}

/** The event message of a resize: the pod's containers and their resources, and its generation. */
export function resizeEventMessage(prefix: string, pod: V1Pod, error?: string): string {
  const list = (cs: V1Container[] | undefined) => (cs ?? []).map((c) => ({ name: c.name, resources: c.resources ?? {} }));
  const init = list(pod.spec?.initContainers);
  const body = { ...(init.length ? { initContainers: init } : {}), containers: list(pod.spec?.containers), generation: pod.metadata?.generation ?? 0, ...(error ? { error } : {}) };
  return `${prefix}: ${JSON.stringify(body)}`;
}

const INITIAL_RETRY_DELAY_MS = 30_000;
const RETRY_DELAY_MS = 180_000;

export type ResizeOutcome = { kind: 'none' } | { kind: 'allocated'; message: string } | { kind: 'deferred'; reason: string; message: string; changed: boolean };

export class AllocationManager {
  private readonly allocations = new Map<string, Allocation>();
  private readonly pending = new Map<string, V1PodCondition>();
  /** When each waiting resize is tried again: 30 s after it first waited, then every 3 min (the kubelet's). */
  private readonly retryAt = new Map<string, number>();
  private readonly inProgress = new Map<string, V1PodCondition>();

  /**
   * Records a newly admitted pod's allocation: its spec's resources, or for a pod that already ran
   * here (the agent restarted) those its status says its containers run with, so that a resize
   * allocated or deferred before is not granted now without a fit check.
   */
  admitted(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (this.allocations.has(uid)) return;
    const allocation = allocationOf(pod);
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    for (const s of statuses) if (s.resources && allocation.has(s.name)) allocation.set(s.name, structuredClone(s.resources));
    this.allocations.set(uid, allocation);
  }

  /** The pod as allocated: what its containers are to run with. */
  allocatedPod(pod: V1Pod): V1Pod {
    const a = this.allocations.get(pod.metadata?.uid ?? '');
    return a ? withAllocation(pod, a) : pod;
  }

  /** Whether the spec asks for other resources than the allocation. */
  resizeRequested(pod: V1Pod): boolean {
    const a = this.allocations.get(pod.metadata?.uid ?? '');
    return a !== undefined && containersOf(pod).some((c) => !same(c.resources, a.get(c.name)));
  }

  /**
   * A resize: allocated if the node fits it beside `others` (the other pods, as allocated), else
   * pending. A spec back to its allocation clears a pending resize.
   */
  handleResize(pod: V1Pod, node: V1Node | undefined, others: V1Pod[], now: Date): ResizeOutcome {
    const uid = pod.metadata?.uid ?? '';
    if (!this.resizeRequested(pod)) {
      this.pending.delete(uid);
      return { kind: 'none' };
    }
    // Everything but the pod count: the pod is here already.
    const fit = node ? admitPod(pod, { ...node, status: { ...node.status, allocatable: { ...node.status?.allocatable, pods: '1000000' } } }, others) : ({ admit: true } as const);
    if (fit.admit) {
      this.allocations.set(uid, allocationOf(pod));
      this.pending.delete(uid);
      const generation = pod.metadata?.generation;
      this.inProgress.set(uid, { type: 'PodResizeInProgress', status: 'True', lastProbeTime: now, lastTransitionTime: now, ...(generation !== undefined ? { observedGeneration: generation } : {}) });
      return { kind: 'allocated', message: resizeEventMessage('Pod resize started', pod) };
    }
    const previous = this.pending.get(uid);
    const generation = pod.metadata?.generation;
    // A new wait, or another reason or generation: said again (not for every change of "used").
    const changed = previous === undefined || previous.reason !== 'Deferred' || previous.observedGeneration !== generation;
    this.retryAt.set(uid, now.getTime() + (previous ? RETRY_DELAY_MS : INITIAL_RETRY_DELAY_MS));
    this.pending.set(uid, {
      type: 'PodResizePending',
      status: 'True',
      reason: 'Deferred',
      message: fit.message,
      lastProbeTime: now,
      lastTransitionTime: previous?.reason === 'Deferred' ? previous.lastTransitionTime : now,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    });
    return { kind: 'deferred', reason: fit.reason, message: fit.message, changed };
  }

  /** The resize conditions the pod's status shows now (PodResizePending, PodResizeInProgress). */
  conditions(uid: string): V1PodCondition[] {
    return [this.pending.get(uid), this.inProgress.get(uid)].filter((c): c is V1PodCondition => c !== undefined);
  }

  /** Applying the resize failed: the in-progress condition says so (until it completes or another comes). */
  resizeFailed(uid: string, message: string, now: Date): boolean {
    const c = this.inProgress.get(uid) ?? { type: 'PodResizeInProgress', status: 'True', lastTransitionTime: now };
    const changed = c.reason !== 'Error' || c.message !== message;
    this.inProgress.set(uid, { ...c, reason: 'Error', message, lastProbeTime: now });
    return changed;
  }

  /** The pod runs with its allocation: the in-progress condition goes; returns it if there was one. */
  resizeDone(uid: string): V1PodCondition | undefined {
    const c = this.inProgress.get(uid);
    this.inProgress.delete(uid);
    return c;
  }

  /** Whether a resize was allocated and is not applied yet. */
  isResizing(uid: string): boolean {
    return this.inProgress.has(uid);
  }

  /** The pod's PodResizePending condition, if a resize waits. */
  pendingCondition(uid: string): V1PodCondition | undefined {
    return this.pending.get(uid);
  }

  /** Pods whose resize waits and is due to be tried again at `now`. */
  duePods(now: number): string[] {
    return [...this.pending.keys()].filter((uid) => (this.retryAt.get(uid) ?? 0) <= now);
  }

  /** A pod left the node (room may have been made): every waiting resize is tried at once. */
  retryAllNow(): void {
    for (const uid of this.pending.keys()) this.retryAt.set(uid, 0);
  }

  forget(uid: string): void {
    this.allocations.delete(uid);
    this.pending.delete(uid);
    this.retryAt.delete(uid);
    this.inProgress.delete(uid);
  }
}
