// The counting clock: timers and sleeps are counted while pending, once each however they end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CountingClock, FakeClock } from '../../../src/util/clock.js';

test('a timer counts until it fires or is cancelled, and only once', async () => {
  const fake = new FakeClock();
  const clock = new CountingClock(fake);
  let fired = 0;
  const a = clock.setTimer(1000, () => fired++);
  const b = clock.setTimer(2000, () => fired++);
  assert.equal(clock.activeTimers, 2);
  b.cancel();
  b.cancel();
  assert.equal(clock.activeTimers, 1, 'a second cancel is not counted again');
  fake.step(1000);
  assert.equal(fired, 1);
  assert.equal(clock.activeTimers, 0);
  a.cancel();
  assert.equal(clock.activeTimers, 0, 'cancelling a timer that fired changes nothing');
  fake.step(5000);
  assert.equal(fired, 1, 'a cancelled timer never fires');
  const slept = clock.sleep(500);
  assert.equal(clock.activeTimers, 1);
  fake.step(500);
  await slept;
  assert.equal(clock.activeTimers, 0);
  assert.equal(clock.now(), fake.now());
});
