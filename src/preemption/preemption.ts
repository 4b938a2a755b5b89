// Critical pod preemption, as the kubelet's (pkg/kubelet/preemption): a critical pod that does not
// fit only for want of resources is admitted once the kubelet has ended other pods that free them.
// Which pods: those it may preempt (not critical, or of lower priority), BestEffort before
// Burstable before Guaranteed, and within a class the fewest, closest to what is missing. Pure.
import type { V1Pod } from '@kubernetes/client-node';
import { podRequest } from '../cm/pod-resources.js';
import { podQOSClass } from '../runtime/resources.js';
import type { InsufficientResource } from '../pods/admission.js';
import { podIsCritical } from '../pods/pressure-admission.js';

export const PREEMPTING_REASON = 'Preempting';
export const PREEMPTED_MESSAGE = 'Preempted in order to admit critical pod';
export const PREEMPTED_CONDITION_MESSAGE = 'Pod was preempted by Kubelet to accommodate a critical pod.';

/** What must be freed of one resource. */
export interface Requirement {
  resourceName: string;
  quantity: number;
}

/** What is missing of each insufficient resource: requested less what is left. */
export function requirementsOf(insufficient: InsufficientResource[]): Requirement[] {
  return insufficient.map((r) => ({ resourceName: r.resourceName, quantity: r.requested - (r.capacity - r.used) }));
}

/** A pod's request of a resource; one pod slot for "pods". */
const requestOf = (pod: V1Pod, name: string) => (name === 'pods' ? 1 : podRequest(pod, name));

/** The kubelet's Preemptable: a critical pod preempts any other; else a higher priority a lower. */
export function preemptable(preemptor: V1Pod, preemptee: V1Pod): boolean {
  if (podIsCritical(preemptor) && !podIsCritical(preemptee)) return true;
  const a = preemptor.spec?.priority;
  const b = preemptee.spec?.priority;
  return a !== undefined && b !== undefined && a > b;
}

function subtract(reqs: Requirement[], pods: V1Pod[]): Requirement[] {
  const out: Requirement[] = [];
  for (const r of reqs) {
    let q = r.quantity;
    for (const p of pods) {
      q -= requestOf(p, r.resourceName);
      if (q <= 0) break;
    }
    if (q > 0) out.push({ resourceName: r.resourceName, quantity: q });
  }
  return out;
}

function distance(reqs: Requirement[], pod: V1Pod): number {
  let d = 0;
  for (const r of reqs) {
    const remaining = r.quantity - requestOf(pod, r.resourceName);
    if (remaining > 0) d += (remaining / r.quantity) ** 2;
  }
  return d;
}

/** Whether a asks less than b: memory first, then cpu. */
function smallerRequest(a: V1Pod, b: V1Pod): boolean {
  for (const r of ['memory', 'cpu']) {
    const x = podRequest(a, r);
    const y = podRequest(b, r);
    if (x !== y) return x < y;
  }
  return true;
}

export class PreemptionError extends Error {}

export const requirementsText = (reqs: Requirement[]) => `[${reqs.map((r) => `(res: ${r.resourceName}, q: ${r.quantity}), `).join('')}]`;

function byDistance(candidates: V1Pod[], reqs: Requirement[]): V1Pod[] {
  const pods = [...candidates];
  const chosen: V1Pod[] = [];
  while (reqs.length) {
    if (!pods.length) throw new PreemptionError(`no set of running pods found to reclaim resources: ${requirementsText(reqs)}`);
    let best = 0;
    let bestDistance = reqs.length + 1;
    pods.forEach((p, i) => {
      const d = distance(reqs, p);
      if (d < bestDistance || (d === bestDistance && smallerRequest(p, pods[best]!))) {
        bestDistance = d;
        best = i;
      }
    });
    const [pod] = pods.splice(best, 1);
    chosen.push(pod!);
    reqs = subtract(reqs, [pod!]);
  }
  return chosen;
}

/** The pods to end for the critical pod to fit; throws PreemptionError when no set of them would do. */
export function podsToPreempt(pod: V1Pod, active: V1Pod[], reqs: Requirement[]): V1Pod[] {
  const candidates = active.filter((p) => preemptable(pod, p));
  const of = (qos: string) => candidates.filter((p) => podQOSClass(p) === qos);
  const [bestEffort, burstable, guaranteed] = [of('BestEffort'), of('Burstable'), of('Guaranteed')];
  const unmet = subtract(reqs, [...bestEffort, ...burstable, ...guaranteed]);
  if (unmet.length) throw new PreemptionError(`no set of running pods found to reclaim resources: ${requirementsText(unmet)}`);
  // Guaranteed pods only for what the others cannot free, then Burstable, then BestEffort for the rest.
  const guaranteedOut = byDistance(guaranteed, subtract(reqs, [...bestEffort, ...burstable]));
  const burstableOut = byDistance(burstable, subtract(reqs, [...bestEffort, ...guaranteedOut]));
  const bestEffortOut = byDistance(bestEffort, subtract(reqs, [...burstableOut, ...guaranteedOut]));
  return [...bestEffortOut, ...burstableOut, ...guaranteedOut];
}
