// The legacy container log links the kubelet keeps for cluster logging agents (fluent-bit,
// promtail, ... tail /var/log/containers/*.log): <pod>_<namespace>_<container>-<container id>.log,
// a link to the container's log file under the pod logs root. Made when a container is created,
// removed with the container, and a dangling one swept by the garbage collection.
import { mkdir, readdir, rm, stat, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { isNotFound } from '../cri/errors.js';
import type { RuntimeManagerDeps } from './deps.js';

const SUFFIX = '.log';
// An ext4 file name is at most 255 bytes: the kubelet cuts the name there.
const MAX_NAME = 255;

export function legacyLogSymlink(dir: string, podName: string, namespace: string, containerName: string, containerID: string): string {
  const name = `${podName}_${namespace}_${containerName}-${containerID}`.slice(0, MAX_NAME - SUFFIX.length);
  return join(dir, name + SUFFIX);
}

/** The container ID a link's name ends with (the kubelet's getContainerIDFromLegacyLogSymlink). */
export function containerIDOfLegacyLogSymlink(file: string): string | undefined {
  const base = file.split('/').pop() ?? '';
  if (!base.endsWith(SUFFIX)) return undefined;
  const id = base.slice(0, -SUFFIX.length).split('-').pop() ?? '';
  return /^[0-9a-zA-Z]+$/.test(id) ? id : undefined;
}

type LinkDeps = Pick<RuntimeManagerDeps, 'containerLogsDir' | 'logger'>;

/** Links the new container's log, if its log file exists (no dangling link is made). */
export async function createLegacyLogSymlink(deps: LinkDeps, logPath: string, pod: { name: string; namespace: string }, containerName: string, containerID: string): Promise<void> {
  if (!deps.containerLogsDir) return;
  const link = legacyLogSymlink(deps.containerLogsDir, pod.name, pod.namespace, containerName, containerID);
  try {
    await stat(logPath);
  } catch {
    return;
  }
  try {
    // Made when first needed, as the kubelet makes it at start.
    await mkdir(deps.containerLogsDir, { recursive: true, mode: 0o755 });
    await symlink(logPath, link);
  } catch (err) {
    deps.logger.warn('failed to create the legacy log link', { path: link, containerID, containerLogPath: logPath, error: (err as Error).message });
  }
}

export async function removeLegacyLogSymlink(deps: LinkDeps, pod: { name: string; namespace: string }, containerName: string, containerID: string): Promise<void> {
  if (!deps.containerLogsDir) return;
  await unlink(legacyLogSymlink(deps.containerLogsDir, pod.name, pod.namespace, containerName, containerID)).catch(() => undefined);
}

/**
 * Links whose log file is gone, unless their container still runs (its log was rotated away a
 * moment ago: the link comes back to life with the next file). Returns how many went.
 */
export async function sweepDanglingLogSymlinks(deps: LinkDeps & Pick<RuntimeManagerDeps, 'runtime'>): Promise<number> {
  if (!deps.containerLogsDir) return 0;
  let names: string[];
  try {
    names = (await readdir(deps.containerLogsDir)).filter((n) => n.endsWith(SUFFIX));
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const link = join(deps.containerLogsDir, name);
    if (await stat(link).then(() => true, () => false)) continue;
    const id = containerIDOfLegacyLogSymlink(link);
    if (id) {
      try {
        const st = (await deps.runtime.containerStatus(id)).status;
        if (st && st.state !== 'CONTAINER_EXITED') continue;
      } catch (err) {
        // A container the runtime no longer knows has no log to come back.
        if (!isNotFound(err)) continue;
      }
    }
    await rm(link, { force: true });
    removed++;
  }
  return removed;
}
