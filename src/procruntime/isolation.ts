// How a container's process is isolated: bubblewrap (new PID/IPC/UTS namespaces, the image's
// root as /), or proot where namespaces cannot be created (an unprivileged container).
import { execFileSync, spawnSync } from 'node:child_process';
import { lstatSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ResolvedUser } from './users.js';

export type Isolation = 'bubblewrap' | 'proot';

function works(cmd: string, args: string[]): boolean {
  return probe(cmd, args).ok;
}

function probe(cmd: string, args: string[]): { ok: boolean; why: string } {
  // A generous timeout: on a loaded host a slow probe must not pass for a host without namespaces.
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000, encoding: 'utf8' });
  return { ok: r.status === 0, why: (r.stderr || r.error?.message || `exit ${r.status ?? r.signal}`).trim().split('\n').pop() ?? '' };
}

/** bubblewrap's namespaces, tried a few times: a host short of processes for a moment is not a host without them. */
function bwrapNamespaces(): { ok: boolean; why: string } {
  let last = { ok: false, why: '' };
  for (let i = 0; i < 3 && !last.ok; i++) {
    if (i > 0) spawnSync('sleep', ['1']);
    last = probe('bwrap', ['--ro-bind', '/', '/', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--proc', '/proc', '--dev', '/dev', 'true']);
  }
  return last;
}

/** Probes what this host allows, once at start. */
export function detectIsolation(wanted?: Isolation): { isolation?: Isolation; detail: string } {
  if (wanted === 'proot') {
    return works('proot', ['--version']) ? { isolation: 'proot', detail: 'proot, as configured' } : { detail: 'proot was asked for but cannot run here (install Debian package proot)' };
  }
  const hasBwrap = works('bwrap', ['--version']);
  const ns = hasBwrap ? bwrapNamespaces() : { ok: false, why: 'not installed' };
  if (ns.ok) return { isolation: 'bubblewrap', detail: execFileSync('bwrap', ['--version'], { encoding: 'utf8' }).trim() };
  if (wanted === 'bubblewrap') return { detail: hasBwrap ? `bubblewrap was asked for but cannot create namespaces here (${ns.why})` : 'bubblewrap was asked for but is not installed' };
  if (works('proot', ['--version'])) {
    return { isolation: 'proot', detail: hasBwrap ? `bubblewrap cannot create namespaces here (${ns.why}); using proot` : 'bubblewrap not installed; using proot' };
  }
  return { detail: 'neither bubblewrap nor proot can run here (install Debian packages bubblewrap or proot)' };
}

export interface LaunchSpec {
  rootfs: string;
  argv: string[];
  env: Array<[string, string]>;
  cwd: string;
  hostname: string;
  mounts: Array<{ hostPath: string; containerPath: string; readonly: boolean }>;
  /** File the bubblewrap monitor writes {"child-pid"} and {"exit-code"} to (fd 3). */
  statusFd: number;
  readonlyRootfs?: boolean;
  capabilities?: CapabilityRequest;
  /** Who the process runs as; root with no groups when not given. */
  user?: ResolvedUser;
  /** Paths hidden from the container (kubelet's defaults: /proc/kcore and the like), and made read-only. */
  maskedPaths?: string[];
  readonlyPaths?: string[];
  /** The pod's namespaces to join (absent for a container started before sandboxes had them). */
  namespaces?: LaunchNamespaces;
  /** The compiled seccomp program, handed to bubblewrap as fd `SECCOMP_FD` (none: unconfined). */
  seccomp?: string;
}

/** The fd a container's (or exec's) spawn holds its seccomp program on. */
export const SECCOMP_FD = 4;

/** What a container joins: the sandbox's pinned namespace files, and how it gets its PID namespace. */
export interface LaunchNamespaces {
  net?: string;
  ipc?: string;
  uts?: string;
  /** CONTAINER: one of its own; POD: the sandbox's (held by `podPid`); NODE: the host's. */
  pid: 'CONTAINER' | 'POD' | 'NODE';
  podPid?: number;
  /** procfs of the pod's PID namespace, bound as /proc for a user that cannot mount one of it. */
  podProc?: string;
  /** The pod's /dev/shm. */
  shm?: string;
}

/**
 * Whether a path in the image's root passes through a symbolic link (itself or a directory on the
 * way, as far as it exists): such a link could point anywhere on the host, so the runtime, which
 * resolves paths on the host, leaves that path alone.
 */
export function throughLink(rootfs: string, p: string): boolean {
  const parts = p.split('/').filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    try {
      if (lstatSync(join(rootfs, ...parts.slice(0, i))).isSymbolicLink()) return true;
    } catch {
      return false; // not there: nothing below it can be a link
    }
  }
  return false;
}

/** A path in the container as the host can tell: /proc and /sys from the host's, the rest from the root. */
function kindOf(rootfs: string, p: string): 'dir' | 'file' | undefined {
  const onHost = p === '/proc' || p.startsWith('/proc/') || p === '/sys' || p.startsWith('/sys/');
  try {
    if (onHost) return statSync(p).isDirectory() ? 'dir' : 'file';
    if (throughLink(rootfs, p)) return undefined;
    return lstatSync(join(rootfs, p)).isDirectory() ? 'dir' : 'file';
  } catch {
    return undefined; // not there: nothing to hide (as runc)
  }
}

/**
 * bubblewrap's arguments for masked and read-only paths, as runc does them: a masked directory
 * gets an empty read-only tmpfs, a masked file /dev/null; a read-only path is bound onto itself
 * read-only.
 */
export function pathArgs(s: Pick<LaunchSpec, 'rootfs' | 'maskedPaths' | 'readonlyPaths'>): string[] {
  const args: string[] = [];
  for (const p of s.readonlyPaths ?? []) {
    const kind = kindOf(s.rootfs, p);
    if (!kind) continue;
    const onHost = p.startsWith('/proc/') || p.startsWith('/sys/');
    args.push('--ro-bind', onHost ? p : join(s.rootfs, p), p);
  }
  for (const p of s.maskedPaths ?? []) {
    const kind = kindOf(s.rootfs, p);
    if (kind === 'dir') args.push('--tmpfs', p, '--remount-ro', p);
    else if (kind === 'file') args.push('--ro-bind', '/dev/null', p);
  }
  return args;
}

export interface CapabilityRequest {
  privileged?: boolean;
  add?: string[];
  drop?: string[];
}

/** containerd's default set for a container that is not privileged (the OCI runtime spec's defaults). */
export const DEFAULT_CAPABILITIES = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
];

