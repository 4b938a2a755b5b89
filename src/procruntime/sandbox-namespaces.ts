// A process-runtime sandbox's namespaces, as the pause container holds them under containerd:
// network, IPC and UTS namespaces pinned as files under the sandbox's directory (bind mounts of
// nsfs, so they outlive every process and a restart of the runtime), a process holding the pod's
// PID namespace when its containers share one, the pod's network set up through CNI, and the pod's
// namespaced sysctls. Whatever the CRI asks to share with the node is not created.
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ContainerConfig, PodSandboxConfig } from '../cri/types.js';
import { JOIN_CGROUPS_SH } from './cgroups.js';
import { launcherPath, type LaunchNamespaces } from './isolation.js';
import { Cni, loadNetworkList, podIPs, type Attachment, type CniResult, type NetworkList } from './cni.js';
import { InvalidArgumentError } from './errors.js';
import { mountPoints, procStart, processRunning } from './procfs.js';

const run = promisify(execFile);

export interface SandboxNamespaces {
  /** Pinned namespace files; absent where the node's namespace is used. */
  net?: string;
  ipc?: string;
  uts?: string;
  /** The process whose PID namespace the pod's containers share (PID mode POD). */
  pidHolder?: { pid: number; pidStart?: string };
  /** procfs of the pod's PID namespace that earlier runtimes mounted on the host (unmounted at teardown). */
  podProc?: string;
  /** The pod's /dev/shm (a tmpfs every container binds, as containerd's sandbox shm); the node's with hostIPC. */
  shm?: string;
  /** The CNI network the pod is attached to, kept to detach it as it was attached. */
  network?: { list: NetworkList; attachment: Attachment; result?: CniResult };
  ips: string[];
}

export interface NetworkOptions {
  confDir: string;
  binDirs: string[];
}

type Mode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

function modes(config: PodSandboxConfig): { network: Mode; pid: Mode; ipc: Mode } {
  const o = config.linux?.security_context?.namespace_options;
  return { network: (o?.network as Mode) ?? 'POD', pid: (o?.pid as Mode) ?? 'CONTAINER', ipc: (o?.ipc as Mode) ?? 'POD' };
}

/** Which namespace a sysctl lives in, as runc tells them; undefined for one the node shares with everything. */
export function sysctlNamespace(key: string): 'net' | 'ipc' | 'uts' | undefined {
  if (key.startsWith('net.')) return 'net';
  if (['kernel.msgmax', 'kernel.msgmnb', 'kernel.msgmni', 'kernel.sem', 'kernel.shmall', 'kernel.shmmax', 'kernel.shmmni', 'kernel.shm_rmid_forced'].includes(key) || key.startsWith('fs.mqueue.')) return 'ipc';
  if (key === 'kernel.hostname' || key === 'kernel.domainname') return 'uts';
  return undefined;
}

