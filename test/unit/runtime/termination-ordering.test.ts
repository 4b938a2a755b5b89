// The stop order of a pod with sidecars: app containers at once, each sidecar once the app
// containers and the sidecars after it have stopped, or when its grace period runs out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { TerminationOrdering } from '../../../src/runtime/termination-ordering.js';
import { FakeClock } from '../../../src/util/clock.js';

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

const pod: V1Pod = {
  spec: {
    initContainers: [{ name: 's1', restartPolicy: 'Always' }, { name: 'init' }, { name: 's2', restartPolicy: 'Always' }],
    containers: [{ name: 'a' }, { name: 'b' }],
  },
};

test('sidecars wait for the app containers, then for the later sidecars', async () => {
  const clock = new FakeClock();
  const o = new TerminationOrdering(pod, ['a', 'b', 's1', 's2']);
  const turns: string[] = [];
  for (const n of ['a', 's1', 's2']) void o.waitForTurn(n, 30, clock).then(() => turns.push(n));
  await flush();
  assert.deepEqual(turns, ['a'], 'an app container goes at once');
  o.containerTerminated('a');
  await flush();
  assert.deepEqual(turns, ['a'], 'b still runs');
  o.containerTerminated('b');
  await flush();
  assert.deepEqual(turns, ['a', 's2'], 'the last sidecar goes first');
  o.containerTerminated('s2');
  await flush();
  assert.deepEqual(turns, ['a', 's2', 's1']);
});

test('containers that do not run are not waited for; a grace period that runs out ends the wait', async () => {
  const clock = new FakeClock();
  const o = new TerminationOrdering(pod, ['a', 's1']);
  let waited = -1;
  void o.waitForTurn('s1', 5, clock).then((s) => (waited = s));
  await flush();
  assert.equal(waited, -1, 'a runs');
  clock.step(5000);
  await flush();
  assert.equal(waited, 5, 'out of time: its turn anyway');
  const alone = new TerminationOrdering(pod, ['s2']);
  assert.equal(await alone.waitForTurn('s2', 5, clock), 0, 'nothing it waits for runs');
});
