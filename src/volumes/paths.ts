// Where a pod's files live on the node, as the kubelet lays them out under its root directory:
//   <root>/pods/<uid>/volumes/<plugin, '/' as '~'>/<volume>    a volume (hostPath has none: it is the host's path)
//   <root>/pods/<uid>/volume-subpaths/<volume>/<container>/<n>  the bind mount that pins a subPath
//   <root>/pods/<uid>/containers/<container>/<8 hex>            a termination-message file
//   <root>/pods/<uid>/etc-hosts                                 the pod's /etc/hosts
import { join } from 'node:path';

export const PLUGINS = {
  configMap: 'kubernetes.io/configmap',
  secret: 'kubernetes.io/secret',
  downwardAPI: 'kubernetes.io/downward-api',
  projected: 'kubernetes.io/projected',
  emptyDir: 'kubernetes.io/empty-dir',
  hostPath: 'kubernetes.io/host-path',
} as const;

export type PluginName = (typeof PLUGINS)[keyof typeof PLUGINS];

export class PodPaths {
  constructor(readonly root: string) {}

  podsDir(): string {
    return join(this.root, 'pods');
  }

  podDir(uid: string): string {
    return join(this.root, 'pods', uid);
  }

  volumeDir(uid: string, plugin: PluginName, volume: string): string {
    return join(this.podDir(uid), 'volumes', plugin.replace(/\//g, '~'), volume);
  }

  subPathDir(uid: string, volume: string, container: string, index: number): string {
    return join(this.podDir(uid), 'volume-subpaths', volume, container, String(index));
  }

  containerDir(uid: string, container: string): string {
    return join(this.podDir(uid), 'containers', container);
  }

  etcHosts(uid: string): string {
    return join(this.podDir(uid), 'etc-hosts');
  }
}
