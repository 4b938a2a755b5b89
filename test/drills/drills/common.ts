// What several drills do: batches of plain pods, reading them, and timing how long things take.
import type { V1Pod } from '@kubernetes/client-node';
import { clusterEnv, eventually } from '../../support/cluster.js';
import type { DrillContext } from '../types.js';
import { kubeClients } from '../workload.js';

export const kube = kubeClients();

export const LOOP = 'trap "exit 0" TERM; while true; do sleep 1; done';

export function plainPod(name: string, node: string, labels: Record<string, string> = {}): V1Pod {
  return {
    metadata: { name, labels },
    spec: { nodeName: node, terminationGracePeriodSeconds: 2, containers: [{ name: 'main', image: clusterEnv().testImage, command: ['sh', '-c', LOOP] }] },
  };
}

export async function createPods(ctx: DrillContext, prefix: string, n: number): Promise<V1Pod[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => kube.core.createNamespacedPod({ namespace: ctx.namespace, body: plainPod(`${prefix}-${i}`, ctx.agent.nodeName, { 'drills.nodelet.io/batch': prefix }) })));
}

export async function batch(ctx: DrillContext, prefix: string): Promise<V1Pod[]> {
  return (await kube.core.listNamespacedPod({ namespace: ctx.namespace, labelSelector: `drills.nodelet.io/batch=${prefix}` })).items;
}

export const isRunning = (p: V1Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length > 0 && p.status.containerStatuses!.every((c) => c.ready && c.state?.running);

export async function deleteBatch(ctx: DrillContext, prefix: string, gracePeriodSeconds = 2): Promise<void> {
  await kube.core.deleteCollectionNamespacedPod({ namespace: ctx.namespace, labelSelector: `drills.nodelet.io/batch=${prefix}`, gracePeriodSeconds });
}

/** Seconds from `since` until `probe` holds. */
export async function secondsUntil(what: string, since: number, timeoutMs: number, probe: () => Promise<boolean>, intervalMs = 250): Promise<number> {
  await eventually(what, timeoutMs, async () => ((await probe()) ? true : undefined), intervalMs);
  return (Date.now() - since) / 1000;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function readPod(ctx: DrillContext, name: string): Promise<V1Pod | undefined> {
  return kube.core.readNamespacedPod({ name, namespace: ctx.namespace }).catch(() => undefined);
}

export async function nodeCondition(node: string, type: string): Promise<{ status?: string; reason?: string; message?: string } | undefined> {
  const n = await kube.core.readNode({ name: node });
  return n.status?.conditions?.find((c) => c.type === type);
}
