// Starting a process-runtime container: its command by the OCI rules, its root filesystem (an
// overlay over the image, or a private copy), its launch spec from the CRI config, and the process
// itself, started outside the runtime's own process tree so that it outlives a restart of the runtime.
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ContainerConfig, LinuxContainerResources, PodSandboxConfig } from '../cri/types.js';
import type { Isolation, LaunchNamespaces, LaunchSpec } from './isolation.js';
import type { StoredImage } from './image-store.js';
import { JOIN_CGROUPS_SH, type CgroupLimits } from './cgroups.js';
import type { ContainerRecord } from './records.js';
import { bytesToString, criMounts, DEFAULT_PATH, missingExecutable } from './container-files.js';
import { execedFromParent, procStart, processGroup } from './procfs.js';

const run = promisify(execFile);

/** Where a container's compiled seccomp program is kept, in its directory (written at create). */
export const SECCOMP_PROGRAM = 'seccomp.bpf';

/** The argv by the OCI and Kubernetes rules: command replaces ENTRYPOINT, args replaces CMD. */
export function containerArgv(config: ContainerConfig, image: StoredImage): string[] {
  const command = config.command ?? [];
  const args = config.args ?? [];
  if (command.length > 0) return [...command, ...args];
  const entrypoint = image.config.Entrypoint ?? [];
  return [...entrypoint, ...(args.length > 0 ? args : (image.config.Cmd ?? []))];
}

/**
 * The container's root under its directory: the image's files shared read-only with an upper
 * layer of its own (overlayfs), or, where overlayfs is not ours to mount, a private copy.
 * Whether it is a mount (to be unmounted on removal).
 */
