// The agent's side of in-place resize: a spec whose resources change is allocated (or deferred)
// as it arrives, syncs apply it to the running containers (src/runtime/resize.ts), and the pod's
// status and events follow it as the kubelet's do: ResizeStarted, ResizeDeferred, ResizeError,
// ResizeCompleted; PodResizePending and PodResizeInProgress; allocatedResources and resources.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { podRef, type EventRecorder } from '../kube/object-ref.js';
import { AllocationManager, resizeEventMessage } from '../pods/allocation.js';
import { ActuatedResources, resourceValues } from '../runtime/resize.js';
import type { PodSyncResult } from '../runtime/sync-result.js';
import type { PodStatus } from '../runtime/types.js';
import type { GenerateInput } from '../status/generate.js';

export class PodResizer {
  readonly allocation = new AllocationManager();
  readonly actuated: ActuatedResources;

  constructor(private readonly recorder: EventRecorder, private readonly now: () => number) {
    this.actuated = new ActuatedResources(now);
  }

  /** A pod admitted here: what it asked for is its allocation. */
  admitted(pod: V1Pod): void {
    this.allocation.admitted(pod);
  }

  /**
   * A pod's new spec: a resize is allocated if the node fits it; returns whether one was. The
   * other pods are asked for only then (every status update of every pod comes through here).
   */
  update(pod: V1Pod, node: V1Node | undefined, others: () => V1Pod[]): boolean {
    if (!this.allocation.resizeRequested(pod) && this.allocation.pendingCondition(pod.metadata?.uid ?? '') === undefined) return false;
    const outcome = this.allocation.handleResize(pod, node, others().map((p) => this.allocation.allocatedPod(p)), new Date(this.now()));
    if (outcome.kind === 'allocated') this.recorder.event(podRef(pod), 'Normal', 'ResizeStarted', outcome.message);
    if (outcome.kind === 'deferred' && outcome.changed) {
      this.recorder.event(podRef(pod), 'Warning', 'ResizeDeferred', resizeEventMessage(`Pod resize ${outcome.reason}`, pod, outcome.message));
    }
    return outcome.kind === 'allocated';
  }

  /** The pod as its containers are to run: with its allocated resources. */
  allocatedPod(pod: V1Pod): V1Pod {
    return this.allocation.allocatedPod(pod);
  }

  /** After a sync: a failed update is reported; a resize every running container has is completed. */
  afterSync(pod: V1Pod, runtime: PodStatus, result: PodSyncResult): void {
    const uid = pod.metadata?.uid ?? '';
    const allocated = this.allocation.allocatedPod(pod);
    const failed = result.results.find((r) => r.action === 'ResizePodInPlace' && r.failed);
    if (failed && this.allocation.resizeFailed(uid, failed.message, new Date(this.now()))) {
      this.recorder.event(podRef(pod), 'Warning', 'ResizeError', resizeEventMessage('Pod resize error', allocated, failed.message));
    }
    if (failed || !this.allocation.isResizing(uid) || !this.applied(allocated, runtime)) return;
    const done = this.allocation.resizeDone(uid);
    const generation = done?.observedGeneration ?? allocated.metadata?.generation;
    this.recorder.event(podRef(pod), 'Normal', 'ResizeCompleted', resizeEventMessage('Pod resize completed', { ...allocated, metadata: { ...allocated.metadata, generation } }));
  }

  /** What the status needs: the allocation, each running container's resources, the conditions. */
  statusInput(pod: V1Pod): GenerateInput['resize'] {
    return {
      allocatedPod: this.allocation.allocatedPod(pod),
      actuated: (id) => this.actuated.get(id)?.resources,
      conditions: this.allocation.conditions(pod.metadata?.uid ?? ''),
    };
  }

  /** Pods whose waiting resize is due to be tried again (housekeeping tries them). */
  due(): string[] {
    return this.allocation.duePods(this.now());
  }

  /** The pod is done here: its allocation goes, and the resizes waiting for room are tried at once. */
  forget(uid: string): void {
    this.allocation.forget(uid);
    this.allocation.retryAllNow();
  }

  /** Every running container of the pod runs with its allocation (or is not known to run with anything else). */
  private applied(allocated: V1Pod, runtime: PodStatus): boolean {
    const containers = [...(allocated.spec?.initContainers ?? []), ...(allocated.spec?.containers ?? [])];
    return containers.every((c) => {
      const s = runtime.containerStatuses.find((x) => x.name === c.name);
      const current = s && s.state === 'running' ? this.actuated.get(s.id.id)?.values : undefined;
      return current === undefined || JSON.stringify(current) === JSON.stringify(resourceValues(c));
    });
  }
}
