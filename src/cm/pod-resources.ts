// A pod's requests and limits as the kubelet's resource helpers count them (component-helpers'
// PodRequests and PodLimits): what admission, the pod cgroup and the QoS cgroups are sized by. Pure.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { bytes, milliCPU } from '../util/quantity.js';

/** cpu (in millicores), memory, ephemeral-storage, hugepages-*, an extended resource. */
export type ResourceName = string;
type Requirements = { requests?: Record<string, string>; limits?: Record<string, string> };

const parseFor = (r: ResourceName) => (q: string) => (r === 'cpu' ? milliCPU(q) : bytes(q));
const requirements = (c: V1Container) => (c.resources ?? {}) as Requirements;
const podLevel = (pod: V1Pod) => (pod.spec as { resources?: Requirements } | undefined)?.resources;
const overhead = (pod: V1Pod, r: ResourceName) => (pod.spec?.overhead as Record<string, string> | undefined)?.[r];

/**
 * Regular containers and sidecars (restartable init containers) run together; each other init
 * container runs with the sidecars started before it: the larger of the two sums.
 */
function aggregate(pod: V1Pod, amount: (c: V1Container) => number): number {
  let total = (pod.spec?.containers ?? []).reduce((n, c) => n + amount(c), 0);
  let sidecars = 0;
  let init = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    if (c.restartPolicy === 'Always') {
      total += amount(c);
      sidecars += amount(c);
      init = Math.max(init, sidecars);
    } else {
      init = Math.max(init, amount(c) + sidecars);
    }
  }
  return Math.max(total, init);
}

/**
 * One resource's request of a pod (PodRequests): the containers' (a request defaults to its
 * limit), pod-level requests in place of them when set, overhead on top unless excluded.
 */
export function podRequest(pod: V1Pod, r: ResourceName, opts: { excludeOverhead?: boolean } = {}): number {
  const parse = parseFor(r);
  const pl = podLevel(pod)?.requests?.[r] ?? podLevel(pod)?.limits?.[r];
  let total =
    pl !== undefined
      ? parse(pl)
      : aggregate(pod, (c) => {
          const q = requirements(c).requests?.[r] ?? requirements(c).limits?.[r];
          return q === undefined ? 0 : parse(q);
        });
  const o = overhead(pod, r);
  if (o !== undefined && !opts.excludeOverhead) total += parse(o);
  return total;
}

/**
 * One resource's limit of a pod (PodLimits): pod-level limit when set, else the containers'
 * (a container without one counts 0); overhead added only to a limit that is there (non-zero).
 */
export function podLimit(pod: V1Pod, r: ResourceName, opts: { excludeOverhead?: boolean } = {}): number {
  const parse = parseFor(r);
  const pl = podLevel(pod)?.limits?.[r];
  let total =
    pl !== undefined
      ? parse(pl)
      : aggregate(pod, (c) => {
          const q = requirements(c).limits?.[r];
          return q === undefined ? 0 : parse(q);
        });
  const o = overhead(pod, r);
  if (total > 0 && o !== undefined && !opts.excludeOverhead) total += parse(o);
  return total;
}

/** Whether the pod's limit of r is bounded: set at pod level, or by every container (init ones too). */
export function limitsDeclared(pod: V1Pod, r: ResourceName): boolean {
  if (podLevel(pod)?.limits?.[r] !== undefined) return true;
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.every((c) => {
    const q = requirements(c).limits?.[r];
    return q !== undefined && parseFor(r)(q) !== 0;
  });
}
