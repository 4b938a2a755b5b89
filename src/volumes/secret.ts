// secret volumes: as configMap volumes, from a Secret's data, on a tmpfs.
import type { V1KeyToPath, V1Secret } from '@kubernetes/client-node';
import type { Payload } from './atomic-writer.js';
import { fileMode, setUpAtomicVolume, tearDownVolumeDir } from './atomic-volume.js';
import { PLUGINS } from './paths.js';
import { VolumeSetUpError, type VolumeContext, type VolumePlugin } from './types.js';

export function secretPayload(secret: V1Secret, items: V1KeyToPath[] | undefined, defaultMode: number | undefined, optional: boolean): Payload {
  const out: Payload = new Map();
  const data = secret.data ?? {};
  if (!items?.length) {
    for (const [k, v] of Object.entries(data)) out.set(k, { data: Buffer.from(v, 'base64'), mode: fileMode(undefined, defaultMode) });
    return out;
  }
  for (const item of items) {
    const v = data[item.key];
    if (v === undefined) {
      if (optional) continue;
      throw new Error(`references non-existent secret key: ${item.key}`);
    }
    out.set(item.path, { data: Buffer.from(v, 'base64'), mode: fileMode(item.mode, defaultMode) });
  }
  return out;
}

export async function readSecret(ctx: VolumeContext, name: string, optional: boolean): Promise<V1Secret> {
  const objects = ctx.host.objects;
  if (!objects) throw new VolumeSetUpError(ctx.volume.name, 'not supported due to running nodelet in standalone mode');
  const s = await objects.getSecret(ctx.pod.metadata?.namespace ?? '', name);
  if (s) return s;
  if (optional) return {};
  throw new VolumeSetUpError(ctx.volume.name, `secret "${name}" not found`);
}

export const secretPlugin: VolumePlugin = {
  name: PLUGINS.secret,
  path: (ctx) => ctx.host.paths.volumeDir(ctx.pod.metadata?.uid ?? '', PLUGINS.secret, ctx.volume.name),
  setUp(ctx) {
    const src = ctx.volume.secret!;
    const optional = src.optional === true;
    return setUpAtomicVolume(ctx, PLUGINS.secret, secretPlugin.path(ctx), true, async () =>
      secretPayload(await readSecret(ctx, src.secretName ?? '', optional), src.items, src.defaultMode, optional),
    );
  },
  tearDown: (host, path) => tearDownVolumeDir(host.mounter, path),
};
