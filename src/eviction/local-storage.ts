// Local storage limits, as the kubelet's eviction manager enforces them (localStorageEviction): an
// emptyDir over its sizeLimit, a pod over the sum of its containers' ephemeral-storage limits, a
// container whose writable layer and logs exceed its own limit. Pure: a pod and its stats in, the
// kubelet's eviction message (or nothing) out.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { PodSummary } from '../server/stats.js';
import { bytes } from '../util/quantity.js';

const limitOf = (c: V1Container) => (c.resources?.limits as Record<string, string> | undefined)?.['ephemeral-storage'];
const sidecar = (c: V1Container) => c.restartPolicy === 'Always';

/** Whether anything of the pod has a local storage limit to watch (no stats are read for a pod without). */
export function hasLocalStorageLimits(pod: V1Pod): boolean {
  const spec = pod.spec;
  return (
    (spec?.volumes ?? []).some((v) => v.emptyDir?.sizeLimit !== undefined) ||
    [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].some((c) => limitOf(c) !== undefined)
  );
}

/**
 * The pod's ephemeral-storage limit (PodLimits): the containers' sum (the larger of it and each
 * init container's), or none when a regular container or sidecar has none.
 */
function podEphemeralLimit(pod: V1Pod): { text: string; bytes: number } | undefined {
  const running = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []).filter(sidecar)];
  if (!running.length || running.some((c) => limitOf(c) === undefined)) return undefined;
  let total = running.reduce((n, c) => n + bytes(limitOf(c)!), 0);
  for (const c of (pod.spec?.initContainers ?? []).filter((c) => !sidecar(c))) if (limitOf(c) !== undefined) total = Math.max(total, bytes(limitOf(c)!));
  return { text: quantityText(total), bytes: total };
}

/** A byte count as resource.Quantity prints a BinarySI value: the largest exact binary suffix. */
export function quantityText(n: number): string {
  for (const [suffix, size] of [['Ei', 2 ** 60], ['Pi', 2 ** 50], ['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const) {
    if (n >= size && n % size === 0) return `${n / size}${suffix}`;
  }
  return String(n);
}

/** The kubelet's eviction message for the first limit the pod is over, in its order; undefined: none. */
export function localStorageViolation(pod: V1Pod, stats: PodSummary): string | undefined {
  const used = new Map((stats.volume ?? []).map((v) => [v.name, v.usedBytes ?? 0]));
  for (const v of pod.spec?.volumes ?? []) {
    const limit = v.emptyDir?.sizeLimit;
    // A memory-backed emptyDir is a tmpfs of that size: the kernel holds it there.
    if (limit === undefined || v.emptyDir?.medium === 'Memory') continue;
    const size = bytes(limit);
    if (size > 0 && (used.get(v.name) ?? 0) > size) return `Usage of EmptyDir volume "${v.name}" exceeds the limit "${limit}". `;
  }
  const podLimit = podEphemeralLimit(pod);
  if (podLimit && (stats['ephemeral-storage']?.usedBytes ?? 0) > podLimit.bytes) return `Pod ephemeral local storage usage exceeds the total limit of containers ${podLimit.text}. `;
  const limits = new Map<string, string>();
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []).filter(sidecar)]) {
    const l = limitOf(c);
    if (l !== undefined && bytes(l) !== 0) limits.set(c.name, l);
  }
  for (const c of stats.containers) {
    const limit = limits.get(c.name);
    // The node has one filesystem for images and pods here: a container's writable layer counts with its logs.
    if (limit !== undefined && (c.logs?.usedBytes ?? 0) + (c.rootfs?.usedBytes ?? 0) > bytes(limit)) return `Container ${c.name} exceeded its local ephemeral storage limit "${limit}". `;
  }
  return undefined;
}
