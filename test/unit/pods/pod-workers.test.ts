// Pod workers: serialization per pod, coalescing, the life cycle, and requeue timing, on a fake clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { silentLogger } from '../../../src/observability/logger.js';
import { PodWorkers, type PodSyncer, type SyncOutcome, type UpdateType, type WorkTrigger } from '../../../src/pods/pod-workers.js';
import { FakeClock } from '../../../src/util/clock.js';

const pod = (uid: string, rv: string, extra: Partial<V1Pod['metadata']> = {}): V1Pod => ({
  metadata: { uid, name: `p-${uid}`, namespace: 'ns', resourceVersion: rv, ...extra },
  spec: { containers: [{ name: 'c' }] },
});

class RecordingSyncer implements PodSyncer {
  calls: string[] = [];
  gates: Array<() => void> = [];
  blocking = false;
  outcome: SyncOutcome = {};
  fail = 0;
  concurrent = 0;
  maxConcurrent = 0;

  private async gate(): Promise<void> {
    this.concurrent++;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.concurrent);
    if (this.blocking) await new Promise<void>((r) => this.gates.push(r));
    this.concurrent--;
  }

  triggers: string[] = [];

  async syncPod(p: V1Pod, type: UpdateType, trigger?: WorkTrigger): Promise<SyncOutcome> {
    this.calls.push(`sync ${p.metadata!.uid} rv=${p.metadata!.resourceVersion} ${type}`);
    this.triggers.push(trigger ?? '?');
    await this.gate();
    if (this.fail > 0) {
      this.fail--;
      throw new Error('boom');
    }
    return this.outcome;
  }

  async syncTerminatingPod(p: V1Pod, _signal: AbortSignal): Promise<void> {
    this.calls.push(`terminating ${p.metadata!.uid}`);
    await this.gate();
  }

  async syncTerminatedPod(p: V1Pod, removed: boolean): Promise<void> {
    this.calls.push(`terminated ${p.metadata!.uid} removed=${removed}`);
  }

  release(): void {
    const g = this.gates.splice(0);
    g.forEach((f) => f());
  }
}

const tick = () => new Promise((r) => setImmediate(r));
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await tick();
}

function setup(opts: Partial<ConstructorParameters<typeof PodWorkers>[0]> = {}) {
  const clock = new FakeClock();
  const syncer = new RecordingSyncer();
  const workers = new PodWorkers({ syncer, clock, logger: silentLogger(), resyncIntervalMs: 60_000, random: () => 0, ...opts });
  return { clock, syncer, workers };
}

test('updates arriving during a sync coalesce into one follow-up sync of the newest pod', async () => {
  const { syncer, workers } = setup();
  syncer.blocking = true;
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  workers.updatePod(pod('a', '2'), 'update');
  workers.updatePod(pod('a', '3'), 'update');
  workers.wake('a');
  syncer.blocking = false;
  syncer.release();
  await settle();
  assert.deepEqual(syncer.calls, ['sync a rv=1 create', 'sync a rv=3 update']);
});

test('one pod syncs serially while different pods sync in parallel, bounded by maxConcurrentSyncs', async () => {
  const { syncer, workers } = setup({ maxConcurrentSyncs: 2 });
  syncer.blocking = true;
  for (const uid of ['a', 'b', 'c']) workers.updatePod(pod(uid, '1'), 'create');
  await settle();
  assert.equal(syncer.concurrent, 2, 'two at once');
  syncer.blocking = false;
  syncer.release();
  await settle();
  assert.equal(syncer.maxConcurrent, 2);
  assert.equal(syncer.calls.length, 3);
});

