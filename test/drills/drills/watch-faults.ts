// Drill 4: the pod watch goes silent (every connection to the API server held open with nothing
// sent), and later its resourceVersion is compacted away (410 Gone). Changes made meanwhile must
// reach the agent: a pod created is started, a pod deleted is stopped and removed.
import { compactEtcd, startComponents, stopComponent } from '../cluster-control.js';
import type { Drill, DrillContext, Figures } from '../types.js';
import { isRunning, kube, nodeCondition, plainPod, readPod, secondsUntil } from './common.js';

/** nodelet's watch stall timeout: a bookmark comes at least every minute. */
const STALL_MS = 70_000;

async function runningPod(ctx: DrillContext, name: string): Promise<void> {
  await kube.core.createNamespacedPod({ namespace: ctx.namespace, body: plainPod(name, ctx.agent.nodeName) });
  await secondsUntil(`${name} Running`, Date.now(), 60_000, async () => Boolean(isRunning((await readPod(ctx, name)) ?? {})));
}

/** A pod created and one deleted now; seconds until the agent has acted on both. */
async function changesSeen(ctx: DrillContext, fresh: string, old: string, timeoutMs: number): Promise<number> {
  const at = Date.now();
  await kube.core.createNamespacedPod({ namespace: ctx.namespace, body: plainPod(fresh, ctx.agent.nodeName) });
  await kube.core.deleteNamespacedPod({ name: old, namespace: ctx.namespace, gracePeriodSeconds: 1 });
  return secondsUntil(`${fresh} Running and ${old} gone`, at, timeoutMs, async () => {
    const [p, o] = await Promise.all([readPod(ctx, fresh), readPod(ctx, old)]);
    return Boolean(p && isRunning(p)) && !o;
  }, 500);
}

async function cleanup(ctx: DrillContext, names: string[]): Promise<void> {
  for (const name of names) await kube.core.deleteNamespacedPod({ name, namespace: ctx.namespace, gracePeriodSeconds: 1 }).catch(() => undefined);
  await secondsUntil('the watch drill\'s pods gone', Date.now(), 60_000, async () => (await Promise.all(names.map((n) => readPod(ctx, n)))).every((p) => !p));
}

async function run(ctx: DrillContext): Promise<Figures> {
  const f: Figures = {};
  const stallsBefore = ctx.agent.lines.filter((l) => l.message === 'pod watch stalled, restarting it').length;

  // A silent watch.
  await runningPod(ctx, 'stall-old');
  f.frozenConnections = ctx.apiProxy.freeze();
  f.stallChangesSeenSeconds = await changesSeen(ctx, 'stall-new', 'stall-old', STALL_MS + 60_000);
  f.stallDetected = ctx.agent.lines.filter((l) => l.message === 'pod watch stalled, restarting it').length > stallsBefore;
  // The heartbeat went on meanwhile: calls stuck on silent connections were given up and made again
  // on new ones, so the Lease is fresh and the Node never went Unknown.
  const lease = await kube.coordination.readNamespacedLease({ name: ctx.agent.nodeName, namespace: 'kube-node-lease' });
  f.leaseAgeAtStallEndSeconds = (Date.now() - new Date(lease.spec!.renewTime as unknown as string).getTime()) / 1000;
  const ready = await nodeCondition(ctx.agent.nodeName, 'Ready');
  if (ready?.status !== 'True') throw new Error(`the Node went ${ready?.status} (${ready?.reason}) while its connections were silent`);
  if (f.leaseAgeAtStallEndSeconds > 25) throw new Error(`the Lease was last renewed ${f.leaseAgeAtStallEndSeconds} s ago, while its connections were silent`);
  ctx.apiProxy.dropFrozen();

  // 410 Gone: the watch is silenced, changes are made, etcd is compacted past the agent's
  // resourceVersion and the API server restarted (its watch cache starts after it); then the old
  // connections drop and the agent's watch resumes from a resourceVersion that no longer exists.
  await runningPod(ctx, 'gone-old');
  const relistsBefore = ctx.agent.lines.filter((l) => l.message === 'watch resourceVersion expired, relisting').length;
  ctx.apiProxy.freeze();
  const at = Date.now();
  await kube.core.createNamespacedPod({ namespace: ctx.namespace, body: plainPod('gone-new', ctx.agent.nodeName) });
  await kube.core.deleteNamespacedPod({ name: 'gone-old', namespace: ctx.namespace, gracePeriodSeconds: 1 });
  f.compactedRevision = await compactEtcd();
  await stopComponent('kube-apiserver');
  startComponents();
  ctx.apiProxy.dropFrozen();
  f.goneChangesSeenSeconds = await secondsUntil('gone-new Running and gone-old gone', at, STALL_MS + 60_000, async () => {
    const [p, o] = await Promise.all([readPod(ctx, 'gone-new'), readPod(ctx, 'gone-old')]);
    return Boolean(p && isRunning(p)) && !o;
  }, 500);
  f.relistedOnGone = ctx.agent.lines.filter((l) => l.message === 'watch resourceVersion expired, relisting').length > relistsBefore;
  if (!f.relistedOnGone) throw new Error('the agent never saw 410 Gone: the drill did not make the fault it meant to');
  await cleanup(ctx, ['stall-new', 'gone-new']);
  return f;
}

export const drill: Drill = {
  name: 'watch-faults',
  description: 'the pod watch silenced (connections held open, nothing sent), then its resourceVersion compacted away (410 Gone)',
  runtimes: ['containerd', 'process'],
  run,
};
