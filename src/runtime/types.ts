// The runtime manager's own view of pods and containers (the kubelet's kubecontainer package),
// rebuilt from CRI on every sync.
import type { PodSandboxStatus } from '../cri/types.js';

export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** A container ID with its runtime type, shown to users as `containerd://<id>`. */
export interface ContainerID {
  type: string;
  id: string;
}

export function formatContainerID(id: ContainerID): string {
  return `${id.type}://${id.id}`;
}

/** One container instance as the runtime reports it (kubecontainer.Status). */
export interface ContainerStatus {
  id: ContainerID;
  name: string;
  state: ContainerState;
  /** Milliseconds since the epoch; 0 when not known. */
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: string;
  imageID: string;
  imageRef: string;
  /** Hash of the container spec that created it (label io.kubernetes.container.hash). */
  hash: string;
  restartCount: number;
  reason: string;
  message: string;
  /** What the runtime says the container runs with, where it says (CRI ContainerStatus.resources). */
  resources?: { cpuShares: number; cpuQuota: number; memoryLimit: number };
}

/** Everything the runtime knows of one pod: sandboxes newest first, container instances newest first. */
export interface PodStatus {
  uid: string;
  name: string;
  namespace: string;
  ips: string[];
  sandboxStatuses: PodSandboxStatus[];
  containerStatuses: ContainerStatus[];
  /** When the status was read (ms since epoch). */
  timestamp: number;
}

export function findContainerStatusByName(status: PodStatus | undefined, name: string): ContainerStatus | undefined {
  // containerStatuses are newest first: the first match is the latest instance.
  return status?.containerStatuses.find((c) => c.name === name);
}

/** A running (or leftover) pod as grouped from CRI listings (kubecontainer.Pod). */
export interface RunningPod {
  uid: string;
  name: string;
  namespace: string;
  containers: RunningContainer[];
  sandboxes: RunningContainer[];
}

export interface RunningContainer {
  id: ContainerID;
  name: string;
  image: string;
  imageID: string;
  hash: string;
  state: ContainerState;
  createdAt: number;
}

/** A pod's runtime status reduced to what killing it needs (ConvertPodStatusToRunningPod). */
export function runningPodFromStatus(runtimeName: string, status: PodStatus): RunningPod {
  return {
    uid: status.uid,
    name: status.name,
    namespace: status.namespace,
    containers: status.containerStatuses
      .filter((c) => c.state === 'running')
      .map((c) => ({ id: c.id, name: c.name, image: c.image, imageID: c.imageID, hash: c.hash, state: c.state, createdAt: c.createdAt })),
    // Every sandbox, ready or not: a not-ready sandbox can still hold a network namespace.
    sandboxes: status.sandboxStatuses.map((s) => ({
      id: { type: runtimeName, id: s.id },
      name: '',
      image: '',
      imageID: '',
      hash: '',
      state: s.state === 'SANDBOX_READY' ? 'running' : 'exited',
      createdAt: Math.floor(Number(s.created_at) / 1e6),
    })),
  };
}