export async function prepareRootfs(dir: string, lower: string): Promise<boolean> {
  const merged = join(dir, 'rootfs');
  await mkdir(merged, { recursive: true });
  await mkdir(join(dir, 'upper'), { recursive: true });
  await mkdir(join(dir, 'work'), { recursive: true });
  try {
    await run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${join(dir, 'upper')},workdir=${join(dir, 'work')}`, merged]);
    return true;
  } catch {
    await run('cp', ['-a', `${lower}/.`, `${merged}/`]);
    return false;
  }
}

export interface LaunchInput {
  container: ContainerRecord;
  sandbox: PodSandboxConfig;
  image: StoredImage;
  argv: string[];
  /** The container's directory (rootfs/ inside it). */
  dir: string;
  /** The pod's resolv.conf, when the sandbox has one of its own. */
  podResolv?: string;
  /** The pod's namespaces it joins. */
  namespaces?: LaunchNamespaces;
}

/** The launch spec of a container, or why its command cannot run (as runc: the start fails). */
export async function launchSpec(input: LaunchInput): Promise<{ spec: LaunchSpec } | { missing: string }> {
  const { container: c, sandbox: s, image: img, argv, dir } = input;
  const rootfs = join(dir, 'rootfs');
  const env = new Map<string, string>();
  for (const e of img.config.Env ?? []) {
    const eq = e.indexOf('=');
    if (eq > 0) env.set(e.slice(0, eq), e.slice(eq + 1));
  }
  if (!env.has('PATH')) env.set('PATH', DEFAULT_PATH);
  // On the node's network the container has the node's hostname, as containerd sets it.
  const hostname = s.hostname || (s.linux?.security_context?.namespace_options?.network === 'NODE' ? os.hostname() : s.metadata?.name || 'pod');
  env.set('HOSTNAME', hostname);
  for (const e of c.config.envs ?? []) if (e.key) env.set(e.key, bytesToString(e.value));
  const mounts = criMounts(c.config);
  const resolv = input.podResolv && existsSync(input.podResolv) ? input.podResolv : '/etc/resolv.conf';
  if (existsSync(resolv)) mounts.push({ hostPath: resolv, containerPath: '/etc/resolv.conf', readonly: true });
  const cwd = c.config.working_dir || img.config.WorkingDir || '/';
  const missing = missingExecutable(rootfs, argv[0]!, env.get('PATH') ?? '', cwd);
  if (missing) return { missing };
  const sc = c.config.linux?.security_context;
  return {
    spec: {
      rootfs,
      argv,
      env: [...env],
      cwd,
      hostname: hostname.slice(0, 63),
      mounts,
      statusFd: 3,
      readonlyRootfs: sc?.readonly_rootfs === true,
      user: c.user,
      // Privileged containers see everything, as with runc.
      maskedPaths: sc?.privileged ? [] : (sc?.masked_paths ?? []),
      readonlyPaths: sc?.privileged ? [] : (sc?.readonly_paths ?? []),
      capabilities: { privileged: sc?.privileged === true, add: sc?.capabilities?.add_capabilities ?? [], drop: sc?.capabilities?.drop_capabilities ?? [] },
      namespaces: input.namespaces,
      seccomp: existsSync(join(dir, SECCOMP_PROGRAM)) ? join(dir, SECCOMP_PROGRAM) : undefined,
      noNewPrivs: sc?.no_new_privs === true,
      oomScoreAdj: oomScoreAdjOf(c.config.linux?.resources?.oom_score_adj),
    },
  };
}

/**
 * CRI's oom_score_adj (an int64, as a string or a number on the wire); none when unset or out of the
 * kernel's range. As containerd: never below the runtime's own, which it could not lower to without
 * CAP_SYS_RESOURCE, and which is the floor its operator chose (-999 with the agent in-process).
 */
export function oomScoreAdjOf(v: unknown, own = ownOomScoreAdj()): number | undefined {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : typeof v === 'number' ? v : NaN;
  if (!Number.isInteger(n) || n < -1000 || n > 1000) return undefined;
  return own !== undefined && n < own ? own : n;
}

function ownOomScoreAdj(): number | undefined {
  try {
    return Number(readFileSync('/proc/self/oom_score_adj', 'utf8').trim());
  } catch {
    return undefined;
  }
}

/** Writes the container's environment for the launcher (0600, NUL-separated); returns its path. */
export async function writeEnvFile(dir: string, env: Array<[string, string]>): Promise<string> {
  const file = join(dir, 'env');
  const tmp = `${file}.tmp`;
  await writeFile(tmp, env.map(([k, v]) => `${k}=${v}\0`).join(''), { mode: 0o600 });
  await chmod(tmp, 0o600); // a tmp left by a crash kept its mode
  await rename(tmp, file);
  return file;
}

/** The cgroup limits a CRI container config asks for. */
export function cgroupLimits(config: ContainerConfig): CgroupLimits {
  const res = config.linux?.resources as LinuxContainerResources | undefined;
  return {
    cpuShares: res?.cpu_shares ? Number(res.cpu_shares) : undefined,
    cpuQuotaUs: res?.cpu_quota && Number(res.cpu_quota) > 0 ? Number(res.cpu_quota) : undefined,
    cpuPeriodUs: res?.cpu_period ? Number(res.cpu_period) : undefined,
    memoryBytes: res?.memory_limit_in_bytes && Number(res.memory_limit_in_bytes) > 0 ? Number(res.memory_limit_in_bytes) : undefined,
    memorySwapBytes: res?.memory_swap_limit_in_bytes && Number(res.memory_swap_limit_in_bytes) > 0 ? Number(res.memory_swap_limit_in_bytes) : undefined,
    unified: res?.unified && Object.keys(res.unified).length ? { ...res.unified } : undefined,
  };
}

/**
 * A stdin FIFO for a container with stdin: true: the container holds its read end, the runtime a
 * write end that attach writes to (and closes after the first attach when stdinOnce).
 */
export async function openStdin(dir: string): Promise<{ reader: number; writer: number }> {
  const fifo = join(dir, 'stdin');
  if (!existsSync(fifo)) await run('mkfifo', ['-m', '600', fifo]);
  const writer = openSync(fifo, 'r+');
  return { reader: openSync(fifo, 'r'), writer };
}

/**
 * Starts the isolation's argv with its output into <dir>/stdout and stderr, and waits for the
 * container's PID (it has exec'd its command), or for the reason it did not start.
 */
export async function spawnContainer(
  isolation: Isolation,
  dir: string,
  launch: string[],
  opts: {
    cgroupProcs: string[];
    stdin?: number;
    stderrOffset: number;
    /** The seccomp program's file, held open as fd 4 for the launcher. */
    seccomp?: string;
  },
): Promise<{ pid: number; pidStart?: string; pgid?: number } | { error: string }> {
  const stdout = openSync(join(dir, 'stdout'), 'a');
  const stderr = openSync(join(dir, 'stderr'), 'a');
  const status = openSync(join(dir, 'status.json'), 'w');
  const seccomp = opts.seccomp ? openSync(opts.seccomp, 'r') : undefined;
  const { cgroupProcs, stdin, stderrOffset } = opts;
  // setsid -f: the container is nobody's child here, so it outlives a restart of the runtime; its
  // session is its own process group. The shell joins the cgroups before exec'ing the isolation.
  // The launcher reports the container's PID and exit code itself (fd 3). proot does not: the shell
  // stays as the container's monitor, the leader of its process group, and reports both (it
  // outlives the signals sent to the group: a handler, not an ignore, which the command would inherit).
  const wrapper =
    isolation === 'launcher'
      ? `${JOIN_CGROUPS_SH}; exec "$@"`
      : `${JOIN_CGROUPS_SH}; trap : TERM INT HUP; echo '{"child-pid": '$$'}' >&3; "$@"; echo '{"exit-code": '$?'}' >&3`;
  const child = spawn('setsid', ['-f', 'sh', '-c', wrapper, 'sh', ...launch], {
    stdio: [stdin ?? 'ignore', stdout, stderr, status, ...(seccomp !== undefined ? [seccomp] : [])],
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', NODELET_CGROUP_PROCS: cgroupProcs.join(' ') },
    detached: true,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', () => resolve());
    });
  } finally {
    closeSync(stdout);
    closeSync(stderr);
    closeSync(status);
    if (seccomp !== undefined) closeSync(seccomp);
    if (stdin !== undefined) closeSync(stdin);
  }
  const deadline = Date.now() + 10_000;
  for (;;) {
    const text = existsSync(join(dir, 'status.json')) ? readFileSync(join(dir, 'status.json'), 'utf8') : '';
    const m = /"child-pid"\s*:\s*(\d+)/.exec(text);
    if (m) {
      const pid = Number(m[1]);
      const pidStart = procStart(pid);
      // Running means the container's command runs: the launcher reports the PID once it is exec'd;
      // proot's shell, before it starts proot.
      while (isolation === 'proot' && !execedFromParent(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
      return { pid, pidStart, pgid: processGroup(pid) };
    }
    const failed = /"error"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(text);
    if (failed) return { error: JSON.parse(`"${failed[1]}"`) as string };
    if (Date.now() > deadline) return { error: readFileSync(join(dir, 'stderr'), 'utf8').slice(stderrOffset).trim().split('\n').pop() || 'the container did not start' };
    await new Promise((r) => setTimeout(r, 5));
  }
}
