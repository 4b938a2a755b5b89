// Drill 3: kube-apiserver stopped for a minute (a container dies meanwhile), then etcd restarted.
// No pod may be killed for want of an API server; once it is back, the statuses and the events of
// what happened meanwhile reach it, and a pod created after etcd's restart still runs.
import type { CoreV1Event } from '@kubernetes/client-node';
import { startComponents, stopComponent } from '../cluster-control.js';
import type { Drill, DrillContext, Figures } from '../types.js';
import { isRunning, kube, plainPod, readPod, secondsUntil, sleep } from './common.js';

const eventTime = (e: CoreV1Event) => new Date((e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? 0) as string | Date).getTime();

async function run(ctx: DrillContext): Promise<Figures> {
  const outageMs = ctx.reduced ? 20_000 : 60_000;
  const pods = await ctx.workload.pods();
  const victim = pods.filter((p) => p.metadata?.labels?.['drills.nodelet.io/kind'] === 'long').sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!)).at(-1)!;
  const cs = victim.status!.containerStatuses![0]!;
  const pids = await ctx.runtime.containerPids(cs.containerID!.replace(/^[a-z-]+:\/\//, ''));
  const f: Figures = { outageSeconds: outageMs / 1000 };

  const stoppedAt = Date.now();
  await stopComponent('kube-apiserver');
  await sleep(Math.min(5000, outageMs / 4));
  // A container dies while the API server is away: its restart and events must reach it later.
  ctx.expectRestart(victim.metadata!.uid!, cs.name);
  const killedAt = Date.now();
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  const left = outageMs - (Date.now() - stoppedAt);
  if (left > 0) await sleep(left);
  if (!ctx.agent.alive()) throw new Error('nodelet died while the API server was down');
  const downAt = Date.now();
  startComponents();
  f.apiserverStartSeconds = (Date.now() - downAt) / 1000;
  const backAt = Date.now();
  f.statusCaughtUpSeconds = await secondsUntil(`${victim.metadata!.name}'s restart in the API`, backAt, 90_000, async () => {
    const s = (await readPod(ctx, victim.metadata!.name!))?.status?.containerStatuses?.[0];
    return Boolean(s && s.restartCount === cs.restartCount + 1 && s.state?.running);
  }, 500);
  // The events of the restart were recorded while the API server was away: they arrive now.
  f.eventsCaughtUpSeconds = await secondsUntil('the restart\'s events in the API', backAt, 90_000, async () => {
    const events = (await kube.core.listNamespacedEvent({ namespace: ctx.namespace, fieldSelector: `involvedObject.uid=${victim.metadata!.uid}` })).items;
    return events.some((e) => e.reason === 'Started' && eventTime(e) >= killedAt - 1000);
  }, 500);

  // etcd restarted under the API server: the agent's watch must carry on (or be re-made).
  const etcdAt = Date.now();
  await stopComponent('etcd');
  await sleep(ctx.reduced ? 3000 : 10_000);
  startComponents();
  f.etcdOutageSeconds = (Date.now() - etcdAt) / 1000;
  const createdAt = Date.now();
  await kube.core.createNamespacedPod({ namespace: ctx.namespace, body: plainPod('after-etcd', ctx.agent.nodeName) });
  f.podAfterEtcdSeconds = await secondsUntil('a pod created after etcd\'s restart Running', createdAt, 90_000, async () => {
    const p = await readPod(ctx, 'after-etcd');
    return Boolean(p && isRunning(p));
  }, 500);
  await kube.core.deleteNamespacedPod({ name: 'after-etcd', namespace: ctx.namespace, gracePeriodSeconds: 1 });
  await secondsUntil('after-etcd gone', Date.now(), 60_000, async () => !(await readPod(ctx, 'after-etcd')));
  return f;
}

export const drill: Drill = {
  name: 'apiserver-down',
  description: 'kube-apiserver stopped for a minute while a container dies, then etcd restarted',
  runtimes: ['containerd', 'process'],
  run,
};
