// getPodStatus and getPods: the runtime's view of pods, rebuilt from CRI every time.
import { isNotFound } from '../cri/errors.js';
import type { PodSandboxStatus } from '../cri/types.js';
import { containerState, getPodContainerStatuses } from './container.js';
import type { RuntimeManagerDeps } from './deps.js';
import { getContainerInfoFromAnnotations, getContainerInfoFromLabels, NodeNameLabel } from './labels.js';
import { determinePodSandboxIPs, getPodSandboxes, getSandboxesByPodUID } from './sandbox.js';
import type { PodStatus, RunningPod } from './types.js';

export async function getPodStatus(deps: RuntimeManagerDeps, uid: string, name: string, namespace: string): Promise<PodStatus> {
  const sandboxes = await getSandboxesByPodUID(deps, uid);
  const sandboxStatuses: PodSandboxStatus[] = [];
  let ips: string[] = [];
  for (const [idx, sb] of sandboxes.entries()) {
    let status: PodSandboxStatus | null;
    try {
      status = (await deps.runtime.podSandboxStatus(sb.id)).status;
    } catch (err) {
      // Removed between the list and this call: as if not listed.
      if (isNotFound(err)) continue;
      throw new Error(`failed to get sandbox ${sb.id} status for pod ${namespace}/${name}: ${(err as Error).message}`, { cause: err });
    }
    if (!status) throw new Error('pod sandbox status is nil');
    sandboxStatuses.push(status);
    // Only the newest sandbox gives the pod its IPs.
    if (idx === 0 && status.state === 'SANDBOX_READY') ips = determinePodSandboxIPs(status);
  }
  const containerStatuses = await getPodContainerStatuses(deps, uid);
  return { uid, name, namespace, ips, sandboxStatuses, containerStatuses, timestamp: deps.clock.now() };
}

/** Pods grouped from the runtime's sandboxes and containers; with `all`, dead ones too (for GC). */
export async function getPods(deps: RuntimeManagerDeps, all: boolean): Promise<RunningPod[]> {
  const pods = new Map<string, RunningPod>();
  const podFor = (uid: string, name: string, namespace: string) => {
    let p = pods.get(uid);
    if (!p) {
      p = { uid, name, namespace, containers: [], sandboxes: [] };
      pods.set(uid, p);
    }
    return p;
  };
  for (const sb of await getPodSandboxes(deps, all)) {
    if (!sb.metadata) continue;
    podFor(sb.metadata.uid, sb.metadata.name, sb.metadata.namespace).sandboxes.push({
      id: { type: deps.runtimeName, id: sb.id },
      name: sb.metadata.name,
      image: '',
      imageID: '',
      hash: '',
      state: sb.state === 'SANDBOX_READY' ? 'running' : 'exited',
      createdAt: Math.floor(Number(sb.created_at) / 1e6),
    });
  }
  const filter = all ? { label_selector: { [NodeNameLabel]: deps.nodeName } } : { label_selector: { [NodeNameLabel]: deps.nodeName }, state: { state: 'CONTAINER_RUNNING' as const } };
  for (const c of await deps.runtime.listContainers(filter)) {
    if (!c.metadata) continue;
    const info = getContainerInfoFromLabels(c.labels);
    podFor(info.podUID, info.podName, info.podNamespace).containers.push({
      id: { type: deps.runtimeName, id: c.id },
      name: info.containerName || c.metadata.name,
      image: c.image?.image ?? '',
      imageID: c.image_ref,
      hash: getContainerInfoFromAnnotations(c.annotations).hash,
      state: containerState(c.state),
      createdAt: Math.floor(Number(c.created_at) / 1e6),
    });
  }
  return [...pods.values()];
}
