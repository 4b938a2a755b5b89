// The body of a pod status update, as a strategic merge patch the way the kubelet sends it: the
// kubelet's own conditions merged by `type` (every other condition, whoever wrote it and however
// recently, is left alone), the conditions it owns and no longer reports deleted, IP lists
// replaced whole (they are merged by `ip` otherwise, and an old sandbox's address would stay), and
// the fields it owns but no longer reports cleared.
import type { V1PodCondition, V1PodStatus } from '@kubernetes/client-node';

export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

/** The conditions the kubelet owns and writes; every other one belongs to someone else. */
export const KUBELET_CONDITIONS: ReadonlySet<string> = new Set([
  'PodScheduled',
  'Ready',
  'Initialized',
  'ContainersReady',
  'PodReadyToStartContainers',
  'PodResizePending',
  'PodResizeInProgress',
]);

/** Status fields the agent writes (not the scheduler's nominatedNodeName, the claims', or what it never computes). */
const OWNED_FIELDS = [
  'phase',
  'message',
  'reason',
  'hostIP',
  'hostIPs',
  'podIP',
  'podIPs',
  'startTime',
  'qosClass',
  'initContainerStatuses',
  'containerStatuses',
  'ephemeralContainerStatuses',
] as const;

type Directive = { $patch: 'replace' | 'delete' };

/** The strategic merge patch that makes the API's status of pod `uid` what the agent computed (`desired`). */
export function podStatusPatch(uid: string, desired: V1PodStatus): { metadata: { uid: string }; status: Record<string, unknown> } {
  const status: Record<string, unknown> = {};
  const src = desired as Record<string, unknown>;
  // null deletes a field in a merge patch: what the agent no longer reports is cleared.
  for (const f of OWNED_FIELDS) status[f] = src[f] ?? null;
  for (const f of ['hostIPs', 'podIPs'] as const) {
    const list = desired[f];
    status[f] = [...(list ?? []), { $patch: 'replace' } satisfies Directive];
  }
  // Merged by type, a condition keeps the fields the patch leaves out: a Ready that turns True
  // must say its old reason and message are gone.
  // DisruptionTarget is shared: the kubelet writes it only when it ended the pod itself.
  const ours = (desired.conditions ?? [])
    .filter((c) => KUBELET_CONDITIONS.has(c.type) || (c.type === 'DisruptionTarget' && c.reason === 'TerminationByKubelet'))
    .map((c) => ({ ...c, reason: c.reason ?? null, message: c.message ?? null }) as unknown as V1PodCondition);
  const reported = new Set(ours.map((c) => c.type));
  const deleted = [...KUBELET_CONDITIONS].filter((t) => !reported.has(t) && t !== 'PodScheduled').map((type) => ({ type, $patch: 'delete' }));
  status.conditions = [...ours, ...deleted] as Array<V1PodCondition | (Directive & { type: string })>;
  return { metadata: { uid }, status };
}
