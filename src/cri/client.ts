// CRI v1 client over gRPC (a unix socket), implementing the RuntimeService and ImageService seams.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import type { ProtoGrpcType } from '../../proto/gen/api.js';
import { fromGrpcError, VersionNotSupportedError } from './errors.js';
import type { ContainerEventHandlers, ContainerEventSource, ImageService, RuntimeService } from './services.js';
import type {
  AuthConfig,
  Container,
  ContainerStats,
  ContainerStatsFilter,
  ContainerConfig,
  ContainerEventResponse,
  ContainerFilter,
  ContainerStatusResponse,
  ExecSyncResponse,
  Image,
  ImageFilter,
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
} from './types.js';

/** The CRI API version the runtime manager speaks (the seed's kubeRuntimeAPIVersion). */
export const KUBE_RUNTIME_API_VERSION = '0.1.0';

/** Kuscia's runtimeRequestTimeout: the deadline of calls that change the runtime. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 2 * 60_000;
/** Reads (status, list, version) answer from memory in a healthy runtime; waiting minutes on them only hides an outage. */
export const DEFAULT_STATUS_TIMEOUT_MS = 10_000;
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface CriCallObserver {
  /** Called once per CRI call with its duration; `error` is set when it failed. */
  (method: string, seconds: number, error?: Error): void;
}

export interface CriClientOptions {
  requestTimeoutMs?: number;
  statusTimeoutMs?: number;
  /** Image pulls are not bounded by the request timeout (a large image is slow, not broken). */
  pullTimeoutMs?: number;
  observer?: CriCallObserver;
}

const protoPath = fileURLToPath(new URL('../../../proto/api.proto', import.meta.url));
let cachedProto: ProtoGrpcType | undefined;
function loadProto(): ProtoGrpcType {
  cachedProto ??= grpc.loadPackageDefinition(
    protoLoader.loadSync(protoPath, { keepCase: true, enums: String, longs: String, defaults: true, oneofs: true }),
  ) as unknown as ProtoGrpcType;
  return cachedProto;
}

/** Accepts `unix:///path`, `unix:path` or a bare absolute path and returns the grpc-js target. */
export function normalizeEndpoint(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint;
  if (endpoint.startsWith('unix:')) return `unix://${endpoint.slice('unix:'.length)}`;
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  throw new Error(`invalid runtime endpoint ${JSON.stringify(endpoint)}: expected unix:///path/to/socket`);
}

