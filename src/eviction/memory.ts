// Memory pressure, as the kubelet's eviction manager meets it: the signals memory.available (the
// node's memory less its working set) and allocatableMemory.available (allocatable less the pods'
// working set), a hard threshold (evictionHard.memoryAvailable, a quantity or a percentage of the
// signal's capacity), the ranking of pods (rankMemoryPressure: usage over requests first, then
// lower priority, then the larger usage above request) and the eviction message. Pure.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { podRequest } from '../cm/pod-resources.js';
import type { PodSummary } from '../server/stats.js';
import { bytes, parseQuantity } from '../util/quantity.js';
import { quantityText } from './local-storage.js';

export type MemorySignal = 'memory.available' | 'allocatableMemory.available';

export interface MemoryObservation {
  signal: MemorySignal;
  availableBytes: number;
  capacityBytes: number;
}

/** A threshold's value in bytes: a quantity, or a percentage of the signal's capacity. */
export function thresholdBytes(value: string, capacity: number): number {
  return value.endsWith('%') ? Math.floor((Number(value.slice(0, -1)) / 100) * capacity) : parseQuantity(value);
}

/** The first observation under the threshold (the kubelet's thresholdsMet), if any. */
export function memoryThresholdMet(observations: MemoryObservation[], threshold: string): { observation: MemoryObservation; quantity: number } | undefined {
  for (const o of observations) {
    const quantity = thresholdBytes(threshold, o.capacityBytes);
    if (quantity > o.availableBytes) return { observation: o, quantity };
  }
  return undefined;
}

const workingSet = (s: PodSummary | undefined) => s?.memory?.workingSetBytes ?? 0;

/** Pods in the order the kubelet evicts them under memory pressure; a pod without stats first. */
export function rankMemoryPressure(pods: V1Pod[], stats: Map<string, PodSummary>): V1Pod[] {
  const info = (p: V1Pod) => {
    const s = stats.get(p.metadata?.uid ?? '');
    const request = podRequest(p, 'memory');
    return { found: s !== undefined, exceeds: workingSet(s) > request, priority: p.spec?.priority ?? 0, over: workingSet(s) - request };
  };
  return pods
    .map((p) => ({ p, i: info(p) }))
    .sort((a, b) => {
      if (a.i.found !== b.i.found) return a.i.found ? 1 : -1;
      if (a.i.exceeds !== b.i.exceeds) return a.i.exceeds ? -1 : 1;
      if (a.i.priority !== b.i.priority) return a.i.priority - b.i.priority;
      return b.i.over - a.i.over;
    })
    .map((x) => x.p);
}

/** The kubelet's eviction message for memory: the threshold met, and each container using more than it requested. */
export function memoryEvictionMessage(pod: V1Pod, stats: PodSummary | undefined, met: { observation: MemoryObservation; quantity: number }): string {
  let message = `The node was low on resource: memory. Threshold quantity: ${quantityText(met.quantity)}, available: ${quantityText(met.observation.availableBytes)}. `;
  const containers: V1Container[] = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  for (const cs of stats?.containers ?? []) {
    const c = containers.find((x) => x.name === cs.name);
    const usage = cs.memory?.workingSetBytes;
    if (!c || usage === undefined) continue;
    const requestText = (c.resources?.requests as Record<string, string> | undefined)?.memory;
    const request = requestText ? bytes(requestText) : 0;
    if (usage > request) message += `Container ${c.name} was using ${quantityText(usage)}, request is ${requestText ?? '0'}, has larger consumption of memory. `;
  }
  return message;
}
