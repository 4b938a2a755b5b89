// The few mounts volumes need on the host: tmpfs for memory-backed volumes, and read-only or
// pinning bind mounts for subPaths. Done with util-linux's mount/umount (nodelet runs as root).
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { launcherPath } from '../procruntime/isolation.js';

const run = promisify(execFile);

export interface Mounter {
  mountTmpfs(dir: string, sizeBytes?: number): Promise<void>;
  /** `src` at `dst` (both existing), not following further links than realpath already did. */
  bind(src: string, dst: string, readOnly: boolean): Promise<void>;
  /**
   * `subPath` of the volume at `base` pinned at `pin` (made here), resolved beneath `base` and
   * bound by descriptor (nodelet-launch --subpath-bind): no link, then or swapped in meanwhile,
   * leads it out of the volume. With `mode`, missing directories are made with it.
   */
  bindSubPath(base: string, subPath: string, pin: string, mode?: number): Promise<void>;
  unmount(dir: string): Promise<void>;
  isMountPoint(dir: string): Promise<boolean>;
  /** Mount points at or under `dir`, deepest first. */
  mountsUnder(dir: string): Promise<string[]>;
}

function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
}

async function mountPoints(): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  return text.split('\n').filter(Boolean).map((l) => unescapeMountPath(l.split(' ')[4] ?? ''));
}

async function mount(args: string[]): Promise<void> {
  try {
    await run('mount', args);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`mount ${args.join(' ')}: ${(e.stderr || e.message).trim()}`);
  }
}

/** Of `mounts`, those at or under `dir` (in their order). */
export function mountsAtOrUnder(mounts: string[], dir: string): string[] {
  return mounts.filter((m) => m === dir || m.startsWith(`${dir}/`));
}

export const hostMounter: Mounter = {
  async mountTmpfs(dir, sizeBytes) {
    await mount(['-t', 'tmpfs', '-o', sizeBytes ? `size=${sizeBytes}` : 'defaults', 'tmpfs', dir]);
  },
  async bind(src, dst, readOnly) {
    await mount(['--bind', src, dst]);
    // A read-only bind takes a remount of its own.
    if (readOnly) await mount(['-o', 'remount,bind,ro', dst]);
  },
  async bindSubPath(base, subPath, pin, mode) {
    try {
      await run(launcherPath(), ['--subpath-bind', base, subPath, pin, mode === undefined ? '-' : mode.toString(8)]);
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error((e.stderr || e.message).trim().replace(/^nodelet-launch: /, ''));
    }
  },
  async unmount(dir) {
    try {
      await run('umount', [dir]);
    } catch {
      // Busy (a container still holds it): detach it now, the kernel frees it when the last user goes.
      await run('umount', ['-l', dir]).catch(() => undefined);
    }
  },
  async isMountPoint(dir) {
    return (await mountPoints()).includes(dir);
  },
  async mountsUnder(dir) {
    return mountsAtOrUnder(await mountPoints(), dir).sort((a, b) => b.length - a.length);
  },
};