type Unary = (req: unknown, meta: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => grpc.ClientUnaryCall;

/** The gRPC client for both CRI services on one endpoint. */
export class CriClient implements RuntimeService, ImageService, ContainerEventSource {
  readonly endpoint: string;
  private readonly runtime: grpc.Client;
  private readonly images: grpc.Client;
  private readonly requestTimeoutMs: number;
  private readonly statusTimeoutMs: number;
  private readonly pullTimeoutMs: number;
  private readonly observer: CriCallObserver | undefined;

  constructor(endpoint: string, options: CriClientOptions = {}) {
    this.endpoint = normalizeEndpoint(endpoint);
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.statusTimeoutMs = Math.min(options.statusTimeoutMs ?? DEFAULT_STATUS_TIMEOUT_MS, this.requestTimeoutMs);
    this.pullTimeoutMs = options.pullTimeoutMs ?? 10 * 60_000;
    this.observer = options.observer;
    const proto = loadProto();
    const channelOptions: grpc.ChannelOptions = {
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      // A restarted runtime should be found again quickly, not after grpc's default 2 min backoff ceiling.
      'grpc.max_reconnect_backoff_ms': 2000,
      'grpc.initial_reconnect_backoff_ms': 100,
    };
    const creds = grpc.credentials.createInsecure();
    this.runtime = new proto.runtime.v1.RuntimeService(this.endpoint, creds, channelOptions);
    this.images = new proto.runtime.v1.ImageService(this.endpoint, creds, channelOptions);
  }

  close(): void {
    this.runtime.close();
    this.images.close();
  }

  private call<T>(client: grpc.Client, method: string, request: object, timeoutMs: number | undefined): Promise<T> {
    const fn = (client as unknown as Record<string, Unary>)[method];
    if (typeof fn !== 'function') throw new Error(`CRI method ${method} missing from the generated client`);
    const options: grpc.CallOptions = timeoutMs ? { deadline: Date.now() + timeoutMs } : {};
    const started = process.hrtime.bigint();
    return new Promise<T>((resolve, reject) => {
      fn.call(client, request, new grpc.Metadata(), options, (err, res) => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        if (err) {
          const mapped = fromGrpcError(err, method, this.endpoint, timeoutMs ?? 0);
          this.observer?.(method, seconds, mapped);
          reject(mapped);
          return;
        }
        this.observer?.(method, seconds);
        resolve(res as T);
      });
    });
  }

  private rt<T>(method: string, request: object, timeoutMs = this.requestTimeoutMs): Promise<T> {
    return this.call<T>(this.runtime, method, request, timeoutMs);
  }

  private img<T>(method: string, request: object, timeoutMs = this.requestTimeoutMs): Promise<T> {
    return this.call<T>(this.images, method, request, timeoutMs);
  }

  // RuntimeService

  version(apiVersion: string): Promise<VersionResponse> {
    return this.rt('Version', { version: apiVersion }, this.statusTimeoutMs);
  }

  status(verbose = false): Promise<StatusResponse> {
    return this.rt('Status', { verbose }, this.statusTimeoutMs);
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    const res = await this.rt<{ pod_sandbox_id: string }>('RunPodSandbox', { config, runtime_handler: runtimeHandler });
    if (!res.pod_sandbox_id) throw new Error(`RunPodSandbox on ${this.endpoint} returned no sandbox id`);
    return res.pod_sandbox_id;
  }

  async stopPodSandbox(podSandboxId: string): Promise<void> {
    await this.rt('StopPodSandbox', { pod_sandbox_id: podSandboxId });
  }

  async removePodSandbox(podSandboxId: string): Promise<void> {
    await this.rt('RemovePodSandbox', { pod_sandbox_id: podSandboxId });
  }

  podSandboxStatus(podSandboxId: string, verbose = false): Promise<PodSandboxStatusResponse> {
    return this.rt('PodSandboxStatus', { pod_sandbox_id: podSandboxId, verbose }, this.statusTimeoutMs);
  }

  async listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
    const res = await this.rt<{ items: PodSandbox[] }>('ListPodSandbox', { filter: filter ?? null }, this.statusTimeoutMs);
    return res.items;
  }

  async createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string> {
    const res = await this.rt<{ container_id: string }>('CreateContainer', {
      pod_sandbox_id: podSandboxId,
      config,
      sandbox_config: sandboxConfig,
    });
    if (!res.container_id) throw new Error(`CreateContainer on ${this.endpoint} returned no container id`);
    return res.container_id;
  }

  async startContainer(containerId: string): Promise<void> {
    await this.rt('StartContainer', { container_id: containerId });
  }

  async stopContainer(containerId: string, timeoutSeconds: number): Promise<void> {
    // The runtime waits up to `timeout` for the container: our deadline must outlast it.
    await this.rt('StopContainer', { container_id: containerId, timeout: String(timeoutSeconds) }, this.requestTimeoutMs + timeoutSeconds * 1000);
  }

  async removeContainer(containerId: string): Promise<void> {
    await this.rt('RemoveContainer', { container_id: containerId });
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    const res = await this.rt<{ containers: Container[] }>('ListContainers', { filter: filter ?? null }, this.statusTimeoutMs);
    return res.containers;
  }

  containerStatus(containerId: string, verbose = false): Promise<ContainerStatusResponse> {
    return this.rt('ContainerStatus', { container_id: containerId, verbose }, this.statusTimeoutMs);
  }

  async updateContainerResources(containerId: string, resources: LinuxContainerResources): Promise<void> {
    await this.rt('UpdateContainerResources', { container_id: containerId, linux: resources });
  }

  async reopenContainerLog(containerId: string): Promise<void> {
    await this.rt('ReopenContainerLog', { container_id: containerId });
  }

  execSync(containerId: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResponse> {
    // As the kubelet: a command with a timeout gets that much longer than a plain request; none means no deadline.
    const deadline = timeoutSeconds > 0 ? this.requestTimeoutMs + timeoutSeconds * 1000 : undefined;
    return this.rt('ExecSync', { container_id: containerId, cmd, timeout: String(timeoutSeconds) }, deadline);
  }

  async listContainerStats(filter?: ContainerStatsFilter): Promise<ContainerStats[]> {
    const res = await this.rt<{ stats: ContainerStats[] }>('ListContainerStats', { filter: filter ?? null }, this.statusTimeoutMs);
    return res.stats;
  }

  /**
   * CRI GetContainerEvents: a stream with no deadline, open until cancelled or broken. The runtime's
   * first headers say it is open; an error (Unimplemented where the runtime lacks it) ends it.
   */
  watchContainerEvents(handlers: ContainerEventHandlers): { cancel(): void } {
    const fn = (this.runtime as unknown as Record<string, (req: object, meta: grpc.Metadata) => grpc.ClientReadableStream<ContainerEventResponse>>).GetContainerEvents;
    let done = false;
    const finish = (err: Error) => {
      if (done) return;
      done = true;
      handlers.onEnd(err);
    };
    const stream = fn.call(this.runtime, {}, new grpc.Metadata());
    stream.on('metadata', () => {
      if (!done) handlers.onOpen();
    });
    stream.on('data', (e: ContainerEventResponse) => {
      if (!done) handlers.onEvent(e);
    });
    stream.on('error', (err) => finish(fromGrpcError(err, 'GetContainerEvents', this.endpoint, 0)));
    stream.on('end', () => finish(new Error(`GetContainerEvents on ${this.endpoint}: the runtime ended the stream`)));
    return {
      cancel: () => {
        done = true;
        stream.cancel();
      },
    };
  }

  /** The URL of the runtime's streaming server where this exec is served. */
  async exec(req: { containerId: string; cmd: string[]; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): Promise<string> {
    const res = await this.rt<{ url: string }>('Exec', { container_id: req.containerId, cmd: req.cmd, tty: req.tty, stdin: req.stdin, stdout: req.stdout, stderr: req.stderr });
    return res.url;
  }

  async attach(req: { containerId: string; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): Promise<string> {
    const res = await this.rt<{ url: string }>('Attach', { container_id: req.containerId, tty: req.tty, stdin: req.stdin, stdout: req.stdout, stderr: req.stderr });
    return res.url;
  }

  async portForward(podSandboxId: string, ports: number[]): Promise<string> {
    const res = await this.rt<{ url: string }>('PortForward', { pod_sandbox_id: podSandboxId, port: ports });
    return res.url;
  }

  // ImageService

  async listImages(filter?: ImageFilter): Promise<Image[]> {
    const res = await this.img<{ images: Image[] }>('ListImages', { filter: filter ?? null }, this.statusTimeoutMs);
    return res.images;
  }

  imageStatus(image: ImageSpec, verbose = false): Promise<ImageStatusResponse> {
    return this.img('ImageStatus', { image, verbose }, this.statusTimeoutMs);
  }

  async pullImage(image: ImageSpec, auth?: AuthConfig, sandboxConfig?: PodSandboxConfig): Promise<string> {
    const res = await this.img<{ image_ref: string }>(
      'PullImage',
      { image, auth: auth ?? null, sandbox_config: sandboxConfig ?? null },
      this.pullTimeoutMs,
    );
    return res.image_ref;
  }

  async removeImage(image: ImageSpec): Promise<void> {
    await this.img('RemoveImage', { image });
  }

  imageFsInfo(): Promise<ImageFsInfoResponse> {
    return this.img('ImageFsInfo', {}, this.statusTimeoutMs);
  }
}

/**
 * Asks the runtime for its version and refuses any CRI API version but the one nodelet speaks,
 * as the seed's NewManager does. Returns the runtime's answer.
 */
export async function checkRuntimeVersion(runtime: RuntimeService): Promise<VersionResponse> {
  const v = await runtime.version(KUBE_RUNTIME_API_VERSION);
  if (v.version !== KUBE_RUNTIME_API_VERSION) throw new VersionNotSupportedError(v.version, KUBE_RUNTIME_API_VERSION);
  return v;
}
