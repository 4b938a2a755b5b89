import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { groupByPriority, podShutdownGracePeriod, shutdownGroups } from '../../../src/nodeshutdown/groups.js';
import { NodeShutdownManager } from '../../../src/nodeshutdown/shutdown-manager.js';
import { FakeClock } from '../../../src/util/clock.js';

const pod = (uid: string, priority?: number, grace?: number): V1Pod => ({ metadata: { uid, name: uid, namespace: 'n' }, spec: { priority, terminationGracePeriodSeconds: grace, containers: [] } }) as V1Pod;

test('groups: shutdownGracePeriod less the critical pods\' share for the rest, that share for critical ones; none when off', () => {
  assert.deepEqual(shutdownGroups(30_000, 10_000), [
    { priority: 0, gracePeriodSeconds: 20 },
    { priority: 2_000_000_000, gracePeriodSeconds: 10 },
  ]);
  assert.deepEqual(shutdownGroups(0, 0), []);
  const groups = groupByPriority(shutdownGroups(30_000, 10_000), [pod('a'), pod('low', -5), pod('high', 1_000_000), pod('crit', 2_000_000_000), pod('above', 2_000_001_000)]);
  assert.deepEqual(
    groups.map((g) => g.pods.map((p) => p.metadata!.uid)),
    [['a', 'low', 'high'], ['crit', 'above']],
  );
  assert.equal(podShutdownGracePeriod(groups[0]!, pod('quick', 0, 5)), 5, 'its own when shorter');
  assert.equal(podShutdownGracePeriod(groups[0]!, pod('slow', 0, 60)), 20);
});

test('the manager ends the regular pods first, then the critical ones, each group waited for up to its period', async () => {
  const clock = new FakeClock(0);
  const terminated = new Set<string>();
  const woken: Array<[string, number]> = [];
  const events: string[] = [];
  let synced = 0;
  const pods = [pod('web', 0, 30), pod('crit', 2_000_000_000, 30)];
  const m = new NodeShutdownManager({
    groups: shutdownGroups(20_000, 5_000),
    clock,
    logger: { info: () => undefined, warn: () => undefined } as never,
    activePods: () => pods.filter((p) => !terminated.has(p.metadata!.uid!)),
    wake: (uid) => woken.push([uid, clock.now()]),
    isTerminated: (uid) => terminated.has(uid),
    nodeEvent: (type, reason, message) => events.push(`${type} ${reason} ${message}`),
    syncNodeStatus: async () => void synced++,
  });
  assert.ok(m.enabled);
  assert.ok(!m.isShuttingDown());
  const done = m.shutdown();
  assert.ok(m.isShuttingDown());
  assert.deepEqual(events, ['Normal NodeShutdown Shutdown manager detected shutdown event']);
  assert.equal(synced, 1, 'Ready False written at once');
  assert.deepEqual(woken, [['web', 0]]);
  assert.deepEqual(m.of('web'), { reason: 'Terminated', message: 'Pod was terminated in response to imminent node shutdown.', disruptionTarget: 'Pod was terminated in response to imminent node shutdown.' });
  assert.equal(m.gracePeriodOverride('web'), 15);
  assert.equal(m.of('crit'), undefined, 'not yet');
  // web ends after 3 s: the critical group starts then, not at 15 s.
  for (let t = 0; t < 3000; t += 200) {
    await new Promise((r) => setImmediate(r));
    clock.step(200);
  }
  terminated.add('web');
  for (let i = 0; i < 5 && woken.length < 2; i++) {
    await new Promise((r) => setImmediate(r));
    clock.step(200);
  }
  assert.equal(woken[1]?.[0], 'crit');
  assert.ok(woken[1]![1] >= 3000 && woken[1]![1] < 4000, `crit woken at ${woken[1]![1]}`);
  assert.equal(m.gracePeriodOverride('crit'), 5);
  // crit never ends: its group's 5 s run out, and the shutdown is over.
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setImmediate(r));
    clock.step(200);
  }
  await done;
});
