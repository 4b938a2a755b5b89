// Paths an image or a pod names, resolved inside a root directory as the container would see them
// (what openat2's RESOLVE_IN_ROOT and Go's securejoin do): every link, absolute or with "..",
// stays under the root, so `etc/passwd -> /dev/zero` is the image's /dev/zero, never the host's.
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync } from 'node:fs';
import { join } from 'node:path';

const MAX_LINKS = 40;

/**
 * The host path of `path` inside `root`, every link on the way followed inside the root. The last
 * component is followed too unless `noFollowLast`. A component that does not exist ends the walk
 * there (the rest is joined as is): the caller's open decides.
 */
export function resolveInRoot(root: string, path: string, noFollowLast = false): string {
  let todo = path.split('/').filter((p) => p && p !== '.');
  const done: string[] = [];
  let links = 0;
  while (todo.length > 0) {
    const part = todo.shift()!;
    if (part === '..') {
      done.pop();
      continue;
    }
    const here = join(root, ...done, part);
    let st;
    try {
      st = lstatSync(here);
    } catch {
      return join(root, ...done, part, ...todo);
    }
    if (!st.isSymbolicLink() || (noFollowLast && todo.length === 0)) {
      done.push(part);
      continue;
    }
    if (++links > MAX_LINKS) throw Object.assign(new Error(`too many levels of symbolic links in ${path}`), { code: 'ELOOP' });
    const target = readlinkSync(here);
    if (target.startsWith('/')) done.length = 0;
    todo = [...target.split('/').filter((p) => p && p !== '.'), ...todo];
  }
  return join(root, ...done);
}

/**
 * A regular file of the root, read to at most `maxBytes` (the rest ignored); '' when it is missing
 * or not a regular file (a device, a FIFO: nothing an image ships may block or flood the reader).
 */
export function readFileInRoot(root: string, path: string, maxBytes: number): string {
  let fd: number;
  try {
    fd = openSync(resolveInRoot(root, path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return '';
  }
  try {
    if (!fstatSync(fd).isFile()) return '';
    const buf = Buffer.alloc(maxBytes);
    let n = 0;
    while (n < maxBytes) {
      const r = readSync(fd, buf, n, maxBytes - n, null);
      if (r === 0) break;
      n += r;
    }
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
