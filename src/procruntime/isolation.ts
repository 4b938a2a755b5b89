// How a container's process is isolated: nodelet-launch, the runtime's container init (the pod's
// namespaces joined, a mount namespace and root of its own, the security context applied, as
// runc does it), or proot where namespaces cannot be created (an unprivileged runtime), and only
// when asked for by name.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launcherDeviceRule, type DeviceRule } from './devices.js';
import type { ResolvedUser } from './users.js';

export type Isolation = 'launcher' | 'proot';

/** Records written before the launcher replaced bubblewrap say so; their containers are entered the same way. */
export function isolationOf(recorded: string | undefined): Isolation {
  return recorded === 'proot' ? 'proot' : 'launcher';
}

/** The launcher's binary: built beside the compiled runtime (dist/bin), or where NODELET_LAUNCH says. */
export function launcherPath(): string {
  return process.env.NODELET_LAUNCH || join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'nodelet-launch');
}

function probe(cmd: string, args: string[]): { ok: boolean; why: string } {
  // A generous timeout: on a loaded host a slow probe must not pass for a host without namespaces.
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000, encoding: 'utf8' });
  return { ok: r.status === 0, why: (r.stderr || r.error?.message || `exit ${r.status ?? r.signal}`).trim().split('\n').pop() ?? '' };
}

/**
 * The launcher's namespaces, mounts and pivot_root, tried on an empty root with the (static)
 * launcher bound in as its command, a few times: a host short of processes for a moment is not a
 * host without them.
 */
