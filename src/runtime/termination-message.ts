// The termination message of an exited container, as the kubelet reads it: the last 4 KiB of the
// file behind terminationMessagePath, or, with FallbackToLogsOnError and a failed container whose
// file is empty, the tail of its log (80 lines, at most 2 KiB).
import { open } from 'node:fs/promises';
import type { ContainerStatus as CriContainerStatus } from '../cri/types.js';

const MAX_MESSAGE = 4096;
const FALLBACK_LINES = 80;
const FALLBACK_BYTES = 2048;

/** The last `max` bytes of a file ('' when it does not exist). */
async function tail(path: string, max: number): Promise<Buffer> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw err;
  }
  try {
    const { size } = await fh.stat();
    const n = Math.min(size, max);
    const buf = Buffer.alloc(n);
    await fh.read(buf, 0, n, size - n);
    return buf;
  } finally {
    await fh.close();
  }
}

/** The container's output from a CRI-format log ("<time> <stream> <P|F> <text>" lines), its last lines only. */
export function logTail(text: string, lines: number, bytes: number): string {
  let out = '';
  for (const line of text.split('\n')) {
    const m = /^\S+ (?:stdout|stderr) ([PF]) ?(.*)$/.exec(line);
    if (!m) continue;
    out += m[2] + (m[1] === 'F' ? '\n' : '');
  }
  const kept = out.split('\n');
  if (kept[kept.length - 1] === '') kept.pop();
  let msg = kept.slice(-lines).join('\n');
  if (out.endsWith('\n') && msg) msg += '\n';
  const b = Buffer.from(msg, 'utf8');
  return b.length > bytes ? b.subarray(b.length - bytes).toString('utf8') : msg;
}

export async function readTerminationMessage(s: CriContainerStatus, path: string, policy: string): Promise<string> {
  let msg = '';
  const mount = s.mounts?.find((m) => m.container_path === path);
  if (mount) {
    try {
      msg = (await tail(mount.host_path, MAX_MESSAGE)).toString('utf8');
    } catch (err) {
      msg = `Error on reading termination log ${mount.host_path}: ${(err as Error).message}`;
    }
  }
  if (!msg && policy === 'FallbackToLogsOnError' && s.exit_code !== 0 && s.reason !== 'ContainerCannotRun' && s.log_path) {
    try {
      // The last lines are in the log's end: read enough of it for 80 lines of CRI framing.
      msg = logTail((await tail(s.log_path, 64 * 1024)).toString('utf8'), FALLBACK_LINES, FALLBACK_BYTES);
    } catch (err) {
      msg = `Error on reading termination message from logs: ${(err as Error).message}`;
    }
  }
  return msg;
}