/** A sysctl's path under /proc/sys: dots separate, and a slash is a dot of a name (eno2/100 is eno2.100). */
export function sysctlPath(key: string): string {
  return key
    .split('.')
    .map((seg) => seg.replace(/\//g, '.'))
    .join('/');
}

/** Why a sysctl cannot be set for this pod (runc's words), or undefined. */
export function sysctlRefusal(key: string, ns: Pick<SandboxNamespaces, 'net' | 'ipc' | 'uts'>): string | undefined {
  const where = sysctlNamespace(key);
  if (!where) return `sysctl "${key}" is not in a separate kernel namespace`;
  if (!ns[where]) return `sysctl "${key}" not allowed in host ${where === 'net' ? 'network' : where.toUpperCase()} namespace`;
  if (!/^[a-z0-9_.\/-]+$/i.test(key) || sysctlPath(key).split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) return `sysctl "${key}" is not a valid name`;
  return undefined;
}

export class SandboxNamespaceManager {
  private readonly cni: Cni;

  /** `helperCgroups`: where a process of the sandbox's (its PID namespace holder) goes, out of the runtime's cgroups. */
  constructor(
    private readonly net: NetworkOptions,
    private readonly helperCgroups: () => string[] = () => [],
  ) {
    this.cni = new Cni(net.binDirs);
  }

  /** NetworkReady as containerd reports it: a network configuration to attach pods with. */
  networkStatus(): { ready: boolean; reason: string; message: string } {
    const l = loadNetworkList(this.net.confDir);
    if ('error' in l) return { ready: false, reason: 'NetworkPluginNotReady', message: `Network plugin returns error: cni config load failed: ${l.error}` };
    return { ready: true, reason: '', message: '' };
  }

  /**
   * Creates the sandbox's namespaces under `dir`, attaches its network and sets its sysctls.
   * `record` is called with the namespaces before anything is attached, so that a runtime that
   * dies half-way knows what to undo.
   */
  async setUp(id: string, dir: string, config: PodSandboxConfig, record: (ns: SandboxNamespaces) => Promise<void>): Promise<SandboxNamespaces> {
    const m = modes(config);
    const nsDir = join(dir, 'ns');
    // Passable by any user: a non-root container binds the pod's procfs from here.
    await mkdir(nsDir, { recursive: true, mode: 0o711 });
    const ns: SandboxNamespaces = { ips: [] };
    if (m.network !== 'NODE') ns.net = join(nsDir, 'net');
    if (m.ipc !== 'NODE') ns.ipc = join(nsDir, 'ipc');
    // A pod on the node's network has the node's hostname, as with runc.
    if (m.network !== 'NODE') ns.uts = join(nsDir, 'uts');
    const list = ns.net ? loadNetworkList(this.net.confDir) : undefined;
    if (list && 'error' in list) throw new Error(`failed to setup network for sandbox "${id}": cni config load failed: ${list.error}`);
    for (const [key] of Object.entries(config.linux?.sysctls ?? {})) {
      const why = sysctlRefusal(key, ns);
      if (why) throw new InvalidArgumentError(why);
    }
    await record(ns);
    const files = (['net', 'ipc', 'uts'] as const).filter((k) => ns[k]);
    if (files.length > 0) {
      for (const k of files) writeFileSync(ns[k]!, '');
      const hostname = (config.hostname || config.metadata?.name || 'pod').slice(0, 63);
      await run('unshare', [...files.map((k) => `--${k}=${ns[k]}`), ...(ns.uts ? ['hostname', hostname] : ['true'])]);
    }
    ns.shm = m.ipc === 'NODE' ? '/dev/shm' : join(nsDir, 'shm');
    if (m.ipc !== 'NODE') {
      await mkdir(ns.shm, { recursive: true });
      await run('mount', ['-t', 'tmpfs', '-o', 'nosuid,nodev,noexec,mode=1777,size=65536k', 'shm', ns.shm]);
    }
    if (m.pid === 'POD') {
      ns.pidHolder = await startPidHolder(nsDir, this.helperCgroups());
    }
    await record(ns);
    await this.setSysctls(ns, config.linux?.sysctls ?? {});
    if (ns.net && list && 'list' in list) {
      const meta = config.metadata;
      const portMappings = (config.port_mappings ?? [])
        .filter((p) => (p.host_port ?? 0) > 0)
        .map((p) => ({ hostPort: p.host_port, containerPort: p.container_port, protocol: String(p.protocol ?? 'TCP').toLowerCase(), hostIP: p.host_ip ?? '' }));
      const attachment: Attachment = {
        containerId: id,
        netns: ns.net,
        ifname: 'eth0',
        args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${meta?.namespace ?? ''};K8S_POD_NAME=${meta?.name ?? ''};K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=${meta?.uid ?? ''}`,
        capabilities: { portMappings },
      };
      ns.network = { list: list.list, attachment };
      await record(ns);
      // lo first, as containerd brings it up with the loopback plugin.
      await this.cni.add(LOOPBACK, { ...attachment, ifname: 'lo', capabilities: {} });
      try {
        ns.network.result = await this.cni.add(list.list, attachment);
      } catch (err) {
        throw new Error(`failed to setup network for sandbox "${id}": ${(err as Error).message}`);
      }
      ns.ips = podIPs(ns.network.result);
      await record(ns);
    }
    return ns;
  }

  private async setSysctls(ns: SandboxNamespaces, sysctls: Record<string, string>): Promise<void> {
    for (const [key, value] of Object.entries(sysctls)) {
      const where = sysctlNamespace(key)!;
      const path = `/proc/sys/${sysctlPath(key)}`;
      try {
        await run('nsenter', [`--${where}=${ns[where]}`, '--', 'sh', '-c', 'printf "%s" "$2" > "$1"', 'sh', path, value]);
      } catch (err) {
        const why = ((err as { stderr?: string }).stderr ?? '').trim().split('\n').pop() || (err as Error).message;
        throw new InvalidArgumentError(`failed to set sysctl "${key}" to "${value}": ${why}`);
      }
    }
  }

  /** Whether the namespaces are still held (the PID holder still runs, where there is one). */
  alive(ns: SandboxNamespaces | undefined): boolean {
    return !ns?.pidHolder || processRunning(ns.pidHolder);
  }

  /** Detaches the network and releases every namespace; safe to repeat, and after a crash half-way. */
  async tearDown(ns: SandboxNamespaces | undefined): Promise<void> {
    if (!ns) return;
    const mounted = mountPoints();
    if (ns.network) {
      const netnsThere = ns.net !== undefined && existsSync(ns.net) && mounted.has(ns.net);
      await this.cni.del(ns.network.list, { ...ns.network.attachment, netns: netnsThere ? ns.network.attachment.netns : '' }, ns.network.result);
      ns.network = undefined;
    }
    if (ns.pidHolder && processRunning(ns.pidHolder)) {
      try {
        process.kill(ns.pidHolder.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    ns.pidHolder = undefined;
    for (const p of [ns.podProc, ns.shm === '/dev/shm' ? undefined : ns.shm, ns.net, ns.ipc, ns.uts]) {
      if (p && mounted.has(p)) await run('umount', ['-l', p]).catch(() => undefined);
    }
    ns.ips = [];
  }
}

const LOOPBACK: NetworkList = { cniVersion: '1.0.0', name: 'cni-loopback', plugins: [{ type: 'loopback' }] };

/**
 * The pod's PID namespace is held by a process of its own (the launcher's reaper as its init,
 * which reaps what its containers leave behind), started outside the runtime's process tree.
 */
async function startPidHolder(nsDir: string, cgroupProcs: string[]): Promise<{ pid: number; pidStart?: string }> {
  const statusPath = join(nsDir, 'pid-holder.json');
  const status = openSync(statusPath, 'w');
  const child = spawn('setsid', ['-f', 'sh', '-c', `${JOIN_CGROUPS_SH}; exec "$@"`, 'sh', launcherPath(), '--status-fd', '3', '--unshare-pid', '--reaper'], {
    stdio: ['ignore', 'ignore', 'ignore', status],
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', NODELET_CGROUP_PROCS: cgroupProcs.join(' ') },
    detached: true,
  });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve());
  });
  closeSync(status);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const m = /"child-pid"\s*:\s*(\d+)/.exec(readFileSync(statusPath, 'utf8'));
    if (m) return { pid: Number(m[1]), pidStart: procStart(Number(m[1])) };
    if (Date.now() > deadline) throw new Error('the pod\'s PID namespace holder did not start');
    await new Promise((r) => setTimeout(r, 5));
  }
}


/**
 * What a container of the sandbox joins: the pod's namespaces, and its PID namespace as its own
 * config asks (CONTAINER, POD, NODE, or TARGET: another container's, as an ephemeral container
 * debugging it). A string is why it cannot start. Undefined for a sandbox without namespaces
 * (proot's, or an older runtime's): the container then makes its own.
 */
export function launchNamespaces(
  s: { namespaces?: SandboxNamespaces; config: PodSandboxConfig },
  config: ContainerConfig,
  target: (id: string) => { pid?: number; pidStart?: string } | undefined = () => undefined,
): LaunchNamespaces | string | undefined {
  const ns = s.namespaces;
  if (!ns) return undefined;
  const opts = config.linux?.security_context?.namespace_options;
  const asked = (opts?.pid ?? s.config.linux?.security_context?.namespace_options?.pid ?? 'CONTAINER') as string;
  const shared = { net: ns.net, ipc: ns.ipc, uts: ns.uts, shm: ns.shm };
  if (asked === 'TARGET') {
    const t = target(opts?.target_id ?? '');
    if (!t || t.pid === undefined || !processRunning(t)) return `the target container ${JSON.stringify(opts?.target_id ?? '')} is not running`;
    // Its PID namespace joined as the pod's would be.
    return { ...shared, pid: 'POD', podPid: t.pid };
  }
  const pid = asked === 'POD' || asked === 'NODE' ? asked : 'CONTAINER';
  if (pid === 'POD' && (!ns.pidHolder || !processRunning(ns.pidHolder))) return 'the pod\'s PID namespace is gone (its sandbox was not created to share one, or its holder ended)';
  return { ...shared, pid, podPid: pid === 'POD' ? ns.pidHolder!.pid : undefined };
}
