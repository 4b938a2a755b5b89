// fsGroup, as the kubelet applies it to a volume: every entry's group becomes the pod's fsGroup
// and gains group read (and write, for a writable volume); directories also get setgid and
// search, so that what is created in them later belongs to the group too. Links are not followed.
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export async function applyFsGroup(dir: string, fsGroup: number, readOnly: boolean): Promise<void> {
  const mask = readOnly ? 0o440 : 0o660;
  const walk = async (p: string): Promise<void> => {
    const st = await lstat(p);
    if (st.isSymbolicLink()) {
      await lchown(p, -1, fsGroup).catch(() => undefined);
      return;
    }
    await lchown(p, -1, fsGroup);
    const mode = st.mode & 0o7777;
    await chmod(p, st.isDirectory() ? mode | mask | 0o2110 : mode | mask);
    if (st.isDirectory()) for (const e of await readdir(p)) await walk(join(p, e));
  };
  await walk(dir);
}

/** The pod's fsGroup, when it has one. */
export function podFsGroup(pod: { spec?: { securityContext?: { fsGroup?: number } } }): number | undefined {
  const g = pod.spec?.securityContext?.fsGroup;
  return typeof g === 'number' ? g : undefined;
}
