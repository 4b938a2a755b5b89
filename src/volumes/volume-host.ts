// The volume manager and what it stands on, built once for the agent: the pod directories under
// the root dir, the host's mounts, the watched ConfigMaps and Secrets, and the token manager.
import type { V1ConfigMap, V1Node, V1Secret } from '@kubernetes/client-node';
import os from 'node:os';
import type { KubeClient } from '../kube/client.js';
import type { EventRecorder } from '../kube/object-ref.js';
import { restWatch } from '../kube/reflector.js';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../util/clock.js';
import { parseQuantity } from '../util/quantity.js';
import { hostMounter } from './mounter.js';
import { ObjectCache, restObjectGetter } from './object-cache.js';
import { PodPaths } from './paths.js';
import { TokenManager } from './token-manager.js';
import type { ObjectSource, VolumeHost } from './types.js';
import { VolumeManager } from './volume-manager.js';

export interface Volumes {
  manager: VolumeManager;
  /** ConfigMaps and Secrets as the pods' volumes and environment read them (undefined standalone). */
  objects?: ObjectSource;
  stop(): void;
}

export function newVolumes(opts: { rootDir: string; kube?: KubeClient; recorder: EventRecorder; logger: Logger; clock: Clock; node: () => V1Node | undefined }): Volumes {
  const { kube, clock, logger } = opts;
  let configMaps: ObjectCache | undefined;
  let secrets: ObjectCache | undefined;
  let objects: ObjectSource | undefined;
  if (kube) {
    const api = restObjectGetter((method, path, o) => kube.rest.request(method, path, o));
    const stream = restWatch(kube.rest);
    configMaps = new ObjectCache({ resource: 'configmaps', api, stream, clock, logger });
    secrets = new ObjectCache({ resource: 'secrets', api, stream, clock, logger });
    const cms = configMaps;
    const ss = secrets;
    objects = {
      getConfigMap: async (ns, name) => (await cms.get(ns, name)) as V1ConfigMap | undefined,
      getSecret: async (ns, name) => (await ss.get(ns, name)) as V1Secret | undefined,
    };
  }
  let hostCPUs: number | undefined;
  const host: VolumeHost = {
    paths: new PodPaths(opts.rootDir),
    mounter: hostMounter,
    objects,
    tokens: kube ? new TokenManager(kube, clock) : undefined,
    allocatable: () => {
      const a = opts.node()?.status?.allocatable ?? {};
      return { cpu: a.cpu ? parseQuantity(a.cpu) : (hostCPUs ??= os.cpus().length), memory: a.memory ? parseQuantity(a.memory) : os.totalmem() };
    },
  };
  const manager = new VolumeManager({ host, recorder: opts.recorder, logger, configMaps, secrets });
  return {
    manager,
    objects,
    stop: () => {
      configMaps?.stop();
      secrets?.stop();
    },
  };
}
