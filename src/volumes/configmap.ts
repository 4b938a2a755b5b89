// configMap volumes: every key of the ConfigMap (data, then binaryData) as a file, or only the
// listed items at their paths; a missing ConfigMap or key fails the volume unless it is optional.
import type { V1ConfigMap, V1KeyToPath } from '@kubernetes/client-node';
import type { Payload } from './atomic-writer.js';
import { keyedPayload, setUpAtomicVolume, tearDownVolumeDir } from './atomic-volume.js';
import { PLUGINS } from './paths.js';
import { VolumeSetUpError, type VolumeContext, type VolumePlugin } from './types.js';

/** The files of a ConfigMap, as a configMap volume or a projected configMap source lays them out. */
export function configMapPayload(cm: V1ConfigMap, items: V1KeyToPath[] | undefined, defaultMode: number | undefined, optional: boolean): Payload {
  const value = (k: string): Buffer | undefined => {
    if (cm.data?.[k] !== undefined) return Buffer.from(cm.data[k]!, 'utf8');
    if (cm.binaryData?.[k] !== undefined) return Buffer.from(cm.binaryData[k]!, 'base64');
    return undefined;
  };
  const keys = [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})];
  return keyedPayload(keys, value, items, defaultMode, optional, (k) => `configmap references non-existent config key: ${k}`);
}

/** The ConfigMap a volume names; an optional one that does not exist is empty. */
export async function readConfigMap(ctx: VolumeContext, name: string, optional: boolean): Promise<V1ConfigMap> {
  const objects = ctx.host.objects;
  if (!objects) throw new VolumeSetUpError(ctx.volume.name, 'not supported due to running nodelet in standalone mode');
  const cm = await objects.getConfigMap(ctx.pod.metadata?.namespace ?? '', name);
  if (cm) return cm;
  if (optional) return {};
  throw new VolumeSetUpError(ctx.volume.name, `configmap "${name}" not found`);
}

export const configMapPlugin: VolumePlugin = {
  name: PLUGINS.configMap,
  path: (ctx) => ctx.host.paths.volumeDir(ctx.pod.metadata?.uid ?? '', PLUGINS.configMap, ctx.volume.name),
  setUp(ctx) {
    const src = ctx.volume.configMap!;
    const optional = src.optional === true;
    return setUpAtomicVolume(ctx, PLUGINS.configMap, configMapPlugin.path(ctx), false, async () =>
      configMapPayload(await readConfigMap(ctx, src.name ?? '', optional), src.items, src.defaultMode, optional),
    );
  },
  tearDown: (host, path, mounts) => tearDownVolumeDir(host.mounter, path, mounts),
};
