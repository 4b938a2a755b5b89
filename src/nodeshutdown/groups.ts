// Graceful node shutdown's plan, as the kubelet's nodeshutdown manager makes it: pods in groups by
// priority, each group given its share of shutdownGracePeriod (critical pods, of
// system-critical priority and above, the last shutdownGracePeriodCriticalPods of it), the groups
// ended one after the other, lowest priority first. Pure.
import type { V1Pod } from '@kubernetes/client-node';
import { SYSTEM_CRITICAL_PRIORITY } from '../pods/pressure-admission.js';

/** The reason and message of a pod ended by a node shutdown, and of one refused meanwhile. */
export const NODE_SHUTDOWN_REASON = 'Terminated';
export const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
export const NODE_SHUTDOWN_NOT_ADMITTED_REASON = 'NodeShutdown';
export const NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE = 'Pod was rejected as the node is shutting down.';

export interface ShutdownGroup {
  /** Pods of this priority and up to the next group's. */
  priority: number;
  gracePeriodSeconds: number;
}

/** The groups of shutdownGracePeriod and shutdownGracePeriodCriticalPods (the kubelet's migrateConfig); none when shutdown is off. */
export function shutdownGroups(shutdownGracePeriodMs: number, criticalPodsMs: number): ShutdownGroup[] {
  if (shutdownGracePeriodMs <= 0) return [];
  const regular = shutdownGracePeriodMs - criticalPodsMs;
  if (regular < 0) return [];
  return [
    { priority: 0, gracePeriodSeconds: Math.floor(regular / 1000) },
    { priority: SYSTEM_CRITICAL_PRIORITY, gracePeriodSeconds: Math.floor(criticalPodsMs / 1000) },
  ];
}

/**
 * The pods of each group, groups in order of priority: a pod goes to the group of the highest
 * priority not above its own (the lowest group when below them all).
 */
export function groupByPriority(groups: ShutdownGroup[], pods: V1Pod[]): Array<ShutdownGroup & { pods: V1Pod[] }> {
  const out = [...groups].sort((a, b) => a.priority - b.priority).map((g) => ({ ...g, pods: [] as V1Pod[] }));
  if (!out.length) return out;
  for (const pod of pods) {
    const priority = pod.spec?.priority ?? 0;
    let index = 0;
    for (let i = 0; i < out.length; i++) if (out[i]!.priority <= priority) index = i;
    out[index]!.pods.push(pod);
  }
  return out;
}

/** A pod's grace period in its group: the group's, or the pod's own when shorter. */
export function podShutdownGracePeriod(group: ShutdownGroup, pod: V1Pod): number {
  const own = pod.spec?.terminationGracePeriodSeconds;
  return own !== undefined && own <= group.gracePeriodSeconds ? own : group.gracePeriodSeconds;
}