const capName = (c: string) => {
  const u = c.trim().toUpperCase();
  return u === 'ALL' || u.startsWith('CAP_') ? u : `CAP_${u}`;
};

/** Every capability name (the bounding set of a privileged container, or of one adding ALL). */
const ALL_CAPABILITIES = [
  ...DEFAULT_CAPABILITIES,
  'CAP_DAC_READ_SEARCH', 'CAP_LINUX_IMMUTABLE', 'CAP_NET_BROADCAST', 'CAP_NET_ADMIN', 'CAP_IPC_LOCK', 'CAP_IPC_OWNER', 'CAP_SYS_MODULE',
  'CAP_SYS_RAWIO', 'CAP_SYS_PTRACE', 'CAP_SYS_PACCT', 'CAP_SYS_ADMIN', 'CAP_SYS_BOOT', 'CAP_SYS_NICE', 'CAP_SYS_RESOURCE', 'CAP_SYS_TIME',
  'CAP_SYS_TTY_CONFIG', 'CAP_LEASE', 'CAP_AUDIT_CONTROL', 'CAP_MAC_OVERRIDE', 'CAP_MAC_ADMIN', 'CAP_SYSLOG', 'CAP_WAKE_ALARM',
  'CAP_BLOCK_SUSPEND', 'CAP_AUDIT_READ', 'CAP_PERFMON', 'CAP_BPF', 'CAP_CHECKPOINT_RESTORE',
];

