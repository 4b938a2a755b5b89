// secret volumes: as configMap volumes, from a Secret's data, on a tmpfs.
import type { V1KeyToPath, V1Secret } from '@kubernetes/client-node';
import type { Payload } from './atomic-writer.js';
import { keyedPayload, setUpAtomicVolume, tearDownVolumeDir } from './atomic-volume.js';
import { PLUGINS } from './paths.js';
import { VolumeSetUpError, type VolumeContext, type VolumePlugin } from './types.js';

export function secretPayload(secret: V1Secret, items: V1KeyToPath[] | undefined, defaultMode: number | undefined, optional: boolean): Payload {
  const data = secret.data ?? {};
  const value = (k: string) => (data[k] !== undefined ? Buffer.from(data[k]!, 'base64') : undefined);
  return keyedPayload(Object.keys(data), value, items, defaultMode, optional, (k) => `references non-existent secret key: ${k}`);
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
  tearDown: (host, path, mounts) => tearDownVolumeDir(host.mounter, path, mounts),
};
