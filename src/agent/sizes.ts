// The agent's internal sizes for /metrics, read from its parts at scrape time: what would grow
// without bound if a part kept something of every pod it ever saw.
import type { ApiEventRecorder } from '../kube/events.js';
import type { PodReflector } from '../kube/reflector.js';
import type { ServiceCache } from '../kube/service-cache.js';
import type { ContainerLogManager } from '../logs/rotation.js';
import type { InternalSizes } from '../observability/metrics.js';
import type { GenericPLEG } from '../pleg/generic-pleg.js';
import type { PodWorkers } from '../pods/pod-workers.js';
import type { ProbeManager } from '../prober/manager.js';
import type { RuntimeManagerDeps } from '../runtime/deps.js';
import type { StatusManager } from '../status/status-manager.js';
import type { CountingClock } from '../util/clock.js';
import type { VolumeManager } from '../volumes/volume-manager.js';

export interface SizedParts {
  clock: CountingClock;
  workers: PodWorkers;
  statusManager: StatusManager;
  recorder?: ApiEventRecorder;
  probes?: ProbeManager;
  pleg?: GenericPLEG;
  deps?: RuntimeManagerDeps;
  volumes: VolumeManager;
  reflector?: PodReflector;
  services?: ServiceCache;
  logRotation?: ContainerLogManager;
  /** The agent's own maps, by name. */
  agentMaps: Record<string, { size: number }>;
}

export function internalSizes(p: SizedParts): InternalSizes {
  const { queued, ...workingPods } = p.workers.counts();
  const volumes = p.volumes.sizes();
  const maps: Record<string, number> = { ...volumes.maps };
  for (const [name, m] of Object.entries(p.agentMaps)) maps[name] = m.size;
  maps.reflector_pods = p.reflector?.size ?? 0;
  maps.service_cache_namespaces = p.services?.size ?? 0;
  maps.log_rotation_containers = p.logRotation?.trackedContainers ?? 0;
  maps.probe_results = p.probes?.resultCount ?? 0;
  return {
    workingPods,
    podWorkQueue: queued,
    backoffEntries: { crash_loop: p.deps?.crashLoopBackoff.size() ?? 0, image_pull: p.deps?.imageManager.backoffEntries() ?? 0 },
    clockTimers: p.clock.activeTimers,
    statusManager: p.statusManager.sizes(),
    probeWorkers: p.probes?.workerCount ?? 0,
    plegPods: p.pleg?.podCount ?? 0,
    eventRecorder: p.recorder?.sizes() ?? { queue: 0, caches: {} },
    volumeManagerPods: volumes.pods,
    maps,
  };
}
