// The process runtime as a CRI v1 gRPC server on a unix socket, so that nodelet (through the same
// CriClient it uses for containerd), crictl and critest all talk to it the same way.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeadlineExceededError, FailedPreconditionError, InvalidArgumentError, NotFoundError } from './errors.js';
import type { ProcessRuntime } from './runtime.js';
import { ProcessStreams } from './streams.js';

const protoPath = fileURLToPath(new URL('../../../proto/api.proto', import.meta.url));

function toStatus(err: unknown): grpc.ServiceError {
  const e = err as Error;
  const code =
    err instanceof NotFoundError
      ? grpc.status.NOT_FOUND
      : err instanceof InvalidArgumentError
        ? grpc.status.INVALID_ARGUMENT
        : err instanceof FailedPreconditionError
          ? grpc.status.FAILED_PRECONDITION
          : err instanceof DeadlineExceededError
            ? grpc.status.DEADLINE_EXCEEDED
            : grpc.status.UNKNOWN;
  return Object.assign(new Error(e.message), { code, details: e.message, metadata: new grpc.Metadata() });
}

type Handler = (req: any) => Promise<object>;

function unary(fn: Handler): grpc.handleUnaryCall<any, any> {
  return (call, callback) => {
    fn(call.request).then(
      (res) => callback(null, res),
      (err) => callback(toStatus(err)),
    );
  };
}

/**
 * CRI GetContainerEvents: every change from now on, until the client goes. The headers go out at
 * once, so that a client knows the stream is open (and relists to cover what came before).
 */
function streamContainerEvents(r: ProcessRuntime, call: grpc.ServerWritableStream<unknown, unknown>, open: Set<grpc.ServerWritableStream<unknown, unknown>>): void {
  const unsubscribe = r.events.subscribe((e) => call.write(e));
  open.add(call);
  const end = () => {
    unsubscribe();
    open.delete(call);
  };
  call.on('cancelled', end);
  call.on('close', end);
  call.on('error', end);
  call.sendMetadata(new grpc.Metadata());
}

export class ProcessRuntimeServer {
  private readonly streams: ProcessStreams;
  /** Open GetContainerEvents streams: ended by close(), which would otherwise wait for them forever. */
  private readonly eventStreams = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': 16 * 1024 * 1024, 'grpc.max_send_message_length': 16 * 1024 * 1024 });

  constructor(private readonly runtime: ProcessRuntime) {
    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(protoPath, { keepCase: true, enums: String, longs: String, defaults: true, oneofs: true })) as any;
    const r = runtime;
    const streams = (this.streams = new ProcessStreams(runtime));
    const rt: Record<string, Handler> = {
      Version: async () => r.version(),
      Status: async (q) => r.status(q.verbose),
      RunPodSandbox: async (q) => ({ pod_sandbox_id: await r.runPodSandbox(q.config, q.runtime_handler) }),
      StopPodSandbox: async (q) => (await r.stopPodSandbox(q.pod_sandbox_id), {}),
      RemovePodSandbox: async (q) => (await r.removePodSandbox(q.pod_sandbox_id), {}),
      PodSandboxStatus: async (q) => r.podSandboxStatus(q.pod_sandbox_id, q.verbose === true),
      ListPodSandbox: async (q) => ({ items: await r.listPodSandbox(q.filter ?? undefined) }),
      CreateContainer: async (q) => ({ container_id: await r.createContainer(q.pod_sandbox_id, q.config, q.sandbox_config) }),
      StartContainer: async (q) => (await r.startContainer(q.container_id), {}),
      StopContainer: async (q) => (await r.stopContainer(q.container_id, Number(q.timeout)), {}),
      RemoveContainer: async (q) => (await r.removeContainer(q.container_id), {}),
      ListContainers: async (q) => ({ containers: await r.listContainers(q.filter ?? undefined) }),
      ContainerStatus: async (q) => r.containerStatus(q.container_id, q.verbose === true),
      UpdateContainerResources: async (q) => (await r.updateContainerResources(q.container_id, q.linux ?? {}), {}),
      ReopenContainerLog: async (q) => (await r.reopenContainerLog(q.container_id), {}),
      ExecSync: async (q) => r.execSync(q.container_id, q.cmd, Number(q.timeout)),
      Exec: async (q) => streams.exec(q),
      Attach: async (q) => streams.attach(q),
      PortForward: async (q) => streams.portForward(q),
      ContainerStats: async (q) => ({ stats: await r.containerStats(q.container_id) }),
      ListContainerStats: async (q) => ({ stats: await r.listContainerStats(q.filter ?? undefined) }),
      PodSandboxStats: async (q) => ({ stats: await r.podSandboxStats(q.pod_sandbox_id) }),
      ListPodSandboxStats: async (q) => ({ stats: await r.listPodSandboxStats(q.filter ?? undefined) }),
      // cgroups are written directly (cgroupfs), never through systemd.
      RuntimeConfig: async () => ({ linux: { cgroup_driver: 'CGROUPFS' } }),
    };
    const img: Record<string, Handler> = {
      ListImages: async () => ({ images: await r.listImages() }),
      ImageStatus: async (q) => r.imageStatus(q.image ?? {}),
      PullImage: async (q) => ({ image_ref: await r.pullImage(q.image ?? {}, q.auth ?? undefined) }),
      RemoveImage: async (q) => (await r.removeImage(q.image ?? {}), {}),
      ImageFsInfo: async () => r.imageFsInfo(),
    };
    this.server.addService(pkg.runtime.v1.RuntimeService.service, {
      ...Object.fromEntries(Object.entries(rt).map(([k, f]) => [k, unary(f)])),
      GetContainerEvents: (call: grpc.ServerWritableStream<unknown, unknown>) => streamContainerEvents(r, call, this.eventStreams),
    });
    this.server.addService(pkg.runtime.v1.ImageService.service, Object.fromEntries(Object.entries(img).map(([k, f]) => [k, unary(f)])));
  }

  async listen(socketPath: string): Promise<void> {
    await this.streams.start();
    mkdirSync(dirname(socketPath), { recursive: true });
    // A socket left by a runtime that died is in the way: nobody listens on it.
    if (existsSync(socketPath)) rmSync(socketPath);
    await new Promise<void>((resolve, reject) =>
      this.server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
  }

  async close(): Promise<void> {
    for (const call of [...this.eventStreams]) call.end();
    this.eventStreams.clear();
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    await this.streams.close();
    this.runtime.stop();
  }
}
