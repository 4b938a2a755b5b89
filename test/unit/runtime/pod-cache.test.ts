// The pod cache: a status is served only while nothing the agent could know of has changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PodCache } from '../../../src/runtime/pod-cache.js';
import type { PodStatus } from '../../../src/runtime/types.js';

const status = (at: number): PodStatus => ({ uid: 'u1', name: 'p', namespace: 'ns', ips: [], sandboxStatuses: [], containerStatuses: [], timestamp: at });

function cache(over: { maxAgeMs?: number } = {}) {
  const clock = { now: 1000, watching: true };
  const c = new PodCache({ now: () => clock.now, maxAgeMs: over.maxAgeMs ?? 60_000, watching: () => clock.watching });
  return { c, clock };
}

test('a status read and kept is served to the next sync; a change drops it', () => {
  const { c } = cache();
  assert.equal(c.get('u1'), undefined, 'nothing before the first read');
  const v = c.beginRead('u1');
  const s = status(1000);
  c.set('u1', s, v);
  assert.equal(c.get('u1'), s);
  c.changed('u1');
  assert.equal(c.get('u1'), undefined, 'a PLEG event for the pod: read it again');
  assert.equal(c.get('u2'), undefined);
});

test('a read begun before a change is not kept', () => {
  const { c } = cache();
  const v = c.beginRead('u1');
  c.changed('u1'); // the event arrives while the sync that read the pod is still running
  c.set('u1', status(1000), v);
  assert.equal(c.get('u1'), undefined);
  // The next read, begun after the change, is kept.
  const v2 = c.beginRead('u1');
  c.set('u1', status(1100), v2);
  assert.equal(c.get('u1')?.timestamp, 1100);
});

test('nothing is served past the maximum age, nor while changes are not being watched', () => {
  const { c, clock } = cache({ maxAgeMs: 60_000 });
  c.set('u1', status(1000), c.beginRead('u1'));
  clock.now = 61_000;
  assert.ok(c.get('u1'), 'exactly the maximum age: still served');
  clock.now = 61_001;
  assert.equal(c.get('u1'), undefined, 'older: read again');
  clock.now = 2000;
  clock.watching = false;
  assert.equal(c.get('u1'), undefined, 'the PLEG is unhealthy: changes may be unseen');
});

test('a forgotten pod keeps nothing, and a read finishing after it is not kept', () => {
  const { c } = cache();
  const v = c.beginRead('u1');
  c.forget('u1');
  c.set('u1', status(1000), v);
  assert.equal(c.get('u1'), undefined);
  assert.equal(c.size, 0);
});
