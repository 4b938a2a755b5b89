// The agent's API calls, behind a small interface so the rest of the code is testable without HTTP.
import type { CoreV1Event, V1ConfigMap, V1Lease, V1Node, V1NodeStatus, V1Pod, V1PodList, V1PodStatus, V1Secret, V1Service } from '@kubernetes/client-node';
import type { UserInfo } from '../server/auth.js';
import type { CsrObject } from './certificate-manager.js';
import { podStatusPatch, STRATEGIC_MERGE_PATCH } from '../status/patch.js';
import { loadKubeconfig, RestClient } from './rest.js';
import type { RuntimeClass } from './runtime-class.js';

export { ApiError } from './rest.js';

/** The HTTP status of a failed call (0 when there was no response). */
export function httpCode(err: unknown): number {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : 0;
}

/** One line for an API error: the server's message rather than the whole response dump. */
export function apiErrorMessage(err: unknown): string {
  // An ApiError's body is the server's Status already parsed (text only when it was not JSON).
  const e = err as { code?: number; body?: unknown; message?: string };
  const msg = (e?.body as { message?: string } | undefined)?.message;
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

const MERGE_PATCH = 'application/merge-patch+json';
export const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
const enc = encodeURIComponent;

/**
 * The node's heartbeat (its status and its Lease) gives up on a silent call sooner than other calls:
 * the kubelet's heartbeat client times out after min(nodeStatusUpdateFrequency, lease duration),
 * 10 s by default, so that a retry on a new connection renews the Lease before it expires.
 */
const HEARTBEAT_TIMEOUT_MS = 10_000;

export class KubeClient implements PodApi, EventApi, NodeApi {
  constructor(readonly rest: RestClient) {}

  static fromFile(path: string): KubeClient {
    return new KubeClient(new RestClient(loadKubeconfig(path)));
  }

  /** A GET that answers undefined for 404. */
  private async getOrUndefined<T>(path: string, timeoutMs?: number): Promise<T | undefined> {
    try {
      return await this.rest.request<T>('GET', path, { timeoutMs });
    } catch (err) {
      if (httpCode(err) === 404) return undefined;
      throw err;
    }
  }

  getNode(name: string): Promise<V1Node | undefined> {
    return this.getOrUndefined(`/api/v1/nodes/${enc(name)}`);
  }

  createNode(node: V1Node): Promise<V1Node> {
    return this.rest.request('POST', '/api/v1/nodes', { body: node });
  }

  patchNode(name: string, patch: object): Promise<V1Node> {
    return this.rest.request('PATCH', `/api/v1/nodes/${enc(name)}`, { body: patch, contentType: MERGE_PATCH });
  }

  patchNodeStatus(name: string, status: V1NodeStatus): Promise<V1Node> {
    return this.rest.request('PATCH', `/api/v1/nodes/${enc(name)}/status`, { body: { status }, contentType: MERGE_PATCH, timeoutMs: HEARTBEAT_TIMEOUT_MS });
  }

  getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    return this.getOrUndefined(`/apis/coordination.k8s.io/v1/namespaces/${enc(namespace)}/leases/${enc(name)}`, HEARTBEAT_TIMEOUT_MS);
  }

  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.rest.request('POST', `/apis/coordination.k8s.io/v1/namespaces/${enc(namespace)}/leases`, { body: lease, timeoutMs: HEARTBEAT_TIMEOUT_MS });
  }

  replaceLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.rest.request('PUT', `/apis/coordination.k8s.io/v1/namespaces/${enc(namespace)}/leases/${enc(lease.metadata!.name!)}`, { body: lease, timeoutMs: HEARTBEAT_TIMEOUT_MS });
  }

  listPods(fieldSelector: string, resourceVersion?: string): Promise<V1PodList> {
    return this.rest.request('GET', '/api/v1/pods', { query: { fieldSelector, resourceVersion } });
  }

  getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    return this.getOrUndefined(`/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`);
  }

  createPod(namespace: string, pod: V1Pod): Promise<V1Pod> {
    return this.rest.request('POST', `/api/v1/namespaces/${enc(namespace)}/pods`, { body: pod });
  }

  patchPodStatus(namespace: string, name: string, uid: string, status: V1PodStatus): Promise<V1Pod> {
    // metadata.uid in the patch is a precondition: a recreated pod of the same name is left alone.
    return this.rest.request('PATCH', `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}/status`, { body: podStatusPatch(uid, status), contentType: STRATEGIC_MERGE_PATCH });
  }

  async deletePod(namespace: string, name: string, uid: string): Promise<void> {
    await this.rest.request('DELETE', `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`, {
      query: { gracePeriodSeconds: 0 },
      body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid } },
    });
  }

  createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event> {
    return this.rest.request('POST', `/api/v1/namespaces/${enc(namespace)}/events`, { body: event });
  }

  patchEvent(namespace: string, name: string, patch: object): Promise<CoreV1Event> {
    return this.rest.request('PATCH', `/api/v1/namespaces/${enc(namespace)}/events/${enc(name)}`, { body: patch, contentType: MERGE_PATCH });
  }

  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
    return this.getOrUndefined(`/api/v1/namespaces/${enc(namespace)}/configmaps/${enc(name)}`);
  }

  getSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    return this.getOrUndefined(`/api/v1/namespaces/${enc(namespace)}/secrets/${enc(name)}`);
  }

  /** A token of the service account, bound to a pod (TokenRequest). */
  async requestToken(namespace: string, serviceAccount: string, spec: object): Promise<{ token: string; expirationTimestamp: string }> {
    const res = await this.rest.request<{ status?: { token?: string; expirationTimestamp?: string } }>('POST', `/api/v1/namespaces/${enc(namespace)}/serviceaccounts/${enc(serviceAccount)}/token`, {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec },
    });
    if (!res.status?.token) throw new Error(`TokenRequest for ${namespace}/${serviceAccount} returned no token`);
    return { token: res.status.token, expirationTimestamp: res.status.expirationTimestamp ?? '' };
  }

  /** Asks the API server who a bearer token belongs to (TokenReview). */
  async tokenReview(token: string): Promise<{ authenticated: boolean; user?: UserInfo; error?: string }> {
    const res = await this.rest.request<{ status?: { authenticated?: boolean; error?: string; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } } }>(
      'POST',
      '/apis/authentication.k8s.io/v1/tokenreviews',
      { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } },
    );
    const st = res.status ?? {};
    const u = st.user;
    return {
      authenticated: st.authenticated === true && !!u?.username,
      user: u?.username ? { name: u.username, uid: u.uid, groups: u.groups ?? [], extra: u.extra } : undefined,
      error: st.error,
    };
  }

  /** Asks the API server whether a user may do something to a node (SubjectAccessReview). */
  async subjectAccessReview(user: UserInfo, attrs: { verb: string; resource: string; subresource: string; name: string }): Promise<{ allowed: boolean; reason?: string }> {
    const res = await this.rest.request<{ status?: { allowed?: boolean; reason?: string } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: user.name,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          resourceAttributes: { verb: attrs.verb, group: '', version: 'v1', resource: attrs.resource, subresource: attrs.subresource, name: attrs.name },
        },
      },
    });
    return { allowed: res.status?.allowed === true, reason: res.status?.reason };
  }

  createCsr(body: object): Promise<CsrObject> {
    return this.rest.request('POST', CSRS, { body });
  }

  getCsr(name: string): Promise<CsrObject | undefined> {
    return this.getOrUndefined(`${CSRS}/${enc(name)}`);
  }

  listCsrs(fieldSelector: string): Promise<{ items: CsrObject[]; metadata?: { resourceVersion?: string } }> {
    return this.rest.request('GET', CSRS, { query: { fieldSelector } });
  }

  /** Writes a CSR's Approved or Denied condition (its approval subresource). */
  async updateCsrApproval(csr: CsrObject): Promise<void> {
    await this.rest.request('PUT', `${CSRS}/${enc(csr.metadata!.name!)}/approval`, { body: { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', ...csr } });
  }

  /** Events of one CSR, from `resourceVersion` on (a watch by name, as the kubelet waits for its certificate). */
  watchCsr(name: string, resourceVersion: string, onEvent: (type: string, csr: CsrObject) => void): { done: Promise<void>; abort(): void } {
    return this.rest.watch(CSRS, { fieldSelector: `metadata.name=${name}`, resourceVersion, timeoutSeconds: 300 }, (type, obj) => onEvent(type, obj as CsrObject));
  }

  listServices(namespace: string): Promise<{ items: V1Service[]; metadata?: { resourceVersion?: string } }> {
    return this.rest.request('GET', `/api/v1/namespaces/${enc(namespace)}/services`);
  }

  listRuntimeClasses(): Promise<{ items: RuntimeClass[]; metadata?: { resourceVersion?: string } }> {
    return this.rest.request('GET', '/apis/node.k8s.io/v1/runtimeclasses');
  }
}
