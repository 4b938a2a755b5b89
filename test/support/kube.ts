// API helpers for integration tests: pods bound to a test node, their events, and waiting on them.
import * as k8s from '@kubernetes/client-node';
import type { CoreV1Event, V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { clusterEnv, eventually } from './cluster.js';

// Made at first use, not at import: a test file may pick its cluster first (useClusterEnv).
let kcMade: k8s.KubeConfig | undefined;
function kc(): k8s.KubeConfig {
  if (!kcMade) {
    kcMade = new k8s.KubeConfig();
    kcMade.loadFromFile(clusterEnv().kubeconfig);
  }
  return kcMade;
}

/** An API client made on its first call. */
function client<T extends k8s.ApiType>(api: k8s.ApiConstructor<T>): T {
  let made: T | undefined;
  return new Proxy({} as T, {
    get(_, key) {
      made ??= kc().makeApiClient(api);
      const v = (made as Record<string | symbol, unknown>)[key];
      return typeof v === 'function' ? v.bind(made) : v;
    },
  });
}

export const core = client(k8s.CoreV1Api);
export const nodeV1 = client(k8s.NodeV1Api);
export const NS = 'default';

export function container(name: string, script: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: clusterEnv().testImage, command: ['sh', '-c', script], ...extra };
}

export async function createPod(node: string, name: string, spec: Omit<V1PodSpec, 'nodeName'>, labels: Record<string, string> = {}): Promise<V1Pod> {
  return core.createNamespacedPod({
    namespace: NS,
    body: { metadata: { name: `${name}-${randomBytes(3).toString('hex')}`, labels }, spec: { terminationGracePeriodSeconds: 5, ...spec, nodeName: node } },
  });
}

export function getPod(pod: V1Pod): Promise<V1Pod> {
  return core.readNamespacedPod({ name: pod.metadata!.name!, namespace: NS });
}

/** Polls the pod until `check` returns something other than undefined. */
export function waitPod<T>(pod: V1Pod, what: string, timeoutMs: number, check: (p: V1Pod) => T | undefined): Promise<T> {
  return eventually(`${pod.metadata!.name}: ${what}`, timeoutMs, async () => check(await getPod(pod)), 200);
}

export async function podGone(pod: V1Pod, timeoutMs: number): Promise<void> {
  await eventually(`${pod.metadata!.name} to disappear from the API`, timeoutMs, async () => {
    try {
      await getPod(pod);
      return undefined;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return true;
      throw err;
    }
  });
}

/**
 * Watches one pod until the API server deletes it and resolves with the object of the DELETED
 * event: the last status the node wrote (exit codes, finish times), which outlives the
 * containers themselves, removed from the runtime as soon as a deleted pod's worker is done.
 */
export async function watchDeletion(pod: V1Pod, timeoutMs: number): Promise<{ deleted: Promise<V1Pod> }> {
  let settle!: (p: V1Pod) => void;
  let fail!: (e: Error) => void;
  const deleted = new Promise<V1Pod>((resolve, reject) => ((settle = resolve), (fail = reject)));
  const abort = await new k8s.Watch(kc()).watch(
    `/api/v1/namespaces/${NS}/pods`,
    { fieldSelector: `metadata.name=${pod.metadata!.name}` },
    (type: string, obj: V1Pod) => {
      if (type === 'DELETED' && obj.metadata?.uid === pod.metadata!.uid) settle(obj);
    },
    (err) => (err ? fail(err as Error) : undefined),
  );
  const timer = setTimeout(() => fail(new Error(`${pod.metadata!.name} not deleted within ${timeoutMs} ms`)), timeoutMs);
  // Wrapped: an async function returning the promise itself would wait for the deletion.
  return {
    deleted: deleted.finally(() => {
      clearTimeout(timer);
      abort.abort();
    }),
  };
}

export async function podEvents(pod: V1Pod): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace: NS, fieldSelector: `involvedObject.uid=${pod.metadata!.uid}` });
  return list.items;
}

export async function deletePod(pod: V1Pod, gracePeriodSeconds?: number): Promise<void> {
  await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: NS, gracePeriodSeconds }).catch(() => undefined);
}

/** Deletes every pod bound to the node outright (grace 0), for test cleanup. */
export async function deleteNodePods(node: string): Promise<void> {
  const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
  await Promise.all(list.items.map((p) => core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: p.metadata!.namespace!, gracePeriodSeconds: 0 }).catch(() => undefined)));
}

export const running = (p: V1Pod) => (p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready) ? p : undefined);
