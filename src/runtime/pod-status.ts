// getPodStatus and getPods: the runtime's view of pods, rebuilt from CRI every time.
import { isNotFound } from '../cri/errors.js';
import type { PodSandboxStatus } from '../cri/types.js';
import { containerState, getPodContainerStatuses } from './container.js';
import type { RuntimeManagerDeps } from './deps.js';
import { getContainerInfoFromAnnotations, getContainerInfoFromLabels, NodeNameLabel } from './labels.js';
import { determinePodSandboxIPs, getPodSandboxes, getSandboxesByPodUID } from './sandbox.js';
import type { PodStatus, RunningPod } from './types.js';

export async function getPodStatus(deps: RuntimeManagerDeps, uid: string, name: string, namespace: string): Promise<PodStatus> {
  // Sandboxes and containers are read side by side (each status call too): this is on every start's
  // path, twice. Nothing creates them for this pod meanwhile: only its own worker does, and it is here.
  const [sandboxes, containerStatuses] = await Promise.all([sandboxStatusesOf(deps, uid, name, namespace), getPodContainerStatuses(deps, uid)]);
  const sandboxStatuses = sandboxes.filter((s): s is PodSandboxStatus => s !== undefined);
  // Only the newest sandbox gives the pod its IPs (none when it was removed since the list).
  const newest = sandboxes[0];
  const ips = newest?.state === 'SANDBOX_READY' ? determinePodSandboxIPs(newest) : [];
  return { uid, name, namespace, ips, sandboxStatuses, containerStatuses, timestamp: deps.clock.now() };
}

/** The pod's sandboxes' statuses, newest first; undefined for one removed between the list and its status. */
async function sandboxStatusesOf(deps: RuntimeManagerDeps, uid: string, name: string, namespace: string): Promise<Array<PodSandboxStatus | undefined>> {
  const sandboxes = await getSandboxesByPodUID(deps, uid);
  return Promise.all(
    sandboxes.map(async (sb) => {
      let status: PodSandboxStatus | null;
      try {
        status = (await deps.runtime.podSandboxStatus(sb.id)).status;
      } catch (err) {
        // Removed between the list and this call: as if not listed.
        if (isNotFound(err)) return undefined;
        throw new Error(`failed to get sandbox ${sb.id} status for pod ${namespace}/${name}: ${(err as Error).message}`, { cause: err });
      }
      if (!status) throw new Error('pod sandbox status is nil');
      return status;
    }),
  );
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
