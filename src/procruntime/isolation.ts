// How a container's process is isolated: bubblewrap (new PID/IPC/UTS namespaces, the image's
// root as /), or proot where namespaces cannot be created (an unprivileged container).
import { execFileSync, spawnSync } from 'node:child_process';

export type Isolation = 'bubblewrap' | 'proot';

function works(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore', timeout: 5000 });
  return r.status === 0;
}

/** Probes what this host allows, once at start. */
export function detectIsolation(): { isolation?: Isolation; detail: string } {
  const hasBwrap = works('bwrap', ['--version']);
  if (hasBwrap && works('bwrap', ['--ro-bind', '/', '/', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--proc', '/proc', '--dev', '/dev', 'true'])) {
    return { isolation: 'bubblewrap', detail: execFileSync('bwrap', ['--version'], { encoding: 'utf8' }).trim() };
  }
  if (works('proot', ['--version'])) {
    return { isolation: 'proot', detail: hasBwrap ? 'bubblewrap cannot create namespaces here; using proot' : 'bubblewrap not installed; using proot' };
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
}

/** The command line that runs the container's process under the chosen isolation. */
export function launchArgv(isolation: Isolation, s: LaunchSpec): string[] {
  if (isolation === 'bubblewrap') {
    const args = ['bwrap', '--bind', s.rootfs, '/', '--proc', '/proc', '--dev', '/dev', '--ro-bind', '/sys', '/sys', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--hostname', s.hostname];
    for (const m of s.mounts) args.push(m.readonly ? '--ro-bind' : '--bind', m.hostPath, m.containerPath);
    args.push('--die-with-parent', '--as-pid-1', '--json-status-fd', String(s.statusFd), '--chdir', s.cwd, '--clearenv');
    for (const [k, v] of s.env) args.push('--setenv', k, v);
    args.push('--', ...s.argv);
    return args;
  }
  const args = ['proot', '-r', s.rootfs, '-b', '/proc', '-b', '/dev', '-b', '/sys', '-w', s.cwd];
  for (const m of s.mounts) args.push('-b', `${m.hostPath}:${m.containerPath}`);
  return ['env', '-i', ...s.env.map(([k, v]) => `${k}=${v}`), ...args, ...s.argv];
}
