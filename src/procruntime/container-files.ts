// A container's files as the process runtime prepares them: its command checked in its root,
// its binds from the CRI mounts, resolv.conf from the sandbox's DNS config, the CRI log file.
import { existsSync } from 'node:fs';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ContainerConfig } from '../cri/types.js';
import type { LaunchMount } from './isolation.js';

/** CRI's KeyValue.value is bytes: a Buffer off the wire, or its JSON form once persisted. */
export function bytesToString(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  const o = v as { type?: string; data?: number[] };
  if (o.type === 'Buffer' && Array.isArray(o.data)) return Buffer.from(o.data).toString('utf8');
  return String(v);
}

/** runc's check before exec: the command must exist in the container's root (PATH searched for bare names). */
export function missingExecutable(rootfs: string, cmd: string, path: string, cwd: string): string | undefined {
  const inRoot = (p: string) => join(rootfs, p);
  if (cmd.includes('/')) {
    const abs = cmd.startsWith('/') ? cmd : join(cwd, cmd);
    return existsSync(inRoot(abs)) ? undefined : `exec: "${cmd}": stat ${cmd}: no such file or directory`;
  }
  for (const dir of path.split(':')) if (dir && existsSync(inRoot(join(dir, cmd)))) return undefined;
  return `exec: "${cmd}": executable file not found in $PATH`;
}

/** PATH for a container whose image sets none (the OCI default). */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** resolv.conf from a sandbox's DNS config: search, nameserver and options lines, as containerd writes them. */
export function resolvConf(dns: { servers?: string[]; searches?: string[]; options?: string[] }): string {
  let out = '';
  if (dns.searches?.length) out += `search ${dns.searches.join(' ')}\n`;
  for (const ns of dns.servers ?? []) out += `nameserver ${ns}\n`;
  if (dns.options?.length) out += `options ${dns.options.join(' ')}\n`;
  return out;
}

const PROPAGATION: Record<string, LaunchMount['propagation']> = { PROPAGATION_HOST_TO_CONTAINER: 'slave', PROPAGATION_BIDIRECTIONAL: 'shared' };

/** The CRI mounts of a container as binds, with their propagation and read-only kind. */
export function criMounts(config: ContainerConfig): LaunchMount[] {
  return (config.mounts ?? [])
    .filter((m) => m.host_path && m.container_path)
    .map((m) => ({
      hostPath: m.host_path!,
      containerPath: m.container_path!,
      readonly: m.readonly === true,
      recursiveReadOnly: m.recursive_read_only === true || undefined,
      propagation: PROPAGATION[String(m.propagation ?? '')] ?? 'private',
    }));
}

/**
 * What containerd refuses in a mount, with its words: recursive read-only only on a read-only,
 * private mount.
 */
export function invalidMount(m: LaunchMount): string | undefined {
  if (!m.recursiveReadOnly) return undefined;
  if (!m.readonly) return `recursive read-only mount must be read-only (mount ${JSON.stringify(m.containerPath)})`;
  if (m.propagation !== 'private') return `recursive read-only mount must be private (mount ${JSON.stringify(m.containerPath)})`;
  return undefined;
}

/** Creates the container's CRI log file (and its directory), empty, if it is not there. */
export async function touchLog(logPath: string): Promise<void> {
  if (!logPath) return;
  await mkdir(dirname(logPath), { recursive: true });
  await appendFile(logPath, '');
}
