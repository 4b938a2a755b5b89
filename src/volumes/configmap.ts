// configMap volumes: every key of the ConfigMap (data, then binaryData) as a file, or only the
// listed items at their paths; a missing ConfigMap or key fails the volume unless it is optional.
import type { V1ConfigMap, V1KeyToPath } from '@kubernetes/client-node';
import type { Payload } from './atomic-writer.js';
import { fileMode, setUpAtomicVolume, tearDownVolumeDir } from './atomic-volume.js';
import { PLUGINS } from './paths.js';
import { VolumeSetUpError, type VolumeContext, type VolumePlugin } from './types.js';

/** The files of a ConfigMap, as a configMap volume or a projected configMap source lays them out. */
export function configMapPayload(cm: V1ConfigMap, items: V1KeyToPath[] | undefined, defaultMode: number | undefined, optional: boolean): Payload {
  const out: Payload = new Map();
  const value = (k: string): Buffer | undefined => {
    if (cm.data?.[k] !== undefined) return Buffer.from(cm.data[k]!, 'utf8');
    if (cm.binaryData?.[k] !== undefined) return Buffer.from(cm.binaryData[k]!, 'base64');
    return undefined;
  };
  if (!items?.length) {
    for (const k of [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})]) out.set(k, { data: value(k)!, mode: fileMode(undefined, defaultMode) });
    return out;
  }
  for (const item of items) {
    const data = value(item.key);
    if (data === undefined) {
      if (optional) continue;
      throw new Error(`configmap references non-existent config key: ${item.key}`);
    }
    out.set(item.path, { data, mode: fileMode(item.mode, defaultMode) });
  }
  return out;
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
  tearDown: (host, path) => tearDownVolumeDir(host.mounter, path),
};
