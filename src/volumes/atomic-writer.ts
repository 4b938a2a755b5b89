// The atomic writer of configMap, secret, downwardAPI and projected volumes, as the kubelet's: the
// files live in a timestamped directory, `..data` links to it, and every name a container sees
// is a link through `..data`. An update writes a new directory and swaps `..data` in one rename,
// so a reader sees the old set of files or the new one, never a mix.
import { chmod, lchown, lstat, mkdir, mkdtemp, readFile, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, normalize, posix } from 'node:path';

export interface FileProjection {
  data: Buffer;
  /** Permission bits of the file (e.g. 0o644). */
  mode: number;
  /** Owner to give the file (the projected token's, when the pod runs as one user). */
  uid?: number;
}

/** Relative path in the volume -> file. */
export type Payload = Map<string, FileProjection>;

export class InvalidPathError extends Error {
  override name = 'InvalidPathError';
}

const DATA = '..data';
const DATA_TMP = '..data_tmp';
const MAX_PATH = 4096;
const MAX_NAME = 255;

/** The kubelet's checks of a payload path, with its messages. */
export function validatePath(p: string): void {
  if (p === '') throw new InvalidPathError('invalid path: must not be empty: ""');
  if (p.length > MAX_PATH) throw new InvalidPathError(`invalid path: must be less than or equal to ${MAX_PATH} characters`);
  if (posix.isAbsolute(p)) throw new InvalidPathError(`invalid path: must be relative path: ${p}`);
  const parts = p.split('/');
  if (parts.some((c) => c.length > MAX_NAME)) throw new InvalidPathError(`invalid path: filenames must be less than or equal to ${MAX_NAME} characters`);
  if (parts.includes('..')) throw new InvalidPathError(`invalid path: must not contain '..': ${p}`);
  if (parts[0]!.startsWith('..')) throw new InvalidPathError(`invalid path: must not start with '..': ${p}`);
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code;
}

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(rel, ...(await listFiles(dir, rel)));
    else out.push(rel);
  }
  return out;
}

async function sameContent(dir: string, payload: Payload): Promise<boolean> {
  for (const [p, f] of payload) {
    try {
      const [have, st] = await Promise.all([readFile(join(dir, p)), lstat(join(dir, p))]);
      if (!have.equals(f.data) || (st.mode & 0o7777) !== f.mode) return false;
    } catch (err) {
      if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return false;
      throw err;
    }
  }
  return true;
}

/** A UTC timestamp in the kubelet's shape: ..2026_12_01_12_00_00. */
function timestampPrefix(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `..${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}.`;
}

/**
 * Makes `target` (an existing directory) hold exactly `payload`. Returns whether anything changed.
 * `setPerms`, if given, runs on the new timestamped directory before it is swapped in (fsGroup).
 */
export async function writeAtomic(target: string, payload: Payload, setPerms?: (dir: string) => Promise<void>, now = new Date()): Promise<boolean> {
  const clean: Payload = new Map();
  for (const [p, f] of payload) {
    validatePath(p);
    clean.set(normalize(p), f);
  }

  let oldTs: string | undefined;
  try {
    oldTs = await readlink(join(target, DATA));
  } catch (err) {
    if (errno(err) !== 'ENOENT') throw err;
  }
  const oldDir = oldTs ? join(target, oldTs) : undefined;

  // What the old set has that the new one does not (a file, or a directory no new path runs through).
  let stale: string[] = [];
  if (oldDir) {
    const keep = new Set<string>();
    for (const p of clean.keys()) {
      for (let d = p; d !== '.' && d !== ''; d = dirname(d)) keep.add(d);
    }
    stale = (await listFiles(oldDir)).filter((p) => !keep.has(p));
  }
  const unchanged = oldDir !== undefined && stale.length === 0 && (await sameContent(oldDir, clean));

  if (!unchanged) {
    const tsDir = await mkdtemp(join(target, timestampPrefix(now)));
    try {
      await chmod(tsDir, 0o755);
      for (const [p, f] of clean) {
        const file = join(tsDir, p);
        await mkdir(dirname(file), { recursive: true, mode: 0o755 });
        await writeFile(file, f.data);
        await chmod(file, f.mode); // the mode exactly, whatever the umask
        if (f.uid !== undefined) await lchown(file, f.uid, -1);
      }
      if (setPerms) await setPerms(tsDir);
      const tsName = tsDir.slice(target.length + 1);
      await rm(join(target, DATA_TMP), { force: true });
      await symlink(tsName, join(target, DATA_TMP));
      // The swap: one rename of a link, atomic for every reader.
      await rename(join(target, DATA_TMP), join(target, DATA));
    } catch (err) {
      await rm(join(target, DATA_TMP), { force: true });
      await rm(tsDir, { recursive: true, force: true });
      throw err;
    }
  }

  // Each top-level name a container sees is a link through ..data.
  for (const top of new Set([...clean.keys()].map((p) => p.split('/')[0]!))) {
    try {
      await readlink(join(target, top));
    } catch (err) {
      if (errno(err) === 'ENOENT') await symlink(join(DATA, top), join(target, top));
      else if (errno(err) !== 'EINVAL') throw err; // EINVAL: a real file of that name stays
    }
  }
  for (const p of stale) {
    if (!p.includes('/')) await rm(join(target, p), { force: true, recursive: false }).catch(() => undefined);
  }
  if (!unchanged && oldDir) await rm(oldDir, { recursive: true, force: true });
  return !unchanged;
}
