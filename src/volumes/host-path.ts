// hostPath volumes: a path of the node itself, checked (or made) according to its type, with the
// kubelet's messages. Nothing is made under the pod's directory and nothing is removed at teardown.
import { constants } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { PLUGINS } from './paths.js';
import { VolumeSetUpError, type VolumePlugin } from './types.js';

const EXPECTED: Record<string, string> = {
  Directory: 'directory',
  File: 'file',
  Socket: 'socket file',
  CharDevice: 'character device',
  BlockDevice: 'block device',
};

function actualType(st: Stats): string | undefined {
  if (st.isDirectory()) return 'Directory';
  if (st.isFile()) return 'File';
  if (st.isSocket()) return 'Socket';
  if (st.isCharacterDevice()) return 'CharDevice';
  if (st.isBlockDevice()) return 'BlockDevice';
  return undefined;
}

/** A file system error as Go words it ("mkdir /a/b: not a directory"), which is what users of the kubelet see. */
function goErrorText(op: string, err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const m = /^[A-Z]+: ([^,]+),/.exec(e.message ?? '');
  return e.path && m ? `${op} ${e.path}: ${m[1]}` : (e.message ?? String(err));
}

/** Checks `path` against a hostPath type (creating it for the ...OrCreate types); returns an error message or undefined. */
export async function checkHostPathType(path: string, type: string): Promise<string | undefined> {
  if (type === '') return undefined;
  // As the kubelet's: a path that cannot be looked at (a file where a directory should be, no
  // permission) does not exist, for making it and for checking it; the answer is a message, not a throw.
  const st = async () => stat(path).catch(() => undefined);
  let kind = type;
  if (type === 'DirectoryOrCreate') {
    if (!(await st())) {
      try {
        await mkdir(path, { recursive: true, mode: 0o755 });
      } catch (err) {
        return goErrorText('mkdir', err);
      }
      return undefined;
    }
    kind = 'Directory';
  } else if (type === 'FileOrCreate') {
    if (!(await st())) {
      try {
        await (await open(path, constants.O_CREAT | constants.O_RDONLY, 0o644)).close();
      } catch (err) {
        return goErrorText('open', err);
      }
      return undefined;
    }
    kind = 'File';
  }
  const expected = EXPECTED[kind];
  if (!expected) return `${type} is an invalid volume type`;
  const s = await st();
  if (!s) return `hostPath type check failed, ${path} is not a ${expected}, unable to determine its type: path "${path}" does not exist`;
  const actual = actualType(s);
  if (!actual) return `hostPath type check failed, ${path} is not a ${expected}, unable to determine its type: only recognise file, directory, socket, block device and character device`;
  if (actual !== kind) return `hostPath type check failed: ${path} is not a ${expected}, it's a ${actual}`;
  return undefined;
}

export const hostPathPlugin: VolumePlugin = {
  name: PLUGINS.hostPath,
  path: (ctx) => ctx.volume.hostPath!.path,
  async setUp(ctx) {
    const { path, type } = ctx.volume.hostPath!;
    if (path.split('/').includes('..')) throw new VolumeSetUpError(ctx.volume.name, `invalid HostPath \`${path}\`: must not contain '..'`);
    const problem = await checkHostPathType(path, type ?? '');
    if (problem) throw new VolumeSetUpError(ctx.volume.name, problem);
    return { name: ctx.volume.name, plugin: PLUGINS.hostPath, path, readOnly: false, remount: false };
  },
  // The node's own path: left as it is.
  tearDown: async () => undefined,
};
