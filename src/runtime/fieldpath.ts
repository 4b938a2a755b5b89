// The pod metadata a downward API fieldRef names, shared by env vars and downwardAPI volumes.
import type { V1Pod } from '@kubernetes/client-node';

/** metadata.name, .namespace, .uid and one label or annotation (metadata.labels['k']); undefined for any other path. */
export function metadataField(pod: V1Pod, path: string): string | undefined {
  const meta = pod.metadata ?? {};
  const sub = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (sub) return (sub[1] === 'labels' ? meta.labels : meta.annotations)?.[sub[2]!] ?? '';
  switch (path) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    default:
      return undefined;
  }
}
