// Killing a pod: every running container in parallel (sidecars' stop signals after the app's),
// then every sandbox of the pod.
import type { V1Pod } from '@kubernetes/client-node';
import { isNotFound } from '../cri/errors.js';
import { podFields } from '../observability/logger.js';
import { KillAbortedError, killContainer } from './container.js';
import type { RuntimeManagerDeps } from './deps.js';
import { Reasons } from './errors.js';
import { PodSyncResult, SyncResult } from './sync-result.js';
import { hasRestartableInitContainer, TerminationOrdering } from './termination-ordering.js';
import type { RunningPod } from './types.js';

/** Kills a running pod. `pod` may be undefined (an agent restarted and the pod is gone from the API). */
export async function killPodWithSyncResult(
  deps: RuntimeManagerDeps,
  pod: V1Pod | undefined,
  running: RunningPod,
  gracePeriodOverride?: number,
  signal?: AbortSignal,
): Promise<PodSyncResult> {
  const result = new PodSyncResult();
  // With sidecars: they stop after the app containers, the last one first.
  const ordering = pod && hasRestartableInitContainer(pod) ? new TerminationOrdering(pod, running.containers.map((c) => c.name)) : undefined;
  const killed = await Promise.all(
    running.containers.map(async (c) => {
      const r = new SyncResult('KillContainer', c.name);
      try {
        await killContainer(deps, pod, c.id.id, c.name, '', 'Unknown', gracePeriodOverride, ordering, signal);
      } catch (err) {
        // Cut short for a shorter grace period: not a failure, the next kill goes on with it.
        if (err instanceof KillAbortedError) return r;
        r.fail(Reasons.KillContainer, (err as Error).message);
        deps.logger.error('kill container failed', { pod: `${running.namespace}/${running.name}`, uid: running.uid, container: c.name, error: (err as Error).message });
      }
      return r;
    }),
  );
  killed.forEach((r) => result.add(r));
  // Cut short for a shorter grace period: the kill is made again, sandboxes with it.
  if (signal?.aborted) return result;

  // Sandboxes are only stopped here; garbage collection removes them.
  const sandboxResult = result.add(new SyncResult('KillPodSandbox', running.uid));
  for (const sb of running.sandboxes) {
    try {
      await deps.runtime.stopPodSandbox(sb.id.id);
    } catch (err) {
      if (isNotFound(err)) continue;
      sandboxResult.fail(Reasons.KillPodSandbox, (err as Error).message);
      deps.logger.error('stop sandbox failed', { ...(pod ? podFields(pod) : { uid: running.uid }), sandbox: sb.id.id, error: (err as Error).message });
    }
  }
  return result;
}
