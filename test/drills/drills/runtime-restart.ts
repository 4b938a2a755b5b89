// Drill 2: the container runtime stopped for a while and started again (containerd: its shims and
// containers live on; the process runtime: SIGKILLed, its monitors live on). Meanwhile two
// containers die. The node must go Ready=False with the runtime's reason and come back, and the
// dead containers restart with their counts one higher.
import type { V1Pod } from '@kubernetes/client-node';
import type { Drill, DrillContext, Figures } from '../types.js';
import { nodeCondition, readPod, secondsUntil, sleep } from './common.js';

function victims(pods: V1Pod[]): Array<{ pod: V1Pod; container: string }> {
  const byKind = (k: string) => pods.filter((p) => p.metadata?.labels?.['drills.nodelet.io/kind'] === k).sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  return [
    { pod: byKind('long')[0]!, container: 'main' },
    { pod: byKind('pair')[0]!, container: 'side' },
  ];
}

async function run(ctx: DrillContext): Promise<Figures> {
  // The node goes NotReady only after the runtime has not answered for 30 s (the kubelet's maxWaitForContainerRuntime), so no shorter outage in the short run.
  const outageMs = 30_000;
  const chosen = victims(await ctx.workload.pods());
  const before = chosen.map(({ pod, container }) => {
    const cs = pod.status!.containerStatuses!.find((c) => c.name === container)!;
    return { name: pod.metadata!.name!, uid: pod.metadata!.uid!, container, restartCount: cs.restartCount, id: cs.containerID!.replace(/^[a-z-]+:\/\//, '') };
  });
  const pids = await Promise.all(before.map((b) => ctx.runtime.containerPids(b.id)));
  const f: Figures = { outageSeconds: outageMs / 1000 };

  const stoppedAt = Date.now();
  await ctx.runtime.stop();
  // Two containers die while nobody is watching.
  for (const [i, b] of before.entries()) {
    ctx.expectRestart(b.uid, b.container);
    for (const pid of pids[i]!) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  let reason = '';
  f.notReadySeconds = await secondsUntil('the Node Ready=False', stoppedAt, outageMs + 30_000, async () => {
    const c = await nodeCondition(ctx.agent.nodeName, 'Ready');
    reason = `${c?.reason}: ${c?.message}`;
    return c?.status === 'False';
  }, 500);
  if (!/^KubeletNotReady: .*container runtime is down/.test(reason)) throw new Error(`Ready=False says "${reason}", not the runtime's reason`);
  f.notReadyReason = reason.slice(0, 80);
  const left = outageMs - (Date.now() - stoppedAt);
  if (left > 0) await sleep(left);
  if (!ctx.agent.alive()) throw new Error('nodelet died while the runtime was down');

  const startedAt = Date.now();
  await ctx.runtime.start();
  f.runtimeStartSeconds = (Date.now() - startedAt) / 1000;
  f.readySeconds = await secondsUntil('the Node Ready=True', startedAt, 60_000, async () => (await nodeCondition(ctx.agent.nodeName, 'Ready'))?.status === 'True', 500);
  f.restartedSeconds = await secondsUntil('the killed containers running again', startedAt, 90_000, async () => {
    for (const b of before) {
      const p = await readPod(ctx, b.name);
      const cs = p?.status?.containerStatuses?.find((c) => c.name === b.container);
      if (!cs?.state?.running || !cs.ready) return false;
    }
    return true;
  }, 500);
  for (const b of before) {
    const cs = (await readPod(ctx, b.name))!.status!.containerStatuses!.find((c) => c.name === b.container)!;
    if (cs.restartCount !== b.restartCount + 1) throw new Error(`${b.name}/${b.container}: restartCount ${b.restartCount} -> ${cs.restartCount}, not +1`);
    const last = cs.lastState?.terminated;
    if (!last || last.exitCode !== 137) throw new Error(`${b.name}/${b.container}: lastState ${JSON.stringify(cs.lastState)}, not terminated with 137`);
  }
  return f;
}

export const drill: Drill = {
  name: 'runtime-restart',
  description: 'the container runtime stopped and started again, two containers killed meanwhile',
  runtimes: ['containerd', 'process'],
  run,
};
