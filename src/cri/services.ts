// The two seams between nodelet and a container runtime, after the kubelet's internalapi
// (k8s.io/cri-api/pkg/apis). The runtime manager depends on these, never on gRPC.
import type {
  AuthConfig,
  Container,
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

export interface RuntimeService {
  version(apiVersion: string): Promise<VersionResponse>;
  status(verbose?: boolean): Promise<StatusResponse>;

  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string): Promise<string>;
  stopPodSandbox(podSandboxId: string): Promise<void>;
  removePodSandbox(podSandboxId: string): Promise<void>;
  podSandboxStatus(podSandboxId: string, verbose?: boolean): Promise<PodSandboxStatusResponse>;
  listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]>;

  createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string>;
  startContainer(containerId: string): Promise<void>;
  /** Stops a container, giving it `timeoutSeconds` after SIGTERM before it is killed. */
  stopContainer(containerId: string, timeoutSeconds: number): Promise<void>;
  removeContainer(containerId: string): Promise<void>;
  listContainers(filter?: ContainerFilter): Promise<Container[]>;
  containerStatus(containerId: string, verbose?: boolean): Promise<ContainerStatusResponse>;
  updateContainerResources(containerId: string, resources: LinuxContainerResources): Promise<void>;
  reopenContainerLog(containerId: string): Promise<void>;
  execSync(containerId: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResponse>;
}

/** The calls that hand out the runtime's streaming URLs (exec, attach, port-forward). */
export interface StreamingService {
  exec(req: { containerId: string; cmd: string[]; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): Promise<string>;
  attach(req: { containerId: string; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): Promise<string>;
  portForward(podSandboxId: string, ports: number[]): Promise<string>;
}

export interface ImageService {
  listImages(filter?: ImageFilter): Promise<Image[]>;
  imageStatus(image: ImageSpec, verbose?: boolean): Promise<ImageStatusResponse>;
  /** Pulls an image and returns its reference (usually the image ID or digest). */
  pullImage(image: ImageSpec, auth?: AuthConfig, sandboxConfig?: PodSandboxConfig): Promise<string>;
  removeImage(image: ImageSpec): Promise<void>;
  imageFsInfo(): Promise<ImageFsInfoResponse>;
}

/** What a runtime's container event stream tells whoever watches it. */
export interface ContainerEventHandlers {
  /** The runtime accepted the stream: events flow from now on. */
  onOpen(): void;
  onEvent(e: ContainerEventResponse): void;
  /** The stream ended, with why (an Unimplemented CriError where the runtime has no events). Not called after cancel. */
  onEnd(err: Error): void;
}

/**
 * CRI's GetContainerEvents, an optional capability: a runtime may lack it (containerd 1.6 answers
 * Unimplemented), and its users keep relisting then.
 */
export interface ContainerEventSource {
  watchContainerEvents(handlers: ContainerEventHandlers): { cancel(): void };
}

export function offersContainerEvents(r: object): r is ContainerEventSource {
  return typeof (r as Partial<ContainerEventSource>).watchContainerEvents === 'function';
}
