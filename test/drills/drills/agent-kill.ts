// Drill 1: nodelet SIGKILLed in the middle of syncs, while a batch of pods is being created and
// again while it is being deleted; started again on the same state, it must finish both jobs
// without duplicating or losing anything (the runner's invariants).
import type { Drill, DrillContext, Figures } from '../types.js';
import { batch, createPods, deleteBatch, isRunning, secondsUntil, sleep } from './common.js';

/** Waits until `progress` reports at least `from` but fewer than `all` done (or `maxMs` passed): the middle of the work. */
async function midway(progress: () => Promise<number>, from: number, all: number, maxMs: number): Promise<number> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const done = await progress();
    if ((done >= from && done < all) || done >= all || Date.now() > deadline) return done;
    await sleep(50);
  }
}

async function run(ctx: DrillContext): Promise<Figures> {
  const n = ctx.reduced ? 6 : 20;
  const prefix = 'kill';
  const f: Figures = { pods: n };

  // While the pods are being created.
  const createdAt = Date.now();
  await createPods(ctx, prefix, n);
  f.runningAtKillOnCreate = await midway(async () => (await batch(ctx, prefix)).filter(isRunning).length, 1, n, 15_000);
  await ctx.agent.kill();
  const restartedAt = Date.now();
  await ctx.agent.start();
  f.agentStartSeconds = (Date.now() - restartedAt) / 1000;
  f.createRecoverySeconds = await secondsUntil(`all ${n} pods Running after the restart`, restartedAt, 120_000, async () => (await batch(ctx, prefix)).filter(isRunning).length === n);
  f.createTotalSeconds = (Date.now() - createdAt) / 1000;
  // A pod counts a restart only where the crash left a container created and never started: the
  // kubelet too starts a new one then, one attempt higher (ShouldContainerBeRestarted). Any other
  // restart is a container the new agent killed or lost.
  const restarted = (await batch(ctx, prefix)).filter((p) => p.status!.containerStatuses![0]!.restartCount !== 0);
  for (const p of restarted) {
    const mine = await ctx.cri.listContainers({ label_selector: { 'io.kubernetes.pod.uid': p.metadata!.uid! } });
    const current = p.status!.containerStatuses![0]!.containerID!.replace(/^[a-z-]+:\/\//, '');
    for (const c of mine.filter((x) => x.id !== current)) {
      const st = (await ctx.cri.containerStatus(c.id)).status;
      if (Number(st?.started_at ?? 0) !== 0) throw new Error(`${p.metadata!.name}: restarted after the agent's crash, though its earlier container ${c.id.slice(0, 12)} had started (${st?.state})`);
    }
  }
  f.recreatedNeverStarted = restarted.length;

  // While they are being deleted.
  await deleteBatch(ctx, prefix);
  f.goneAtKillOnDelete = await midway(async () => n - (await batch(ctx, prefix)).length, 1, n, 15_000);
  await ctx.agent.kill();
  const again = Date.now();
  await ctx.agent.start();
  f.deleteRecoverySeconds = await secondsUntil(`all ${n} pods gone after the restart`, again, 120_000, async () => (await batch(ctx, prefix)).length === 0);
  return f;
}

export const drill: Drill = {
  name: 'agent-kill',
  description: 'nodelet SIGKILLed while a batch of pods is created, and while it is deleted; started again',
  runtimes: ['containerd', 'process'],
  run,
};