test('success requeues at the resync interval; an error is retried after a flat 10 s plus jitter, as the kubelet\'s', async () => {
  for (const [random, period] of [[0, 10_000], [1, 15_000]] as const) {
    const { clock, syncer, workers } = setup({ random: () => random });
    syncer.fail = 5;
    workers.updatePod(pod('a', '1'), 'create');
    await settle();
    const at: number[] = [];
    const start = clock.now();
    for (let i = 0; i < 6; i++) {
      const n = syncer.calls.length;
      while (syncer.calls.length === n) {
        clock.step(100);
        await settle();
      }
      at.push(clock.now() - start);
    }
    // Five failures from t=0, each retried one period later (never growing); the sixth sync
    // succeeds and the next one comes a (jittered) resync interval later.
    const resync = 60_000 * (1 + random * 0.5);
    assert.deepEqual(at, [...[1, 2, 3, 4, 5].map((k) => k * period), 5 * period + resync], `jitter ${random}`);
    const n = syncer.calls.length;
    clock.step(resync - 100);
    await settle();
    assert.equal(syncer.calls.length, n, 'no sync before the resync interval after success');
    clock.step(200);
    await settle();
    assert.equal(syncer.calls.length, n + 1);
  }
});

test('a terminating pod holds no sync slot: with one slot, another pod syncs while a kill waits out its grace period', async () => {
  const { syncer, workers } = setup({ maxConcurrentSyncs: 1 });
  let endKill!: () => void;
  syncer.syncTerminatingPod = async (p) => {
    syncer.calls.push(`terminating ${p.metadata!.uid}`);
    await new Promise<void>((r) => (endKill = r));
  };
  workers.updatePod(pod('a', '1', { deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 }), 'create');
  await settle();
  workers.updatePod(pod('b', '1'), 'create');
  await settle();
  assert.deepEqual(syncer.calls, ['terminating a', 'sync b rv=1 create']);
  endKill();
  await settle();
  assert.equal(workers.isKnown('a'), false);
});

test('a shorter grace period during a kill (a force delete) cuts that kill short and kills again with it', async () => {
  const { syncer, workers } = setup();
  const graces: Array<number | undefined> = [];
  let endKill!: () => void;
  syncer.syncTerminatingPod = async (p, signal) => {
    graces.push(p.metadata!.deletionGracePeriodSeconds);
    await new Promise<void>((resolve, reject) => {
      endKill = resolve;
      signal.addEventListener('abort', () => reject(new Error('cut short')), { once: true });
    });
  };
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  workers.updatePod(pod('a', '2', { deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 }), 'update');
  await settle();
  // The same or a longer period changes nothing; a shorter one does, at once.
  workers.updatePod(pod('a', '3', { deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 }), 'update');
  await settle();
  assert.deepEqual(graces, [30]);
  workers.updatePod(pod('a', '4', { deletionTimestamp: new Date(), deletionGracePeriodSeconds: 0 }), 'update');
  await settle();
  assert.deepEqual(graces, [30, 0]);
  endKill();
  await settle();
  assert.equal(workers.isKnown('a'), false, 'terminated and forgotten after the shorter kill');
});

test('a back-off outcome requeues when the back-off ends, not at the resync interval', async () => {
  const { clock, syncer, workers } = setup();
  syncer.outcome = { requeueAfterMs: 10_000 };
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  clock.step(9_999);
  await settle();
  assert.equal(syncer.calls.length, 1);
  clock.step(1);
  await settle();
  assert.equal(syncer.calls.length, 2);
});

test('a PLEG event syncs the pod at once, cancelling the timer', async () => {
  const { clock, syncer, workers } = setup();
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  workers.wake('a');
  await settle();
  assert.deepEqual(syncer.calls, ['sync a rv=1 create', 'sync a rv=1 pleg']);
  workers.wake('unknown');
  await settle();
  assert.equal(syncer.calls.length, 2, 'no worker is made for a pod nobody asked for');
  assert.ok(clock.pendingTimers() >= 1);
});

