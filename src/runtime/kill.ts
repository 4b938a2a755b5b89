// Killing a pod: every running container in parallel, then every sandbox of the pod.
import type { V1Pod } from '@kubernetes/client-node';
import { isNotFound } from '../cri/errors.js';
import { podFields } from '../observability/logger.js';
import { killContainer } from './container.js';
import type { RuntimeManagerDeps } from './deps.js';
import { Reasons } from './errors.js';
import { PodSyncResult, SyncResult } from './sync-result.js';
import type { RunningPod } from './types.js';

/** Kills a running pod. `pod` may be undefined (an agent restarted and the pod is gone from the API). */
export async function killPodWithSyncResult(deps: RuntimeManagerDeps, pod: V1Pod | undefined, running: RunningPod, gracePeriodOverride?: number): Promise<PodSyncResult> {
  const result = new PodSyncResult();
  const killed = await Promise.all(
    running.containers.map(async (c) => {
      const r = new SyncResult('KillContainer', c.name);
      try {
        await killContainer(deps, pod, c.id.id, c.name, '', 'Unknown', gracePeriodOverride);
      } catch (err) {
        r.fail(Reasons.KillContainer, (err as Error).message);
        deps.logger.error('kill container failed', { pod: `${running.namespace}/${running.name}`, uid: running.uid, container: c.name, error: (err as Error).message });
      }
      return r;
    }),
  );
  killed.forEach((r) => result.add(r));

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
