// A small in-memory CRI runtime (our RuntimeService and ImageService interfaces) for unit tests.
import { CriNotFoundError } from '../../../src/cri/errors.js';
import type { ImageService, RuntimeService } from '../../../src/cri/services.js';
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatusResponse,
  ExecSyncResponse,
  Image,
  ImageFsInfoResponse,
  ImageSpec,
  ImageStatusResponse,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStatusResponse,
  StatusResponse,
  VersionResponse,
} from '../../../src/cri/types.js';
import type { Clock } from '../../../src/util/clock.js';

interface FakeSandbox {
  id: string;
  config: PodSandboxConfig;
  state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
  createdAt: number;
  ip: string;
}

interface FakeContainer {
  id: string;
  sandboxId: string;
  config: ContainerConfig;
  state: 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
}

const ns = (ms: number) => String(BigInt(ms) * 1_000_000n);

function matches(labels: Record<string, string>, selector: Record<string, string> | undefined): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

export class FakeRuntime implements RuntimeService, ImageService {
  sandboxes = new Map<string, FakeSandbox>();
  containers = new Map<string, FakeContainer>();
  images = new Set<string>(['nodelet.test/busybox:1']);
  calls: string[] = [];
  stopTimeouts = new Map<string, number>();
  private seq = 0;

  constructor(private readonly clock: Clock) {}

  private next(prefix: string): string {
    this.seq++;
    return `${prefix}${this.seq}`;
  }

  /** Makes a running container exit, as its process would. */
  exit(id: string, code: number): void {
    const c = this.containers.get(id)!;
    c.state = 'CONTAINER_EXITED';
    c.exitCode = code;
    c.finishedAt = this.clock.now();
  }

  running(): FakeContainer[] {
    return [...this.containers.values()].filter((c) => c.state === 'CONTAINER_RUNNING');
  }

  async version(): Promise<VersionResponse> {
    return { version: '0.1.0', runtime_name: 'fake', runtime_version: '1.0.0', runtime_api_version: 'v1' };
  }

  async status(): Promise<StatusResponse> {
    return { status: { conditions: [] }, info: {}, runtime_handlers: [], features: null } as unknown as StatusResponse;
  }

