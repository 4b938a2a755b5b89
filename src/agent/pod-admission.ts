// Pod source events on their way to the workers: admission for pods new to this agent (refused ones
// get Failed with the kubelet's "Pod was rejected" status and a Warning event, and never reach a
// worker), in-place resizes of running pods, and the rest straight to the pod workers.
import type { V1Node, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { apiErrorMessage, httpCode, type KubeClient } from '../kube/client.js';
import { podRef, type EventRecorder } from '../kube/object-ref.js';
import { podFields, type Logger } from '../observability/logger.js';
import { NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE, NODE_SHUTDOWN_NOT_ADMITTED_REASON } from '../nodeshutdown/groups.js';
import { admitPodHere } from '../pods/admission.js';
import { appArmorEnabledOnHost } from '../pods/apparmor.js';
import { isMirrorPod } from '../pods/mirror-pods.js';
import type { PodWorkers, UpdateType } from '../pods/pod-workers.js';
import { isStaticPod } from '../pods/static-pods.js';
import { SysctlAllowlist } from '../pods/sysctls.js';
import type { Clock } from '../util/clock.js';
import { PodPreemptions } from './pod-preemptions.js';
import type { PodResizer } from './pod-resize.js';

export interface PodAdmissionDeps {
  workers: Pick<PodWorkers, 'isKnown' | 'activePods' | 'updatePod' | 'wake' | 'isPodTerminated'>;
  clock: Clock;
  resizer: PodResizer;
  /** The node as admission sees it (the registered Node, or the standalone one). */
  node(): V1Node | undefined;
  allowedUnsafeSysctls: string[];
  setPodStatus(pod: V1Pod, status: V1PodStatus): void;
  recorder: EventRecorder;
  logger: Logger;
  kube?: KubeClient;
  nodeIP(): string;
  now(): number;
  /** The node is shutting down: no pod is admitted. */
  shuttingDown?(): boolean;
}

export class PodAdmission {
  /** Pods refused by admission: they never reach a worker. */
  readonly rejected = new Set<string>();
  /** Critical pods waiting for the pods preempted for them to stop: the newest event of each. */
  private readonly waiting = new Map<string, { pod: V1Pod; type: UpdateType }>();
  readonly preemptions: PodPreemptions;
  private readonly sysctls: SysctlAllowlist;
  private readonly appArmorEnabled = appArmorEnabledOnHost();

  constructor(private readonly d: PodAdmissionDeps) {
    this.sysctls = new SysctlAllowlist(d.allowedUnsafeSysctls);
    this.preemptions = new PodPreemptions({ clock: d.clock, logger: d.logger, recorder: d.recorder, wake: (uid) => d.workers.wake(uid), isTerminated: (uid) => d.workers.isPodTerminated(uid) });
  }

  handlePod(pod: V1Pod, type: UpdateType): void {
    const uid = pod.metadata?.uid ?? '';
    // Our own mirror pods come back through the API watch: they are shadows, not pods to run.
    if (isMirrorPod(pod)) return;
    if (this.waiting.has(uid)) {
      this.waiting.set(uid, { pod, type });
      return;
    }
    if (this.rejected.has(uid)) {
      if (type === 'delete') this.rejected.delete(uid);
      else if (pod.metadata?.deletionTimestamp) void this.deleteFromApi(pod);
      return;
    }
    if (type !== 'delete' && !this.d.workers.isKnown(uid) && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed') {
      if (this.d.shuttingDown?.()) {
        this.reject(pod, NODE_SHUTDOWN_NOT_ADMITTED_REASON, NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE);
        return;
      }
      const admitted = this.d.workers.activePods().map((p) => this.d.resizer.allocatedPod(p));
      const verdict = admitPodHere(pod, { node: this.d.node(), admitted, sysctls: this.sysctls, appArmorEnabled: this.appArmorEnabled, staticOrMirror: isStaticPod(pod) });
      if (!verdict.admit) {
        this.reject(pod, verdict.reason, verdict.message);
        return;
      }
      this.d.resizer.admitted(pod);
      if ('preempt' in verdict) {
        this.waiting.set(uid, { pod, type });
        void this.preemptions.preempt(verdict.preempt, pod).then(() => {
          const last = this.waiting.get(uid)!;
          this.waiting.delete(uid);
          this.d.workers.updatePod(last.pod, last.type);
        });
        return;
      }
    } else if (type === 'update' && !pod.metadata?.deletionTimestamp) {
      this.resize(pod);
    }
    this.d.workers.updatePod(pod, type);
  }

  /** A new spec of a running pod: a resize is allocated, or waits for room. */
  resize(pod: V1Pod): boolean {
    const others = () => this.d.workers.activePods().filter((p) => p.metadata?.uid !== pod.metadata?.uid);
    return this.d.resizer.update(pod, this.d.node(), others);
  }

  private reject(pod: V1Pod, reason: string, message: string): void {
    this.rejected.add(pod.metadata?.uid ?? '');
    this.d.logger.warn('pod rejected by admission', { ...podFields(pod), reason, message });
    this.d.recorder.event(podRef(pod), 'Warning', reason, message);
    this.d.setPodStatus(pod, {
      ...(pod.status ?? {}),
      phase: 'Failed',
      reason,
      // The kubelet's words: `kubectl describe` shows "Pod was rejected: <why>".
      message: `Pod was rejected: ${message}`,
      hostIP: this.d.nodeIP(),
      startTime: pod.status?.startTime ?? new Date(this.d.now()),
    });
  }

  private async deleteFromApi(pod: V1Pod): Promise<void> {
    if (!this.d.kube || isStaticPod(pod)) return;
    try {
      await this.d.kube.deletePod(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '', pod.metadata?.uid ?? '');
    } catch (err) {
      const code = httpCode(err);
      if (code !== 404 && code !== 409) this.d.logger.warn('delete of a rejected pod failed', { ...podFields(pod), error: apiErrorMessage(err) });
    }
  }
}
