// The runtime manager's dependencies, made from the agent's configuration and its parts: the image
// manager with its pull limits, back-off and pull records, the crash-loop back-off, seccomp, DNS and the pod
// state the GC and SyncPod ask the pod workers about.
import os from 'node:os';
import { join } from 'node:path';
import type { NodeletConfig } from '../config/config.js';
import type { CriClient } from '../cri/client.js';
import { ImageManager } from '../images/image-manager.js';
import { PullRecords } from '../images/pull-records.js';
import type { EventRecorder } from '../kube/object-ref.js';
import type { RuntimeClassManager } from '../kube/runtime-class.js';
import type { ServiceCache } from '../kube/service-cache.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { PodWorkers } from '../pods/pod-workers.js';
import type { ProbeManager } from '../prober/manager.js';
import { Backoff } from '../runtime/backoff.js';
import type { RuntimeManagerDeps } from '../runtime/deps.js';
import type { ActuatedResources } from '../runtime/resize.js';
import type { Clock } from '../util/clock.js';
import { hostIPv4 } from '../util/net.js';
import type { Volumes } from '../volumes/volume-host.js';
import type { PodCgroups } from './pod-cgroups.js';

export interface AgentParts {
  cri: CriClient;
  runtimeName: string;
  recorder: EventRecorder;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  workers: PodWorkers;
  probes: ProbeManager;
  volumes: Volumes;
  services?: ServiceCache;
  runtimeClasses?: RuntimeClassManager;
  actuated: ActuatedResources;
  podCgroups?: PodCgroups;
}

export function runtimeManagerDeps(config: NodeletConfig, p: AgentParts): RuntimeManagerDeps {
  const workers = p.workers;
  return {
    runtime: p.cri,
    images: p.cri,
    imageManager: new ImageManager({
      images: p.cri,
      recorder: p.recorder,
      clock: p.clock,
      serializePulls: config.serializeImagePulls,
      maxParallelPulls: config.maxParallelImagePulls,
      pullRecords: new PullRecords(join(config.rootDir, 'image_manager')),
      backoffInitialMs: config.imagePullBackOff.initialMs,
      backoffMaxMs: config.imagePullBackOff.maxMs,
      pullQPS: config.imagePullQPS,
      pullBurst: config.imagePullBurst,
    }),
    runtimeName: p.runtimeName,
    nodeName: config.nodeName,
    nodeIP: config.nodeIP || hostIPv4(),
    recorder: p.recorder,
    clock: p.clock,
    logger: p.logger,
    metrics: p.metrics,
    podState: {
      isPodTerminationRequested: (uid) => workers.isPodTerminationRequested(uid),
      shouldPodContentBeRemoved: (uid) => !workers.isKnown(uid),
      shouldPodRuntimeBeRemoved: (uid) => workers.isPodTerminated(uid),
    },
    probes: { liveness: p.probes.liveness, startup: p.probes.startup },
    configSource: p.volumes.objects,
    services: p.services,
    runtimeClasses: p.runtimeClasses,
    podLogRoot: config.podLogRoot,
    containerLogsDir: config.containerLogsDir,
    cpuCFSQuota: config.cpuCFSQuota,
    allowPrivileged: config.allowPrivileged,
    seccomp: { profileRoot: join(config.rootDir, 'seccomp'), defaultToRuntimeDefault: config.seccompDefault },
    actuated: p.actuated,
    crashLoopBackoff: new Backoff(p.clock, config.crashLoopBackOff.initialMs, config.crashLoopBackOff.maxMs),
    podCgroupParent: (pod) => p.podCgroups?.parent(pod),
    podCgroupResized: (pod) => p.podCgroups?.resized(pod),
    containerCgroups: p.podCgroups?.containerSettings(),
    memoryCapacity: os.totalmem(),
    volumes: p.volumes.manager,
    clusterDomain: config.clusterDomain,
    dns: { clusterDNS: config.clusterDNS, clusterDomain: config.clusterDomain, resolvConf: config.resolvConf },
  };
}