  /** The runtime handler and the configuration of each RunPodSandbox, in order. */
  handlers: string[] = [];
  sandboxConfigs: PodSandboxConfig[] = [];

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    const id = this.next('sb');
    this.handlers.push(runtimeHandler);
    this.sandboxConfigs.push(config);
    this.calls.push(`RunPodSandbox ${config.metadata?.name} attempt=${config.metadata?.attempt}`);
    this.sandboxes.set(id, { id, config, state: 'SANDBOX_READY', createdAt: this.clock.now() + this.seq, ip: `10.0.0.${this.seq}` });
    return id;
  }

  async stopPodSandbox(id: string): Promise<void> {
    const sb = this.sandboxes.get(id);
    if (!sb) throw new CriNotFoundError('StopPodSandbox', 'fake', id);
    this.calls.push(`StopPodSandbox ${id}`);
    sb.state = 'SANDBOX_NOTREADY';
    for (const c of this.containers.values()) if (c.sandboxId === id && c.state === 'CONTAINER_RUNNING') this.exit(c.id, 137);
  }

  async removePodSandbox(id: string): Promise<void> {
    this.calls.push(`RemovePodSandbox ${id}`);
    this.sandboxes.delete(id);
    for (const c of [...this.containers.values()]) if (c.sandboxId === id) this.containers.delete(c.id);
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatusResponse> {
    const sb = this.sandboxes.get(id);
    if (!sb) throw new CriNotFoundError('PodSandboxStatus', 'fake', id);
    const netMode = sb.config.linux?.security_context?.namespace_options?.network ?? 'POD';
    return {
      status: {
        id,
        metadata: { name: sb.config.metadata!.name!, uid: sb.config.metadata!.uid!, namespace: sb.config.metadata!.namespace!, attempt: sb.config.metadata!.attempt ?? 0 },
        state: sb.state,
        created_at: ns(sb.createdAt),
        network: { ip: netMode === 'NODE' ? '' : sb.ip, additional_ips: [] },
        linux: { namespaces: { options: { network: netMode, pid: 'CONTAINER', ipc: 'POD', target_id: '', userns_options: null } } },
        labels: sb.config.labels ?? {},
        annotations: sb.config.annotations ?? {},
        runtime_handler: '',
      },
      info: {},
      containers_statuses: [],
      timestamp: '0',
    } as unknown as PodSandboxStatusResponse;
  }

  async listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
    return [...this.sandboxes.values()]
      .filter((s) => matches(s.config.labels ?? {}, filter?.label_selector) && (!filter?.state || filter.state.state === s.state))
      .map((s) => ({
        id: s.id,
        metadata: { name: s.config.metadata!.name!, uid: s.config.metadata!.uid!, namespace: s.config.metadata!.namespace!, attempt: s.config.metadata!.attempt ?? 0 },
        state: s.state,
        created_at: ns(s.createdAt),
        labels: s.config.labels ?? {},
        annotations: s.config.annotations ?? {},
        runtime_handler: '',
      }));
  }

  async createContainer(sandboxId: string, config: ContainerConfig): Promise<string> {
    if (!this.sandboxes.has(sandboxId)) throw new CriNotFoundError('CreateContainer', 'fake', sandboxId);
    const id = this.next('c');
    this.calls.push(`CreateContainer ${config.metadata?.name} attempt=${config.metadata?.attempt}`);
    this.containers.set(id, { id, sandboxId, config, state: 'CONTAINER_CREATED', createdAt: this.clock.now() + this.seq, startedAt: 0, finishedAt: 0, exitCode: 0 });
    return id;
  }

  async startContainer(id: string): Promise<void> {
    const c = this.containers.get(id);
    if (!c) throw new CriNotFoundError('StartContainer', 'fake', id);
    this.calls.push(`StartContainer ${c.config.metadata?.name}`);
    c.state = 'CONTAINER_RUNNING';
    c.startedAt = this.clock.now();
  }

  async stopContainer(id: string, timeout: number): Promise<void> {
    const c = this.containers.get(id);
    if (!c) throw new CriNotFoundError('StopContainer', 'fake', id);
    this.calls.push(`StopContainer ${c.config.metadata?.name} timeout=${timeout}`);
    this.stopTimeouts.set(id, timeout);
    if (c.state === 'CONTAINER_RUNNING') this.exit(id, 143);
  }

  async removeContainer(id: string): Promise<void> {
    this.calls.push(`RemoveContainer ${this.containers.get(id)?.config.metadata?.name ?? id}`);
    this.containers.delete(id);
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    return [...this.containers.values()]
      .filter((c) => matches(c.config.labels ?? {}, filter?.label_selector) && (!filter?.state || filter.state.state === c.state) && (!filter?.pod_sandbox_id || filter.pod_sandbox_id === c.sandboxId))
      .map((c) => ({
        id: c.id,
        pod_sandbox_id: c.sandboxId,
        metadata: { name: c.config.metadata!.name!, attempt: c.config.metadata!.attempt ?? 0 },
        image: { image: c.config.image?.image ?? '', annotations: {}, user_specified_image: '', runtime_handler: '' },
        image_ref: 'sha256:fake',
        image_id: 'sha256:fake',
        state: c.state,
        created_at: ns(c.createdAt),
        labels: c.config.labels ?? {},
        annotations: c.config.annotations ?? {},
      })) as unknown as Container[];
  }

  async containerStatus(id: string): Promise<ContainerStatusResponse> {
    const c = this.containers.get(id);
    if (!c) throw new CriNotFoundError('ContainerStatus', 'fake', id);
    return {
      status: {
        id,
        metadata: { name: c.config.metadata!.name!, attempt: c.config.metadata!.attempt ?? 0 },
        state: c.state,
        created_at: ns(c.createdAt),
        started_at: ns(c.startedAt),
        finished_at: ns(c.finishedAt),
        exit_code: c.exitCode,
        image: { image: c.config.image?.image ?? '', annotations: {}, user_specified_image: '', runtime_handler: '' },
        image_ref: 'sha256:fake',
        reason: c.state === 'CONTAINER_EXITED' ? (c.exitCode === 0 ? 'Completed' : 'Error') : '',
        message: '',
        labels: c.config.labels ?? {},
        annotations: c.config.annotations ?? {},
        mounts: [],
        log_path: '',
      },
      info: {},
    } as unknown as ContainerStatusResponse;
  }

  async updateContainerResources(_id: string, _resources: LinuxContainerResources): Promise<void> {}
  async reopenContainerLog(): Promise<void> {}
  async execSync(): Promise<ExecSyncResponse> {
    return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exit_code: 0 } as unknown as ExecSyncResponse;
  }

  async listImages(): Promise<Image[]> {
    return [...this.images].map((i) => ({ id: `sha256:${i}`, repo_tags: [i] }) as unknown as Image);
  }

  /** The USER of an image, as ImageStatus reports it (uid, or a username). */
  readonly imageUsers = new Map<string, { uid?: { value: string }; username?: string }>();

  async imageStatus(image: ImageSpec): Promise<ImageStatusResponse> {
    // By name or by the ID it was given (sha256:<name>).
    const name = (image.image ?? '').replace(/^sha256:/, '');
    const user = this.imageUsers.get(name);
    return { image: this.images.has(name) ? ({ id: `sha256:${name}`, repo_tags: [name], ...user } as unknown as Image) : null, info: {} } as unknown as ImageStatusResponse;
  }

  async pullImage(image: ImageSpec): Promise<string> {
    throw new Error(`no registry here for ${image.image}`);
  }

  async removeImage(): Promise<void> {}
  async imageFsInfo(): Promise<ImageFsInfoResponse> {
    return { image_filesystems: [], container_filesystems: [] } as unknown as ImageFsInfoResponse;
  }
}