/** The container's bounding set by containerd's rules (what its seccomp default is built for). */
export function boundingSet(req: CapabilityRequest = {}): string[] {
  if (req.privileged) return [...ALL_CAPABILITIES];
  const add = (req.add ?? []).map(capName);
  const drop = (req.drop ?? []).map(capName);
  if (add.includes('ALL')) return ALL_CAPABILITIES.filter((c) => !drop.includes(c));
  const base = drop.includes('ALL') ? [] : DEFAULT_CAPABILITIES.filter((c) => !drop.includes(c));
  return [...new Set([...base, ...add])];
}

/**
 * bubblewrap's arguments for the container's capabilities, by containerd's rules: the default set,
 * plus what is added, less what is dropped; "ALL" added starts from every capability, "ALL"
 * dropped from none; privileged keeps them all.
 */
export function capabilityArgs(req: CapabilityRequest = {}): string[] {
  if (req.privileged) return ['--cap-add', 'ALL'];
  const add = (req.add ?? []).map(capName);
  const drop = (req.drop ?? []).map(capName);
  // Every capability, less the drops, in bubblewrap's words (capabilities this list lacks included).
  if (add.includes('ALL')) return ['--cap-add', 'ALL', ...drop.filter((c) => c !== 'ALL').flatMap((c) => ['--cap-drop', c])];
  return ['--cap-drop', 'ALL', ...boundingSet(req).flatMap((c) => ['--cap-add', c])];
}

const ROOT: ResolvedUser = { uid: 0, gid: 0, groups: [] };

/**
 * util-linux's setpriv switching to the container's user and groups before bubblewrap starts
 * (nothing for root with no groups).
 */
function setprivArgs(u: ResolvedUser): string[] {
  if (u.uid === 0 && u.gid === 0 && u.groups.length === 0) return [];
  return ['setpriv', `--reuid=${u.uid}`, `--regid=${u.gid}`, u.groups.length > 0 ? `--groups=${u.groups.join(',')}` : '--clear-groups', '--'];
}

/** bubblewrap's view of the container: its root, /proc, /dev, /sys, the binds, masked and read-only paths. */
function bwrapView(s: LaunchSpec): string[] {
  // A user namespace of the container's own has no say over the pod's PID namespace: its procfs is bound instead.
  const ns = s.namespaces;
  const proc = ns?.pid === 'POD' && ns.podProc && (s.user?.uid ?? 0) !== 0 ? ['--bind', ns.podProc, '/proc'] : ['--proc', '/proc'];
  const args = [s.readonlyRootfs ? '--ro-bind' : '--bind', s.rootfs, '/', ...proc, '--dev', '/dev', ...(ns?.shm ? ['--bind', ns.shm, '/dev/shm'] : []), '--ro-bind', '/sys', '/sys'];
  for (const m of s.mounts) args.push(m.readonly ? '--ro-bind' : '--bind', m.hostPath, m.containerPath);
  return [...args, ...pathArgs(s)];
}

/** bubblewrap's last arguments: working directory, the container's environment alone, the command. */
function bwrapCommand(s: LaunchSpec, argv: string[]): string[] {
  return ['--chdir', s.cwd, '--clearenv', ...s.env.flatMap(([k, v]) => ['--setenv', k, v]), '--', ...argv];
}

/** proot's arguments for the container's root, binds, working directory and (pretended) user. */
function prootArgs(s: LaunchSpec, argv: string[]): string[] {
  const args = ['proot', '-r', s.rootfs, '-b', '/proc', '-b', '/dev', '-b', '/sys', '-w', s.cwd];
  // proot can only pretend: the process stays the runtime's user, seen as the one asked for.
  if (s.user && (s.user.uid !== 0 || s.user.gid !== 0)) args.push('-i', `${s.user.uid}:${s.user.gid}`);
  for (const m of s.mounts) args.push('-b', `${m.hostPath}:${m.containerPath}`);
  return [...args, ...argv];
}

