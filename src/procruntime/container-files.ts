// A container's files as the process runtime prepares them: its command checked in its root,
// mount points made there, resolv.conf from the sandbox's DNS config, the CRI log file.
import { existsSync, statSync } from 'node:fs';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ContainerConfig } from '../cri/types.js';
import { throughLink, type LaunchSpec } from './isolation.js';

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

/** Creates the mount point for `hostPath` at `containerPath` inside `rootfs`: a directory, or an empty file. */
export async function makeMountPoint(rootfs: string, hostPath: string, containerPath: string): Promise<void> {
  const target = join(rootfs, containerPath);
  // Through a link the mount point could land outside the container's root: bubblewrap, which
  // resolves it inside the sandbox, is left to make that one.
  if (existsSync(target) || throughLink(rootfs, containerPath)) return;
  try {
    if (statSync(hostPath).isDirectory()) await mkdir(target, { recursive: true });
    else {
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, '', { flag: 'a' });
    }
  } catch {
    /* bubblewrap reports what it cannot mount */
  }
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

/** The CRI mounts of a container as binds. */
export function criMounts(config: ContainerConfig): LaunchSpec['mounts'] {
  return (config.mounts ?? []).filter((m) => m.host_path && m.container_path).map((m) => ({ hostPath: m.host_path!, containerPath: m.container_path!, readonly: m.readonly === true }));
}

/** Creates the container's CRI log file (and its directory), empty, if it is not there. */
export async function touchLog(logPath: string): Promise<void> {
  if (!logPath) return;
  await mkdir(dirname(logPath), { recursive: true });
  await appendFile(logPath, '');
}

/**
 * For a container whose user is not root: each bind's source mounted (by the runtime, as root)
 * under <dir>/mounts/<n>, so that bubblewrap, which binds as that user, reaches it there. The
 * kubelet keeps pod directories 0750 root, which a user cannot pass through; runc binds as root.
 */
export async function stageMounts(dir: string, mounts: LaunchSpec['mounts'], bind: (from: string, to: string) => Promise<void>): Promise<LaunchSpec['mounts']> {
  const base = join(dir, 'mounts');
  await mkdir(base, { recursive: true, mode: 0o711 });
  const out: LaunchSpec['mounts'] = [];
  for (const [i, m] of mounts.entries()) {
    const staged = join(base, String(i));
    if (!existsSync(m.hostPath)) {
      out.push(m); // bubblewrap reports what is not there
      continue;
    }
    if (statSync(m.hostPath).isDirectory()) await mkdir(staged, { recursive: true });
    else await writeFile(staged, '', { flag: 'a' });
    await bind(m.hostPath, staged);
    out.push({ ...m, hostPath: staged });
  }
  return out;
}