function launcherWorks(bin: string): { ok: boolean; why: string } {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-launch-probe-'));
  try {
    let last = { ok: false, why: '' };
    for (let i = 0; i < 3 && !last.ok; i++) {
      if (i > 0) spawnSync('sleep', ['1']);
      last = probe(bin, ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--rootfs', root, '--bind', bin, '/launch', 'ro', '--', '/launch', '--version']);
    }
    return last;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Probes what this host allows, once at start. */
export function detectIsolation(wanted?: Isolation): { isolation?: Isolation; detail: string } {
  const proot = () => probe('proot', ['--version']).ok;
  if (wanted === 'proot') return proot() ? { isolation: 'proot', detail: 'proot, as configured' } : { detail: 'proot was asked for but cannot run here (install Debian package proot)' };
  const bin = launcherPath();
  const installed = existsSync(bin);
  const ns = installed ? launcherWorks(bin) : { ok: false, why: `${bin} is not built (make build)` };
  if (ns.ok) return { isolation: 'launcher', detail: `nodelet-launch (${bin})` };
  // Fails closed: proot isolates nothing (no namespaces, no cgroups, the runtime's own user), so
  // it never stands in for the launcher unasked.
  return { detail: `the launcher cannot create namespaces here: ${ns.why} (proot, which isolates nothing, runs only when asked for by name: --isolation proot)` };
}

export interface LaunchMount {
  hostPath: string;
  containerPath: string;
  readonly: boolean;
  /** CRI's recursive_read_only: every mount below it read-only too. */
  recursiveReadOnly?: boolean;
  /** CRI's propagation (rprivate when not given). */
  propagation?: 'private' | 'slave' | 'shared';
}

export interface LaunchSpec {
  rootfs: string;
  argv: string[];
  env: Array<[string, string]>;
  cwd: string;
  hostname: string;
  mounts: LaunchMount[];
  /** File the launcher (the container's monitor) writes {"child-pid"} and {"exit-code"} to (fd 3). */
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
  /** The compiled seccomp program, handed to the launcher as fd `SECCOMP_FD` (none: unconfined). */
  seccomp?: string;
  /** no_new_privs (the container's allowPrivilegeEscalation: false). */
  noNewPrivs?: boolean;
  /** The kernel's OOM score adjustment of the container's processes (exec'd ones too), as runc's oomScoreAdj. */
  oomScoreAdj?: number;
  /** `env` as NUL-separated entries in a file only root reads (the launcher's --env-file). */
  envFile?: string;
  /** cgroup v2: the container's cgroup and the devices the launcher's filter there allows (v1 writes its rules itself). */
  devices?: { cgroup: string; rules: DeviceRule[] };
  /** cgroup v1: the container's own cgroup directories, shown under its /sys/fs/cgroup. */
  cgroupViews?: string[];
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
  /** The pod's /dev/shm. */
  shm?: string;
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

/** Linux's capability numbers, by name. */
const CAP_NUMBERS: Record<string, number> = Object.fromEntries(
  [
    'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP', 'LINUX_IMMUTABLE', 'NET_BIND_SERVICE',
    'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER', 'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT', 'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN',
    'SYS_BOOT', 'SYS_NICE', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE', 'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP', 'MAC_OVERRIDE',
    'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ', 'PERFMON', 'BPF', 'CHECKPOINT_RESTORE',
  ].map((n, i) => [`CAP_${n}`, i]),
);

/**
 * The container's capability set as the launcher's hex mask (bounding, permitted and effective for
 * root). A name this kernel list lacks is left out, as runc leaves it out: the API server does not
 * check the names, and on containerd such a pod runs without it.
 */
export function capabilityMask(req: CapabilityRequest = {}): string {
  let mask = 0n;
  for (const c of boundingSet(req)) {
    const n = CAP_NUMBERS[c];
    if (n !== undefined) mask |= 1n << BigInt(n);
  }
  return mask.toString(16);
}

const ROOT: ResolvedUser = { uid: 0, gid: 0, groups: [] };

/** The security settings a container's process and every exec in it get. */
function securityArgs(s: LaunchSpec): string[] {
  const u = s.user ?? ROOT;
  return [
    '--caps', capabilityMask(s.capabilities),
    '--uid', String(u.uid),
    '--gid', String(u.gid),
    ...(u.groups.length > 0 ? ['--groups', u.groups.join(',')] : []),
    ...(s.noNewPrivs ? ['--nnp'] : []),
    ...(s.oomScoreAdj !== undefined ? ['--oom-score-adj', String(s.oomScoreAdj)] : []),
    ...(s.seccomp ? ['--seccomp', String(SECCOMP_FD)] : []),
    '--cwd', s.cwd,
    // From a root-only file where there is one: a command line is anyone's to read.
    ...(s.envFile ? ['--env-file', s.envFile] : s.env.flatMap(([k, v]) => ['--env', `${k}=${v}`])),
  ];
}

/** The launcher's namespace arguments: the pod's joined; what it does not provide is the container's own. */
function namespaceArgs(s: LaunchSpec): string[] {
  const ns = s.namespaces;
  if (!ns) return ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--hostname', s.hostname];
  const args = [...(ns.net ? ['--join-net', ns.net] : []), ...(ns.ipc ? ['--join-ipc', ns.ipc] : []), ...(ns.uts ? ['--join-uts', ns.uts] : [])];
  if (ns.pid === 'POD' && ns.podPid !== undefined) args.push('--join-pid', `/proc/${ns.podPid}/ns/pid`);
  else if (ns.pid === 'CONTAINER') args.push('--unshare-pid');
  return args;
}

/** The launcher's view of the container: its root, its binds with their propagation, masked and read-only paths. */
function viewArgs(s: LaunchSpec): string[] {
  const args = ['--rootfs', s.rootfs, ...(s.readonlyRootfs ? ['--rootfs-ro'] : []), ...(s.capabilities?.privileged ? ['--sys-rw'] : [])];
  // As containerd: one bidirectional mount makes the root rshared, one host-to-container rslave.
  const props = new Set(s.mounts.map((m) => m.propagation));
  if (props.has('shared')) args.push('--rootfs-propagation', 'shared');
  else if (props.has('slave')) args.push('--rootfs-propagation', 'slave');
  if (s.namespaces?.shm) args.push('--shm', s.namespaces.shm);
  for (const m of s.mounts) {
    const opts = [m.recursiveReadOnly ? 'rro' : m.readonly ? 'ro' : 'rw', m.propagation ?? 'private'];
    args.push('--bind', m.hostPath, m.containerPath, opts.join(','));
  }
  for (const p of s.maskedPaths ?? []) args.push('--mask', p);
  for (const p of s.readonlyPaths ?? []) args.push('--readonly', p);
  for (const d of s.cgroupViews ?? []) args.push('--cgroup-view', d);
  return args;
}

/** proot's arguments for the container's root, binds, working directory and (pretended) user. */
function prootArgs(s: LaunchSpec, argv: string[]): string[] {
  const args = ['proot', '-r', s.rootfs, '-b', '/proc', '-b', '/dev', '-b', '/sys', '-w', s.cwd];
  // proot can only pretend: the process stays the runtime's user, seen as the one asked for.
  if (s.user && (s.user.uid !== 0 || s.user.gid !== 0)) args.push('-i', `${s.user.uid}:${s.user.gid}`);
  for (const m of s.mounts) args.push('-b', `${m.hostPath}:${m.containerPath}`);
  return [...args, ...argv];
}

/** The command line that runs the container's process under the chosen isolation. */
export function launchArgv(isolation: Isolation, s: LaunchSpec): string[] {
  if (isolation === 'proot') return ['env', '-i', ...s.env.map(([k, v]) => `${k}=${v}`), ...prootArgs(s, s.argv)];
  const devices = s.devices ? ['--device-cgroup', s.devices.cgroup, ...s.devices.rules.flatMap((r) => ['--device', launcherDeviceRule(r)])] : [];
  return [launcherPath(), '--status-fd', String(s.statusFd), ...devices, ...namespaceArgs(s), ...viewArgs(s), ...securityArgs(s), '--', ...s.argv];
}

/**
 * The command line that runs `cmd` in a running container (CRI's ExecSync) as the container runs:
 * the launcher enters every namespace of its process, its mount namespace included (so it sees
 * exactly the container's mounts), with the container's environment, working directory, user,
 * capabilities, no_new_privs and seccomp, in the container's cgroups. Under proot: the same root
 * and binds again.
 * The environment to spawn with is returned beside the argv.
 */
export function execArgv(isolation: Isolation, s: LaunchSpec, pid: number, cmd: string[], cgroupProcs: string[] = []): { argv: string[]; env: Record<string, string> } {
  if (isolation === 'proot') return { argv: prootArgs(s, cmd), env: Object.fromEntries(s.env) };
  // The runtime's PATH finds the launcher (and script, for a tty); the launcher gives the command the container's.
  const cgroups = cgroupProcs.flatMap((f) => ['--join-cgroup', f]);
  return { argv: [launcherPath(), '--enter', String(pid), ...cgroups, ...securityArgs(s), '--', ...cmd], env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' } };
}
