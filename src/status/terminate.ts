// The status of a pod stopped for good, as the kubelet's status manager finishes it (TerminatePod):
// no container is left waiting or running in it (what never ran, or cannot be found, ended with
// ContainerStatusUnknown), and its phase is terminal. Without this, a pod deleted before its image
// could be pulled would stay Pending in the API for ever (a finalizer keeps the object).
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { isStaticPod } from '../pods/static-pods.js';

const UNKNOWN = { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated', exitCode: 137 };

function ended(s: V1ContainerStatus): V1ContainerStatus {
  return s.state?.terminated ? s : { ...s, state: { terminated: { ...UNKNOWN } }, ready: false };
}

/** The kubelet's hasPodInitialized: no init containers, a container that left waiting, or the last init container done. */
function hasPodInitialized(pod: V1Pod, status: V1PodStatus): boolean {
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length === 0) return true;
  if ((status.containerStatuses ?? []).some((s) => s.lastState?.terminated || !s.state?.waiting)) return true;
  const statuses = status.initContainerStatuses ?? [];
  const last = statuses.at(-1);
  const spec = last ? inits[statuses.length - 1] : undefined;
  if (!last || !spec) return false;
  if (spec.restartPolicy === 'Always') return Boolean(last.state?.running && last.started);
  return last.lastState?.terminated?.exitCode === 0 || last.state?.terminated?.exitCode === 0;
}

/** Init containers with evidence of a start: all but the trailing ones still waiting, and at least the first. */
function startedInitContainers(statuses: V1ContainerStatus[]): number {
  for (let i = statuses.length - 1; i >= 0; i--) {
    const s = statuses[i]!;
    if (!s.state?.waiting || s.lastState?.terminated) return i + 1;
  }
  return Math.min(1, statuses.length);
}

export function terminatedPodStatus(pod: V1Pod, status: V1PodStatus): V1PodStatus {
  const out: V1PodStatus = { ...status };
  if (hasPodInitialized(pod, status)) out.containerStatuses = (status.containerStatuses ?? []).map(ended);
  if (status.initContainerStatuses) {
    const started = startedInitContainers(status.initContainerStatuses);
    out.initContainerStatuses = status.initContainerStatuses.map((s, i) => (i < started ? ended(s) : s));
  }
  // Static pods keep their phase (the kubelet's own exception, until upstream decides).
  if (!isStaticPod(pod) && out.phase !== 'Succeeded' && out.phase !== 'Failed') out.phase = 'Failed';
  return out;
}
