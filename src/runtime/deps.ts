// What the runtime manager is built from. Everything is injected, so tests can pass small fakes.
import type { V1ConfigMap, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import type { ImageService, RuntimeService } from '../cri/services.js';
import type { ImageManager } from '../images/image-manager.js';
import type { EventRecorder } from '../kube/object-ref.js';
import type { RuntimeHandlerLookup } from '../kube/runtime-class.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../util/clock.js';
import type { MountedVolume, VolumeHost } from '../volumes/types.js';
import type { Backoff } from './backoff.js';
import type { ActuatedResources } from './resize.js';
import type { SeccompSettings } from './security-profiles.js';
import type { DnsSettings } from './dns.js';
import type { ProbeInputs } from './pod-actions.js';

export interface ContainerCgroupSettings {
  version: 'v1' | 'v2';
  /** v2: the container's processes are killed together on an OOM (the kubelet's default, singleProcessOOMKill false). */
  oomGroup: boolean;
  /** The memory controller accounts swap (v1 memory.memsw, v2 memory.swap.max): containers get none (NoSwap). */
  swapController: boolean;
}

/** What the pod workers know of a pod's life cycle (the seed's podStateProvider). */
export interface PodStateProvider {
  isPodTerminationRequested(uid: string): boolean;
  /** The pod is gone from the API and terminated: its dead containers and logs may go. */
  shouldPodContentBeRemoved(uid: string): boolean;
  /** Nothing of the pod needs to stay in the runtime (no worker for it, or terminated). */
  shouldPodRuntimeBeRemoved(uid: string): boolean;
}

/** ConfigMaps and Secrets for env vars (configMapKeyRef, secretKeyRef, envFrom). */
export interface ConfigSource {
  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined>;
  getSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
}

export interface RuntimeManagerDeps {
  runtime: RuntimeService;
  images: ImageService;
  imageManager: ImageManager;
  /** The runtime's name from CRI Version (e.g. "containerd"): the scheme of container IDs. */
  runtimeName: string;
  nodeName: string;
  /** The node's IP, for status.hostIP and the downward API. */
  nodeIP: string;
  recorder: EventRecorder;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  podState: PodStateProvider;
  probes: ProbeInputs;
  configSource?: ConfigSource;
  /** The Services of a namespace, for service-link variables (undefined: not read yet). None standalone. */
  services?: { services(namespace: string): Promise<V1Service[] | undefined> };
  /** RuntimeClass name to CRI handler; absent without an API server (standalone), where no pod can name one. */
  runtimeClasses?: RuntimeHandlerLookup;
  /** Root of container logs: <podLogRoot>/<ns>_<name>_<uid>/<container>/<restartCount>.log. */
  podLogRoot: string;
  /** The legacy links <pod>_<ns>_<container>-<id>.log to containers' logs (log-symlinks.ts); '' for none. */
  containerLogsDir: string;
  cpuCFSQuota: boolean;
  allowPrivileged: boolean;
  /** The resources each running container was last given (for in-place resize); absent: no resize. */
  actuated?: ActuatedResources;
  /** seccomp: where Localhost profiles live, and the node's default (absent: <no default>, /var/lib/kubelet/seccomp). */
  seccomp?: SeccompSettings;
  /** Crash-loop backoff of containers (10 s doubling to 300 s). */
  crashLoopBackoff: Backoff;
  /** The pod cgroup a pod's sandbox goes under (CRI cgroup_parent); absent or undefined: the runtime's default. */
  podCgroupParent?(pod: V1Pod): string | undefined;
  /** A pod's resize is being actuated: its pod cgroup gets the new limits (never throws). */
  podCgroupResized?(pod: V1Pod): void;
  /** What the node's cgroups are: the container settings the kubelet adds for them (memory.oom.group, no swap). */
  containerCgroups?: ContainerCgroupSettings;
  /** Node memory capacity in bytes, for the OOM score of Burstable pods. */
  memoryCapacity: number;
  /** The pods' set-up volumes and where their files go; without it a container may mount nothing. */
  volumes?: { host: VolumeHost; volumesOf(uid: string): Map<string, MountedVolume> };
  /** The cluster's DNS domain (cluster.local), for the pod's own entry in /etc/hosts. */
  clusterDomain: string;
  /** How pods' DNS is chosen (dnsPolicy): the cluster's servers, and the node's resolv.conf. */
  dns: DnsSettings;
}
