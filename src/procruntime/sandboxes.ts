// The process runtime's sandboxes: RunPodSandbox, StopPodSandbox, RemovePodSandbox and their
// status. A sandbox is a record on disk and, under the launcher, the pod's namespaces and network
// (sandbox-namespaces.ts); its containers are the runtime's, reached through `deps`.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PodSandbox, PodSandboxConfig, PodSandboxFilter, PodSandboxStatusResponse } from '../cri/types.js';
import { cgroupParentParts } from './cgroups.js';
import { resolvConf } from './container-files.js';
import { InvalidArgumentError, NotFoundError } from './errors.js';
import { byIdOrPrefix, matchLabels, nowNs, type ContainerRecord, type SandboxRecord } from './records.js';
import type { SandboxNamespaceManager } from './sandbox-namespaces.js';
import type { RecordStore } from './state.js';

/** The process runtime's one CRI runtime handler (a RuntimeClass's `handler` may name it). */
export const PROCESS_RUNTIME_HANDLER = 'process';

export interface SandboxDeps {
  store: RecordStore;
  /** The node's IP: what proot's pods, on the host's network, report. */
  hostIP: string;
  /** The namespace manager, once the runtime has started (none under proot). */
  namespaces: () => SandboxNamespaceManager | undefined;
  containersOf: (sandboxId: string) => ContainerRecord[];
  stopContainer: (id: string, timeoutSeconds: number) => Promise<void>;
  removeContainer: (id: string) => Promise<void>;
}

export class Sandboxes {
  readonly records = new Map<string, SandboxRecord>();
  /** Ready sandboxes already found not ready (their PID namespace holder died), reported once each. */
  private readonly lost = new Set<string>();

  constructor(private readonly deps: SandboxDeps) {}

  /** NetworkReady: a CNI configuration to attach pods with (always, under proot: the host's network). */
  networkCondition(): { status: boolean; reason: string; message: string } {
    const n = this.deps.namespaces()?.networkStatus() ?? { ready: true, reason: '', message: '' };
    return { status: n.ready, reason: n.reason, message: n.message };
  }

  /** A sandbox that never became ready (the runtime died setting it up) gives back what it got. */
  async recover(log: (msg: string, fields?: Record<string, unknown>) => void): Promise<void> {
    for (const sb of this.records.values()) {
      if (sb.state === 'SANDBOX_NOTREADY' && sb.namespaces?.network) await this.releaseNamespaces(sb).catch((err) => log('a sandbox\'s network could not be released', { id: sb.id, error: (err as Error).message }));
    }
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    if (!config.metadata?.name || !config.metadata.uid) throw new InvalidArgumentError('sandbox metadata needs a name and a uid');
    // One handler, '' being the default; any other name is refused as containerd refuses one it lacks.
    if (runtimeHandler !== '' && runtimeHandler !== PROCESS_RUNTIME_HANDLER) throw new InvalidArgumentError(`no runtime for "${runtimeHandler}" is configured`);
    const parent = config.linux?.cgroup_parent;
    if (parent) {
      try {
        cgroupParentParts(parent);
      } catch (err) {
        throw new InvalidArgumentError((err as Error).message);
      }
    }
    const id = randomBytes(32).toString('hex');
    // Recorded before its namespaces are made, so that a runtime dying half-way knows what to undo.
    const s: SandboxRecord = { id, config, state: 'SANDBOX_NOTREADY', createdAt: nowNs(), ip: '' };
    await this.deps.store.saveSandbox(s);
    const namespaces = this.deps.namespaces();
    if (namespaces) {
      try {
        await namespaces.setUp(id, this.deps.store.sandboxDir(id), config, async (ns) => {
          s.namespaces = ns;
          await this.deps.store.saveSandbox(s);
        });
      } catch (err) {
        await this.releaseNamespaces(s).catch(() => undefined);
        await this.deps.store.removeSandbox(id);
        throw err;
      }
      s.ip = s.namespaces?.ips[0] ?? '';
    } else s.ip = this.deps.hostIP;
    s.state = 'SANDBOX_READY';
    await this.deps.store.saveSandbox(s);
    // The pod's own resolv.conf, as containerd writes one from the DNS config it is given.
    const dns = config.dns_config;
    if (dns && (dns.servers?.length || dns.searches?.length || dns.options?.length)) {
      await writeFile(join(this.deps.store.sandboxDir(id), 'resolv.conf'), resolvConf(dns));
    }
    this.records.set(id, s);
    return id;
  }

