// The event recorder: aggregation into one object, the per-object rate limit, never blocking.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { EventApi } from '../../../src/kube/client.js';
import { ApiEventRecorder } from '../../../src/kube/events.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeClock } from '../../../src/util/clock.js';

function harness(opts: { burst?: number } = {}) {
  const clock = new FakeClock();
  const created: CoreV1Event[] = [];
  const patches: Array<{ name: string; patch: object }> = [];
  const api: EventApi = {
    async createEvent(_ns, e) {
      created.push(e);
      return e;
    },
    async patchEvent(_ns, name, patch) {
      patches.push({ name, patch });
      return {} as CoreV1Event;
    },
  };
  const rec = new ApiEventRecorder({ api, component: 'nodelet', host: 'node-1', clock, logger: silentLogger(), burst: opts.burst });
  return { clock, created, patches, rec };
}

const ref = (uid: string) => ({ kind: 'Pod', namespace: 'ns', name: `pod-${uid}`, uid, apiVersion: 'v1', fieldPath: 'spec.containers{c}' });

test('repeats of one event become one object with a growing count and lastTimestamp', async () => {
  const h = harness();
  h.rec.event(ref('u1'), 'Warning', 'BackOff', 'Back-off restarting failed container');
  h.clock.step(10_000);
  h.rec.event(ref('u1'), 'Warning', 'BackOff', 'Back-off restarting failed container');
  h.clock.step(10_000);
  h.rec.event(ref('u1'), 'Warning', 'BackOff', 'Back-off restarting failed container');
  await h.rec.flush();
  assert.equal(h.created.length, 1);
  const e = h.created[0]!;
  assert.equal(e.count, 1);
  assert.equal(e.source?.component, 'nodelet');
  assert.equal(e.source?.host, 'node-1');
  assert.equal(e.involvedObject.fieldPath, 'spec.containers{c}');
  assert.deepEqual(h.patches.map((p) => (p.patch as { count: number }).count), [2, 3]);
  assert.equal(h.patches[1]!.name, e.metadata!.name);
});

test('a different message is a different event', async () => {
  const h = harness();
  h.rec.event(ref('u1'), 'Normal', 'Killing', 'Stopping container a');
  h.rec.event(ref('u1'), 'Normal', 'Killing', 'Stopping container b');
  await h.rec.flush();
  assert.equal(h.created.length, 2);
});

test('a noisy object is rate limited; others are not affected', async () => {
  const h = harness({ burst: 3 });
  for (let i = 0; i < 10; i++) h.rec.event(ref('noisy'), 'Normal', 'Pulled', `message ${i}`);
  h.rec.event(ref('quiet'), 'Normal', 'Pulled', 'hello');
  await h.rec.flush();
  assert.equal(h.created.filter((e) => e.involvedObject.uid === 'noisy').length, 3);
  assert.equal(h.created.filter((e) => e.involvedObject.uid === 'quiet').length, 1);
  h.clock.step(300_000);
  h.rec.event(ref('noisy'), 'Normal', 'Pulled', 'after the refill');
  await h.rec.flush();
  assert.equal(h.created.filter((e) => e.involvedObject.uid === 'noisy').length, 4);
});

test('recording returns at once even when the API server hangs', async () => {
  const clock = new FakeClock();
  let release!: () => void;
  const hung = new Promise<void>((r) => (release = r));
  const api: EventApi = {
    createEvent: async (_ns, e) => {
      await hung;
      return e;
    },
    patchEvent: async () => ({}) as CoreV1Event,
  };
  const rec = new ApiEventRecorder({ api, component: 'nodelet', host: 'n', clock, logger: silentLogger() });
  const started = Date.now();
  for (let i = 0; i < 100; i++) rec.event(ref(`u${i}`), 'Normal', 'Started', 'x');
  assert.ok(Date.now() - started < 100);
  release();
  await rec.flush();
});

test('repeats pass the spam filter too: an object\'s 25 tokens cover new events and repeats alike, per event type', async () => {
  const h = harness({ burst: 3 });
  for (let i = 0; i < 5; i++) h.rec.event(ref('u1'), 'Warning', 'BackOff', 'Back-off restarting failed container');
  h.rec.event(ref('u1'), 'Normal', 'Pulled', 'a Normal event has a bucket of its own');
  await h.rec.flush();
  assert.equal(h.created.length, 2);
  assert.deepEqual(h.patches.map((p) => (p.patch as { count: number }).count), [2, 3], 'the 4th and 5th repeats were filtered');
  h.clock.step(300_000);
  h.rec.event(ref('u1'), 'Warning', 'BackOff', 'Back-off restarting failed container');
  await h.rec.flush();
  assert.deepEqual(h.patches.map((p) => (p.patch as { count: number }).count), [2, 3, 6], 'one token back after 5 min; the held-back repeats were counted');
});

test('ten different messages of one reason within 10 min are combined into one event, as client-go combines them', async () => {
  const h = harness({ burst: 100 });
  for (let i = 0; i < 12; i++) h.rec.event(ref('u1'), 'Warning', 'Unhealthy', `Readiness probe failed: attempt ${i}`);
  await h.rec.flush();
  assert.equal(h.created.length, 10, '9 on their own, then the combined one');
  assert.equal(h.created[9]!.message, '(combined from similar events): Readiness probe failed: attempt 9');
  assert.deepEqual(h.patches.map((p) => (p.patch as { count: number; message: string }).count), [2, 3], 'later different messages count on the combined event');
  assert.equal((h.patches[1]!.patch as { message: string }).message, '(combined from similar events): Readiness probe failed: attempt 11', 'with the newest message');
  h.clock.step(600_001);
  h.rec.event(ref('u1'), 'Warning', 'Unhealthy', 'Readiness probe failed: later');
  await h.rec.flush();
  assert.equal(h.created.at(-1)!.message, 'Readiness probe failed: later', 'after 10 quiet minutes, on its own again');
});

test('an API server that cannot be reached: the event is tried again 10 s apart and arrives once it answers; one it refuses is dropped at once', async () => {
  const h = harness();
  let down = true;
  const create = h.rec['opts'].api.createEvent.bind(h.rec['opts'].api);
  h.rec['opts'].api.createEvent = async (ns: string, e: CoreV1Event) => {
    if (down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 0 });
    if (e.reason === 'Refused') throw Object.assign(new Error('forbidden'), { code: 403 });
    return create(ns, e);
  };
  h.rec.event(ref('u1'), 'Normal', 'Started', 'Started container c');
  h.rec.event(ref('u2'), 'Normal', 'Started', 'Started container c');
  const settle = async () => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  // A minute of outage: six tries of the first event, the queue held behind it.
  for (let i = 0; i < 6; i++) {
    h.clock.step(10_000);
    await settle();
  }
  assert.equal(h.created.length, 0);
  down = false;
  h.clock.step(10_000);
  await settle();
  h.clock.step(10_000);
  await h.rec.flush();
  assert.deepEqual(h.created.map((e) => e.involvedObject.uid), ['u1', 'u2'], 'both arrive, in order');
  h.rec.event(ref('u3'), 'Warning', 'Refused', 'x');
  await h.rec.flush();
  assert.equal(h.created.length, 2, 'a refused event is not retried');
});
