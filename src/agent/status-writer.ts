// Where the status manager writes a pod's status: the API for pods of the API server; the local
// store for static pods (no API object of their own), and their mirror pod in the API when there
// is one; standalone, the local store only.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { apiErrorMessage, httpCode, type KubeClient } from '../kube/client.js';
import type { LocalPodStatusStore } from '../kube/local.js';
import { podFields, type Logger } from '../observability/logger.js';
import type { MirrorPodManager } from '../pods/mirror-pods.js';
import type { StaticPodSource } from '../pods/static-pods.js';
import { StatusManager } from '../status/status-manager.js';
import type { Clock } from '../util/clock.js';

export interface StatusWriterParts {
  kube?: KubeClient;
  local: LocalPodStatusStore;
  staticPods(): StaticPodSource | undefined;
  mirrors(): MirrorPodManager | undefined;
  /** Each status sent, for the start trace. */
  sent(uid: string, status: V1PodStatus): void;
  clock: Clock;
  logger: Logger;
}

export function newStatusManager(p: StatusWriterParts): StatusManager {
  const { kube, local } = p;
  const isLocal = (uid: string) => !kube || p.staticPods()?.list().some((pod) => pod.metadata?.uid === uid) === true;
  const toMirror = async (ns: string, name: string, uid: string, st: V1PodStatus) => {
    const r = await local.patchPodStatus(ns, name, uid, st);
    const m = p.mirrors()?.mirrorOf(uid);
    // A static pod's status also goes to its mirror pod in the API (with the mirror's UID).
    return m ? kube!.patchPodStatus(m.namespace, m.name, m.uid, st) : r;
  };
  return new StatusManager(
    {
      listPods: (sel, rv) => (kube ? kube.listPods(sel, rv) : local.listPods()),
      patchPodStatus: async (ns, name, uid, st) => {
        const patched = await (isLocal(uid) ? toMirror(ns, name, uid, st) : kube!.patchPodStatus(ns, name, uid, st));
        p.sent(uid, st);
        return patched;
      },
      deletePod: (ns, name, uid) => (isLocal(uid) ? local.deletePod(ns, name, uid) : kube!.deletePod(ns, name, uid)),
    },
    p.clock,
    p.logger,
  );
}

/**
 * A terminated pod's API object is deleted once its final status is written (the kubelet's status
 * manager); throws (the worker retries) while that status is not written yet.
 */
export async function deleteFromApi(kube: KubeClient, statuses: StatusManager, pod: V1Pod, logger: Logger): Promise<void> {
  const uid = pod.metadata?.uid ?? '';
  if (!(await statuses.waitSynced(uid, 5000))) throw new Error('the final pod status is not written yet: the pod is deleted once it is');
  try {
    await kube.deletePod(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '', uid);
    logger.info('pod deleted from the API server', podFields(pod));
  } catch (err) {
    const code = httpCode(err);
    // Gone already, or a new pod of that name (UID precondition): either way ours is done.
    if (code !== 404 && code !== 409) throw new Error(`delete pod: ${apiErrorMessage(err)}`);
  }
}
