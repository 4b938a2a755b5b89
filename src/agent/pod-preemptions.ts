// The agent's side of critical pod preemption: the pods admission chose are ended through their
// workers (the Warning Preempting event, then Failed/Preempting with a DisruptionTarget
// condition), and the critical pod waits until they have stopped, as the kubelet's killPodNow
// waits: up to one and a half times a pod's grace period, 10 s at least.
import type { V1Pod } from '@kubernetes/client-node';
import { podRef, type EventRecorder } from '../kube/object-ref.js';
import { podFields, type Logger } from '../observability/logger.js';
import { PREEMPTED_CONDITION_MESSAGE, PREEMPTED_MESSAGE, PREEMPTING_REASON } from '../preemption/preemption.js';
import type { NodeEnded } from '../status/node-ended.js';
import { waitUntil, type Clock } from '../util/clock.js';

export interface PodPreemptionsDeps {
  clock: Clock;
  logger: Logger;
  recorder: EventRecorder;
  wake(uid: string): void;
  isTerminated(uid: string): boolean;
}

export class PodPreemptions {
  private readonly preempted = new Set<string>();

  constructor(private readonly d: PodPreemptionsDeps) {}

  /** Ends the pods for `critical`; resolves once they have stopped (or their time is out). */
  async preempt(victims: V1Pod[], critical: V1Pod): Promise<void> {
    for (const pod of victims) {
      const uid = pod.metadata?.uid ?? '';
      this.d.recorder.event(podRef(pod), 'Warning', PREEMPTING_REASON, PREEMPTED_MESSAGE);
      this.d.logger.info('preempting pod to free up resources', { ...podFields(pod), requestingPod: `${critical.metadata?.namespace}/${critical.metadata?.name}` });
      this.preempted.add(uid);
      this.d.wake(uid);
    }
    const waitS = Math.max(10, ...victims.map((p) => 1.5 * (p.spec?.terminationGracePeriodSeconds ?? 30)));
    const stopped = await waitUntil(this.d.clock, () => victims.every((p) => this.d.isTerminated(p.metadata?.uid ?? '')), this.d.clock.now() + waitS * 1000);
    if (!stopped) this.d.logger.warn('preempted pods still stopping: the critical pod is admitted anyway', { requestingPod: `${critical.metadata?.namespace}/${critical.metadata?.name}` });
  }

  of(uid: string): NodeEnded | undefined {
    return this.preempted.has(uid) ? { reason: PREEMPTING_REASON, message: PREEMPTED_MESSAGE, disruptionTarget: PREEMPTED_CONDITION_MESSAGE } : undefined;
  }

  forget(uid: string): void {
    this.preempted.delete(uid);
  }
}