test('deletionTimestamp: terminating, then terminated (API delete), then forgotten', async () => {
  const { syncer, workers } = setup();
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  workers.updatePod(pod('a', '2', { deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 }), 'update');
  assert.equal(workers.phaseOf('a'), 'terminating');
  assert.ok(workers.isPodTerminationRequested('a'));
  await settle();
  assert.deepEqual(syncer.calls, ['sync a rv=1 create', 'terminating a', 'terminated a removed=false']);
  assert.equal(workers.isKnown('a'), false);
  // A late update of the deleted pod is never started again: at most its (empty) runtime is stopped.
  syncer.calls = [];
  workers.updatePod(pod('a', '3', { deletionTimestamp: new Date() }), 'update');
  await settle();
  assert.deepEqual(syncer.calls, ['terminating a', 'terminated a removed=false']);
});

test('a pod removed from the API while running is stopped and forgotten without an API delete', async () => {
  const { syncer, workers } = setup();
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  workers.updatePod(pod('a', '1'), 'delete');
  await settle();
  assert.deepEqual(syncer.calls, ['sync a rv=1 create', 'terminating a', 'terminated a removed=true']);
  assert.equal(workers.isKnown('a'), false);
});

test('a pod that finished (terminal phase) is stopped once and stays idle on later updates', async () => {
  const { clock, syncer, workers } = setup();
  syncer.outcome = { terminal: true };
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  assert.deepEqual(syncer.calls, ['sync a rv=1 create', 'terminating a', 'terminated a removed=false']);
  assert.equal(workers.phaseOf('a'), 'terminated');
  workers.updatePod(pod('a', '2'), 'sync');
  clock.step(120_000);
  await settle();
  assert.equal(syncer.calls.length, 3, 'resyncs do not start a finished pod again');
  workers.updatePod(pod('a', '3', { deletionTimestamp: new Date() }), 'update');
  await settle();
  assert.deepEqual(syncer.calls.slice(3), ['terminated a removed=false']);
  assert.equal(workers.isKnown('a'), false);
  // One that finished and is then removed from its source (a static pod's file deleted): its
  // cleanup runs once more as removed (its mirror pod goes), then it is forgotten.
  workers.updatePod(pod('b', '1'), 'create');
  await settle();
  workers.updatePod(pod('b', '1'), 'delete');
  await settle();
  assert.deepEqual(syncer.calls.slice(4), ['sync b rv=1 create', 'terminating b', 'terminated b removed=false', 'terminated b removed=true']);
  assert.equal(workers.isKnown('b'), false);
});

test('a failing termination is retried with back-off until it succeeds', async () => {
  const { clock, syncer, workers } = setup();
  let failures = 2;
  const orig = syncer.syncTerminatingPod.bind(syncer);
  syncer.syncTerminatingPod = async (p, signal) => {
    await orig(p, signal);
    if (failures-- > 0) throw new Error('still running');
  };
  workers.updatePod(pod('a', '1', { deletionTimestamp: new Date() }), 'create');
  await settle();
  clock.step(9_999);
  await settle();
  assert.equal(syncer.calls.length, 1, 'not before the back-off period');
  clock.step(1);
  await settle();
  clock.step(10_000);
  await settle();
  assert.deepEqual(syncer.calls, ['terminating a', 'terminating a', 'terminating a', 'terminated a removed=false']);
});

test('stop waits for running syncs and leaves pods alone', async () => {
  const { syncer, workers } = setup();
  syncer.blocking = true;
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  const stopped = workers.stop();
  let done = false;
  void stopped.then(() => (done = true));
  await settle();
  assert.equal(done, false);
  syncer.release();
  await stopped;
  workers.updatePod(pod('b', '1'), 'create');
  await settle();
  assert.deepEqual(syncer.calls, ['sync a rv=1 create']);
});