  /** By full ID, or by a unique-enough prefix of one (crictl shortens IDs). */
  findSandbox(id: string): SandboxRecord | undefined {
    return byIdOrPrefix(this.records, id);
  }

  sandbox(id: string): SandboxRecord {
    const s = this.findSandbox(id);
    if (!s) throw new NotFoundError(`pod sandbox ${id}`);
    return s;
  }

  async stopPodSandbox(id: string): Promise<void> {
    // Idempotent, as CRI asks: stopping what is not there is not an error.
    const s = this.findSandbox(id);
    if (!s) return;
    // Not ready before its containers stop: a relist that sees them exited must not see the sandbox
    // still ready and start them again in it, only for the new sandbox to need them once more.
    s.state = 'SANDBOX_NOTREADY';
    await this.deps.store.saveSandbox(s);
    await Promise.all(this.deps.containersOf(s.id).filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => this.deps.stopContainer(c.id, 0)));
    // As containerd: a stopped sandbox has its network torn down (a failure is the call's, retried).
    await this.releaseNamespaces(s);
  }

  async releaseNamespaces(s: SandboxRecord): Promise<void> {
    const namespaces = this.deps.namespaces();
    if (!namespaces || !s.namespaces) return;
    await namespaces.tearDown(s.namespaces);
    await this.deps.store.saveSandbox(s);
  }

  async removePodSandbox(id: string): Promise<void> {
    const s = this.findSandbox(id);
    if (!s) return; // idempotent
    for (const c of this.deps.containersOf(s.id)) {
      if (c.state === 'CONTAINER_RUNNING') await this.deps.stopContainer(c.id, 0);
      await this.deps.removeContainer(c.id);
    }
    await this.releaseNamespaces(s);
    this.records.delete(s.id);
    this.lost.delete(s.id);
    await this.deps.store.removeSandbox(s.id);
  }

  /** Ready, and its namespaces still held (a PID namespace's holder that died takes the sandbox with it, as pause does). */
  sandboxReady(s: SandboxRecord): boolean {
    return s.state === 'SANDBOX_READY' && (this.deps.namespaces()?.alive(s.namespaces) ?? true);
  }

  /** Sandboxes that stopped being ready without a StopPodSandbox since the last call (nothing else announces it). */
  newlyLost(): SandboxRecord[] {
    const found = [...this.records.values()].filter((s) => s.state === 'SANDBOX_READY' && s.namespaces?.pidHolder && !this.lost.has(s.id) && !this.sandboxReady(s));
    for (const s of found) this.lost.add(s.id);
    return found;
  }

  sandboxView(s: SandboxRecord) {
    return {
      id: s.id,
      metadata: s.config.metadata,
      state: this.sandboxReady(s) ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
      created_at: s.createdAt,
      labels: s.config.labels ?? {},
      annotations: s.config.annotations ?? {},
      runtime_handler: '',
    };
  }

  async podSandboxStatus(id: string, verbose = false): Promise<PodSandboxStatusResponse> {
    const s = this.sandbox(id);
    // Verbose, as containerd's: a process in the pod's network namespace (here a running container's).
    const inPod = this.deps.containersOf(s.id).find((c) => c.state === 'CONTAINER_RUNNING' && c.pid !== undefined);
    const ns = s.config.linux?.security_context?.namespace_options;
    return {
      status: {
        ...this.sandboxView(s),
        // As containerd: the IPs while the pod's network is there (none on the node's network).
        network: { ip: this.sandboxReady(s) ? s.ip : '', additional_ips: this.sandboxReady(s) ? (s.namespaces?.ips.slice(1) ?? []).map((ip) => ({ ip })) : [] },
        linux: { namespaces: { options: { network: ns?.network ?? 'POD', pid: ns?.pid ?? 'CONTAINER', ipc: ns?.ipc ?? 'POD', target_id: '', userns_options: null } } },
      },
      info: verbose ? { info: JSON.stringify({ pid: inPod?.pid ?? 0, namespaces: s.namespaces ? { net: s.namespaces.net, ipc: s.namespaces.ipc, uts: s.namespaces.uts } : undefined }) } : {},
      containers_statuses: [],
      timestamp: nowNs(),
    } as unknown as PodSandboxStatusResponse;
  }

  async listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
    return [...this.records.values()]
      .filter((s) => (!filter?.id || s.id.startsWith(filter.id)) && (!filter?.state || filter.state.state === (this.sandboxReady(s) ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY')) && matchLabels(s.config.labels, filter?.label_selector))
      .map((s) => this.sandboxView(s) as unknown as PodSandbox);
  }
}