/** nsenter's arguments joining the pod's namespaces (as root, before any switch of user). */
function joinArgs(ns: LaunchNamespaces | undefined): string[] {
  if (!ns) return [];
  const args = [...(ns.net ? [`--net=${ns.net}`] : []), ...(ns.ipc ? [`--ipc=${ns.ipc}`] : []), ...(ns.uts ? [`--uts=${ns.uts}`] : [])];
  // Without a fork: nsenter (then bubblewrap) stays in the host's PID namespace, and only what
  // bubblewrap starts is born in the pod's, so that bubblewrap reports its host PID and finds it in /proc.
  if (ns.pid === 'POD' && ns.podPid !== undefined) args.push(`--pid=/proc/${ns.podPid}/ns/pid`, '--no-fork');
  return args.length > 0 ? ['nsenter', ...args, '--'] : [];
}

/** bubblewrap's namespace arguments: what the pod does not provide is the container's own. */
function unshareArgs(s: LaunchSpec): string[] {
  const ns = s.namespaces;
  if (!ns) return ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--hostname', s.hostname, '--as-pid-1'];
  // IPC and UTS are the pod's (joined) or the node's; only a PID namespace may be the container's own.
  return ns.pid === 'CONTAINER' ? ['--unshare-pid', '--as-pid-1'] : [];
}

/** The command line that runs the container's process under the chosen isolation. */
export function launchArgv(isolation: Isolation, s: LaunchSpec): string[] {
  if (isolation === 'proot') return ['env', '-i', ...s.env.map(([k, v]) => `${k}=${v}`), ...prootArgs(s, s.argv)];
  const u = s.user ?? ROOT;
  // A user other than root has bubblewrap in a user namespace of its own (the process is that
  // user on the host too), and no capabilities, as a non-root process in a container has.
  return [
    ...joinArgs(s.namespaces),
    ...setprivArgs(u),
    'bwrap',
    ...unshareArgs(s),
    ...(u.uid !== 0 ? ['--unshare-user', '--uid', String(u.uid), '--gid', String(u.gid)] : []),
    ...bwrapView(s),
    ...(u.uid === 0 ? capabilityArgs(s.capabilities) : []),
    ...(s.seccomp ? ['--seccomp', String(SECCOMP_FD)] : []),
    '--die-with-parent',
    '--json-status-fd',
    String(s.statusFd),
    ...bwrapCommand(s, s.argv),
  ];
}

/**
 * The command line that runs `cmd` in a running container (CRI's ExecSync) as the container runs:
 * its root and mounts, environment, working directory, user and capabilities.
 * - bubblewrap, root user: nsenter joins the container's UTS and IPC namespaces, and bubblewrap
 *   joins its PID namespace (the fd `pidnsFd` of the caller's spawn holds it) and builds the same
 *   mount view, capability set and environment. (nsenter alone would keep the runtime's
 *   capabilities and environment.)
 * - bubblewrap, other users: nsenter joins all the container's namespaces, its user namespace
 *   included, as that user; no capabilities are left to drop.
 * - proot: the same root and binds again.
 * The environment to spawn with is returned beside the argv.
 */
export function execArgv(isolation: Isolation, s: LaunchSpec, pid: number, cmd: string[], pidnsFd: number): { argv: string[]; env: Record<string, string> } {
  const env = Object.fromEntries(s.env);
  const u = s.user ?? ROOT;
  if (isolation === 'proot') return { argv: prootArgs(s, cmd), env };
  if (u.uid !== 0) {
    return { argv: ['nsenter', '-t', String(pid), '-U', '-S', String(u.uid), '-G', String(u.gid), '-m', '-u', '-i', '-n', '-p', '-r', '-w', '--', ...cmd], env };
  }
  const argv = [
    ...setprivArgs(u),
    'nsenter',
    '-t',
    String(pid),
    '-u',
    '-i',
    '-n',
    '--',
    'bwrap',
    '--pidns',
    String(pidnsFd),
    ...bwrapView(s),
    ...capabilityArgs(s.capabilities),
    ...(s.seccomp ? ['--seccomp', String(SECCOMP_FD)] : []),
    '--die-with-parent',
    ...bwrapCommand(s, cmd),
  ];
  // The runtime's PATH finds nsenter and bwrap; bwrap then clears it for the command.
  return { argv, env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' } };
}