test('a resync of the pod source does not cut short a pod\'s own (jittered) resync: no node-wide burst', async () => {
  const { clock, syncer, workers } = setup({ random: () => 0.5 });
  workers.updatePod(pod('a', '1'), 'create');
  workers.updatePod(pod('b', '1'), 'create');
  await settle();
  syncer.calls = [];
  // The informer's periodic resync hands every pod over again: nothing new, nothing synced.
  workers.updatePod(pod('a', '1'), 'sync');
  workers.updatePod(pod('b', '1'), 'sync');
  await settle();
  assert.deepEqual(syncer.calls, []);
  // Each pod syncs on its own timer (60 s + jitter), as the kubelet's do.
  clock.step(90_000);
  await settle();
  assert.deepEqual(syncer.calls.sort(), ['sync a rv=1 sync', 'sync b rv=1 sync']);
  // A real update still syncs at once.
  syncer.calls = [];
  workers.updatePod(pod('a', '2'), 'update');
  await settle();
  assert.deepEqual(syncer.calls, ['sync a rv=2 update']);
});

test('each sync says what woke it, and the worker\'s state says what it waits for and when', async () => {
  const { clock, syncer, workers } = setup();
  const until = async (n: number) => {
    while (syncer.triggers.length < n) {
      clock.step(100);
      await settle();
    }
  };
  syncer.outcome = { requeueAfterMs: 5_000 }; // a back-off that ends in 5 s
  workers.updatePod(pod('a', '1'), 'create');
  await settle();
  assert.deepEqual(workers.state('a'), { phase: 'syncing', busy: false, next: { trigger: 'back-off', at: clock.now() + 5_000 } });
  syncer.outcome = {};
  await until(2);
  assert.deepEqual(workers.state('a')?.next?.trigger, 'resync');
  workers.wake('a');
  await settle();
  syncer.fail = 1;
  workers.updatePod(pod('a', '2'), 'update');
  await settle();
  assert.equal(workers.state('a')?.next?.trigger, 'retry');
  await until(5);
  assert.deepEqual(syncer.triggers, ['watch', 'back-off', 'pleg', 'watch', 'retry']);
  syncer.blocking = true;
  workers.wake('a');
  await settle();
  assert.equal(workers.state('a')?.busy, true);
  syncer.blocking = false;
  syncer.release();
  await settle();
  assert.equal(workers.state('nobody'), undefined);
});

test('static pods of one name run one at a time: an edited manifest\'s pod starts once the old one has terminated', async () => {
  const { syncer, workers } = setup();
  const staticPod = (uid: string) => ({ ...pod(uid, '1', { name: 'web', annotations: { 'kubernetes.io/config.source': 'file' } }) });
  workers.updatePod(staticPod('old'), 'create');
  await settle();
  // The manifest is edited: a new pod of that name arrives, and the old one is removed.
  syncer.blocking = true;
  workers.updatePod(staticPod('new'), 'create');
  workers.updatePod(staticPod('old'), 'delete');
  await settle();
  assert.deepEqual(syncer.calls, ['sync old rv=1 create', 'terminating old'], 'the new pod waits while the old one terminates');
  syncer.blocking = false;
  syncer.release();
  await settle();
  assert.deepEqual(syncer.calls.slice(2), ['terminated old removed=true', 'sync new rv=1 sync']);
  // Pods of other names, or not static, never wait.
  syncer.calls = [];
  workers.updatePod(pod('other', '1', { name: 'web' }), 'create');
  await settle();
  assert.deepEqual(syncer.calls, ['sync other rv=1 create']);
});

test('a pod added again (same UID) while it terminates finishes terminating, then starts afresh, its runtime kept', async () => {
  const { syncer, workers } = setup();
  workers.updatePod(pod('s', '1'), 'create');
  await settle();
  syncer.blocking = true;
  workers.updatePod(pod('s', '1'), 'delete');
  await settle();
  workers.updatePod(pod('s', '1'), 'create');
  await settle();
  assert.deepEqual(syncer.calls, ['sync s rv=1 create', 'terminating s'], 'the kill in progress goes on');
  syncer.blocking = false;
  syncer.release();
  await settle();
  assert.deepEqual(syncer.calls.slice(2), ['terminated s removed=false', 'sync s rv=1 create']);
  assert.equal(workers.phaseOf('s'), 'syncing');
});
