// The agent's API calls, behind a small interface so the rest of the code is testable without HTTP.
import * as k8s from '@kubernetes/client-node';
import type { CoreV1Event, V1ConfigMap, V1Lease, V1Node, V1NodeStatus, V1Pod, V1PodList, V1PodStatus, V1Secret } from '@kubernetes/client-node';

export class ApiError extends Error {
  constructor(readonly code: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ApiError';
  }
}

/** The HTTP status of a client-node error (0 when there was no response). */
export function httpCode(err: unknown): number {
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return 0;
}

/** One line for an API error: the server's message rather than the whole response dump. */
export function apiErrorMessage(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  let body = e?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      /* keep the text */
    }
  }
  const msg = (body as { message?: string } | undefined)?.message;
  if (msg) return `${e.code ?? ''} ${msg}`.trim();
  return e?.message?.split('\n')[0] ?? String(err);
}

export interface PodApi {
  listPods(fieldSelector: string, resourceVersion?: string): Promise<V1PodList>;
  patchPodStatus(namespace: string, name: string, uid: string, status: V1PodStatus): Promise<V1Pod>;
  /** Deletes with grace 0 and a UID precondition, so a new pod of the same name is never hit. */
  deletePod(namespace: string, name: string, uid: string): Promise<void>;
}

export interface EventApi {
  createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event>;
  patchEvent(namespace: string, name: string, patch: object): Promise<CoreV1Event>;
}

export interface NodeApi {
  /** undefined when the node does not exist. */
  getNode(name: string): Promise<V1Node | undefined>;
  createNode(node: V1Node): Promise<V1Node>;
  patchNode(name: string, patch: object): Promise<V1Node>;
  patchNodeStatus(name: string, status: V1NodeStatus): Promise<V1Node>;
  getLease(namespace: string, name: string): Promise<V1Lease | undefined>;
  createLease(namespace: string, lease: V1Lease): Promise<V1Lease>;
  /** Replaces the lease (optimistic concurrency through its resourceVersion). */
  replaceLease(namespace: string, lease: V1Lease): Promise<V1Lease>;
}

export class KubeClient implements PodApi, EventApi, NodeApi {
  readonly core: k8s.CoreV1Api;
  readonly coordination: k8s.CoordinationV1Api;
  private readonly mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

  constructor(readonly config: k8s.KubeConfig) {
    this.core = config.makeApiClient(k8s.CoreV1Api);
    this.coordination = config.makeApiClient(k8s.CoordinationV1Api);
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    try {
      return await this.core.readNode({ name });
    } catch (err) {
      if (httpCode(err) === 404) return undefined;
      throw err;
    }
  }

  createNode(node: V1Node): Promise<V1Node> {
    return this.core.createNode({ body: node });
  }

  patchNode(name: string, patch: object): Promise<V1Node> {
    return this.core.patchNode({ name, body: patch }, this.mergePatch);
  }

  patchNodeStatus(name: string, status: V1NodeStatus): Promise<V1Node> {
    return this.core.patchNodeStatus({ name, body: { status } }, this.mergePatch);
  }

  async getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    try {
      return await this.coordination.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (httpCode(err) === 404) return undefined;
      throw err;
    }
  }

  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.coordination.createNamespacedLease({ namespace, body: lease });
  }

  replaceLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.coordination.replaceNamespacedLease({ name: lease.metadata!.name!, namespace, body: lease });
  }

  static fromFile(path: string): KubeClient {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(path);
    return new KubeClient(kc);
  }

  static inCluster(): KubeClient {
    const kc = new k8s.KubeConfig();
    kc.loadFromCluster();
    return new KubeClient(kc);
  }

  listPods(fieldSelector: string, resourceVersion?: string): Promise<V1PodList> {
    return this.core.listPodForAllNamespaces({ fieldSelector, resourceVersion });
  }

  patchPodStatus(namespace: string, name: string, uid: string, status: V1PodStatus): Promise<V1Pod> {
    // metadata.uid in the patch is a precondition: a recreated pod of the same name is left alone.
    return this.core.patchNamespacedPodStatus({ name, namespace, body: { metadata: { uid }, status } }, this.mergePatch);
  }

  async deletePod(namespace: string, name: string, uid: string): Promise<void> {
    await this.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0, body: { gracePeriodSeconds: 0, preconditions: { uid } } });
  }

  createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event> {
    return this.core.createNamespacedEvent({ namespace, body: event });
  }

  patchEvent(namespace: string, name: string, patch: object): Promise<CoreV1Event> {
    return this.core.patchNamespacedEvent({ name, namespace, body: patch }, this.mergePatch);
  }

  async getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
    try {
      return await this.core.readNamespacedConfigMap({ name, namespace });
    } catch (err) {
      if (httpCode(err) === 404) return undefined;
      throw new ApiError(httpCode(err), apiErrorMessage(err), { cause: err });
    }
  }

  async getSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ name, namespace });
    } catch (err) {
      if (httpCode(err) === 404) return undefined;
      throw new ApiError(httpCode(err), apiErrorMessage(err), { cause: err });
    }
  }
}
