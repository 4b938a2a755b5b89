import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff, CRASH_LOOP_INITIAL_MS, CRASH_LOOP_MAX_MS, formatGoDuration } from '../../../src/runtime/backoff.js';
import { FakeClock } from '../../../src/util/clock.js';

test('crash-loop backoff: 10 s doubling to 300 s, measured from the last exit', () => {
  const clock = new FakeClock();
  const b = new Backoff(clock, CRASH_LOOP_INITIAL_MS, CRASH_LOOP_MAX_MS);
  const seen: number[] = [];
  for (let i = 0; i < 8; i++) {
    const exitedAt = clock.now();
    b.next('k', exitedAt);
    seen.push(b.get('k'));
    assert.ok(b.isInBackOffSince('k', exitedAt));
    clock.step(b.get('k') - 1);
    assert.ok(b.isInBackOffSince('k', exitedAt), 'still backing off 1 ms before the end');
    clock.step(1);
    assert.ok(!b.isInBackOffSince('k', exitedAt), 'free exactly at the end');
  }
  assert.deepEqual(seen.map((ms) => ms / 1000), [10, 20, 40, 80, 160, 300, 300, 300]);
});

test('backoff is forgotten after twice the maximum (10 min) without a failure', () => {
  const clock = new FakeClock();
  const b = new Backoff(clock, CRASH_LOOP_INITIAL_MS, CRASH_LOOP_MAX_MS);
  b.next('k', clock.now());
  b.next('k', clock.now());
  assert.equal(b.get('k'), 20_000);
  clock.step(10 * 60_000 + 1);
  assert.ok(!b.isInBackOffSince('k', clock.now()));
  b.next('k', clock.now());
  assert.equal(b.get('k'), 10_000, 'starts again at 10 s');
  clock.step(10 * 60_000 + 1);
  b.gc();
  assert.equal(b.size(), 0);
});

test('keys back off independently', () => {
  const clock = new FakeClock();
  const b = new Backoff(clock, 1000, 8000);
  b.next('a', clock.now());
  b.next('a', clock.now());
  b.next('b', clock.now());
  assert.equal(b.get('a'), 2000);
  assert.equal(b.get('b'), 1000);
  assert.equal(b.get('c'), 0);
});

test('durations print as Go prints them', () => {
  assert.equal(formatGoDuration(10_000), '10s');
  assert.equal(formatGoDuration(80_000), '1m20s');
  assert.equal(formatGoDuration(300_000), '5m0s');
});
