// The kubelet's eviction message for a resource the node ran short of: the threshold met and what
// was available, then the pod (pod-level requests) and each container using more than it asked
// for. Pure.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { PodSummary } from '../server/stats.js';
import { bytes } from '../util/quantity.js';
import { quantityText } from './local-storage.js';
import { resourceOf, thresholdQuantity, type Observations, type ReclaimResource, type Threshold } from './thresholds.js';

/** A count as resource.Quantity prints a DecimalSI value: the largest exact decimal suffix. */
export function decimalQuantityText(n: number): string {
  for (const [suffix, size] of [['E', 1e18], ['P', 1e15], ['T', 1e12], ['G', 1e9], ['M', 1e6], ['k', 1e3]] as const) {
    if (n >= size && n % size === 0) return `${n / size}${suffix}`;
  }
  return String(n);
}

const textOf = (r: ReclaimResource, n: number) => (r === 'inodes' || r === 'pids' ? decimalQuantityText(n) : quantityText(n));

export function evictionMessage(resource: ReclaimResource, pod: V1Pod, stats: PodSummary | undefined, thresholds: Threshold[], observations: Observations): string {
  let message = `The node was low on resource: ${resource}. `;
  const t = thresholds.find((x) => resourceOf(x.signal) === resource && observations[x.signal]);
  const o = t && observations[t.signal];
  if (t && o) message += `Threshold quantity: ${textOf(resource, thresholdQuantity(t.value, o.capacity))}, available: ${textOf(resource, o.available)}. `;
  if (!stats) return message;
  const podLevel = (pod.spec?.resources?.requests as Record<string, string> | undefined)?.memory;
  if (resource === 'memory' && podLevel !== undefined && stats.memory?.workingSetBytes !== undefined) {
    message += `Pod ${pod.metadata?.name} was using ${quantityText(stats.memory.workingSetBytes)}, request is ${podLevel}, has larger consumption of memory. `;
  }
  if (resource !== 'memory' && resource !== 'ephemeral-storage') return message;
  const containers: V1Container[] = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  for (const cs of stats.containers) {
    const c = containers.find((x) => x.name === cs.name);
    if (!c) continue;
    let usage: number | undefined;
    if (resource === 'memory') usage = cs.memory?.workingSetBytes;
    else if (cs.rootfs?.usedBytes !== undefined && cs.logs?.usedBytes !== undefined) usage = cs.rootfs.usedBytes + cs.logs.usedBytes;
    const request = (c.resources?.requests as Record<string, string> | undefined)?.[resource];
    if (usage !== undefined && usage > (request ? bytes(request) : 0)) message += `Container ${c.name} was using ${quantityText(usage)}, request is ${request ?? '0'}, has larger consumption of ${resource}. `;
  }
  return message;
}
