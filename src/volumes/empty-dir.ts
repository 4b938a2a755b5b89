// emptyDir volumes: a directory of the pod's (mode 0777), on the node's disk or, with medium
// Memory, a tmpfs sized by sizeLimit, else by the pod's memory limit, else the node's memory.
import type { V1Pod } from '@kubernetes/client-node';
import { chmod, mkdir, stat } from 'node:fs/promises';
import { parseQuantity } from '../util/quantity.js';
import { tearDownVolumeDir } from './atomic-volume.js';
import { applyFsGroup, podFsGroup } from './ownership.js';
import { PLUGINS } from './paths.js';
import { VolumeSetUpError, type VolumePlugin } from './types.js';

/** The pod's memory limit: defined only when every container has one. */
function podMemoryLimit(pod: V1Pod): number | undefined {
  const cs = pod.spec?.containers ?? [];
  let total = 0;
  for (const c of cs) {
    const l = (c.resources?.limits as Record<string, string> | undefined)?.memory;
    if (!l) return undefined;
    total += parseQuantity(l);
  }
  const init = Math.max(0, ...(pod.spec?.initContainers ?? []).map((c) => parseQuantity((c.resources?.limits as Record<string, string> | undefined)?.memory ?? '0')));
  return cs.length ? Math.max(total, init) : undefined;
}

/** The size of a memory emptyDir, as the kubelet picks it. */
export function tmpfsSize(pod: V1Pod, sizeLimit: string | undefined, nodeMemory: number): number {
  let size = nodeMemory;
  const limit = podMemoryLimit(pod);
  if (limit && limit > 0 && limit <= size) size = limit;
  const s = sizeLimit ? parseQuantity(sizeLimit) : 0;
  if (s > 0 && s <= size) size = s;
  return Math.floor(size);
}

export const emptyDirPlugin: VolumePlugin = {
  name: PLUGINS.emptyDir,
  path: (ctx) => ctx.host.paths.volumeDir(ctx.pod.metadata?.uid ?? '', PLUGINS.emptyDir, ctx.volume.name),
  async setUp(ctx) {
    const src = ctx.volume.emptyDir!;
    const dir = emptyDirPlugin.path(ctx);
    const medium = src.medium ?? '';
    if (medium !== '' && medium !== 'Memory') throw new VolumeSetUpError(ctx.volume.name, medium.startsWith('HugePages') ? `medium ${medium} is not supported by nodelet` : `unknown storage medium "${medium}"`);
    const existed = await stat(dir).then(() => true, () => false);
    await mkdir(dir, { recursive: true, mode: 0o777 });
    let mountedNow = false;
    if (medium === 'Memory' && !(await ctx.host.mounter.isMountPoint(dir))) {
      await ctx.host.mounter.mountTmpfs(dir, tmpfsSize(ctx.pod, src.sizeLimit as string | undefined, ctx.host.allocatable().memory));
      mountedNow = true;
    }
    // Its mode and group are set when it is made, never again: what the containers wrote is theirs.
    if (!existed || mountedNow) {
      // As the kubelet: permission bits set only when they differ, so a tmpfs root keeps its sticky bit (1777).
      const mode = (await stat(dir)).mode;
      if ((mode & 0o777) !== 0o777) await chmod(dir, 0o777);
      const fsGroup = podFsGroup(ctx.pod);
      if (fsGroup !== undefined) await applyFsGroup(dir, fsGroup, false).catch(() => undefined);
    }
    return { name: ctx.volume.name, plugin: PLUGINS.emptyDir, path: dir, readOnly: false, remount: false };
  },
  tearDown: (host, path, mounts) => tearDownVolumeDir(host.mounter, path, mounts),
};
