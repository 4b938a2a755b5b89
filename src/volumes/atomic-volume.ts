// What configMap, secret, downwardAPI and projected volumes share: the payload is built first
// (a failure leaves the volume as it was), then written with the atomic writer into the volume's
// directory (a tmpfs for the ones that may hold secrets, as the kubelet keeps them off the disk),
// with the pod's fsGroup applied to each new version before it is swapped in.
import type { V1KeyToPath } from '@kubernetes/client-node';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { writeAtomic, type Payload } from './atomic-writer.js';
import type { Mounter } from './mounter.js';
import { applyFsGroup, podFsGroup } from './ownership.js';
import type { PluginName } from './paths.js';
import { VolumeSetUpError, type MountedVolume, type VolumeContext } from './types.js';

export async function setUpAtomicVolume(ctx: VolumeContext, plugin: PluginName, dir: string, memory: boolean, build: () => Promise<Payload>): Promise<MountedVolume> {
  const name = ctx.volume.name;
  let payload: Payload;
  try {
    payload = await build();
  } catch (err) {
    throw err instanceof VolumeSetUpError ? err : new VolumeSetUpError(name, (err as Error).message);
  }
  // A remount of what this process set up at that path: the directory (and its tmpfs) are there.
  if (ctx.previous?.path !== dir) {
    await mkdir(dir, { recursive: true, mode: 0o750 });
    await chmod(dir, 0o777);
    if (memory && !(await ctx.host.mounter.isMountPoint(dir))) await ctx.host.mounter.mountTmpfs(dir);
  }
  const fsGroup = podFsGroup(ctx.pod);
  try {
    await writeAtomic(dir, payload, fsGroup === undefined ? undefined : (ts) => applyFsGroup(ts, fsGroup, true));
  } catch (err) {
    throw new VolumeSetUpError(name, (err as Error).message);
  }
  return { name, plugin, path: dir, readOnly: true, remount: true };
}

/** Unmounts whatever is mounted at or under `dir` (`mounts`, if just read), then removes it. */
export async function tearDownVolumeDir(mounter: Mounter, dir: string, mounts?: string[]): Promise<void> {
  for (const m of mounts ?? (await mounter.mountsUnder(dir))) await mounter.unmount(m);
  await rm(dir, { recursive: true, force: true });
}

/**
 * The files of a keyed object (a ConfigMap's or a Secret's keys): every key, or only the items
 * listed, at their paths; a listed key that is missing is an error unless the source is optional.
 */
export function keyedPayload(keys: string[], value: (key: string) => Buffer | undefined, items: V1KeyToPath[] | undefined, defaultMode: number | undefined, optional: boolean, missing: (key: string) => string): Payload {
  const out: Payload = new Map();
  if (!items?.length) {
    for (const k of keys) out.set(k, { data: value(k)!, mode: fileMode(undefined, defaultMode) });
    return out;
  }
  for (const item of items) {
    const data = value(item.key);
    if (data === undefined) {
      if (optional) continue;
      throw new Error(missing(item.key));
    }
    out.set(item.path, { data, mode: fileMode(item.mode, defaultMode) });
  }
  return out;
}

/** The mode of a projected file: the item's, else the volume's default (the API defaults it to 0644). */
export function fileMode(itemMode: number | undefined, defaultMode: number | undefined): number {
  return itemMode ?? defaultMode ?? 0o644;
}
