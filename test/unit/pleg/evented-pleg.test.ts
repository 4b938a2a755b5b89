// The evented PLEG: a runtime's container event wakes its pod at once, without a relist; while
// events flow the relist runs every 5 min (the safety net); a broken stream brings back the 1 s
// relist and is opened again; a runtime without events keeps the 1 s relist.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CriError } from '../../../src/cri/errors.js';
import type { ContainerEventHandlers, ContainerEventSource, RuntimeService } from '../../../src/cri/services.js';
import type { ContainerEventResponse } from '../../../src/cri/types.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { EventedPLEG, stateAfter } from '../../../src/pleg/evented-pleg.js';
import { GenericPLEG, type PodLifecycleEvent } from '../../../src/pleg/generic-pleg.js';
import { NodeNameLabel, PodUIDLabel } from '../../../src/runtime/labels.js';
import { FakeClock } from '../../../src/util/clock.js';

/** A runtime whose lists the test sets, counting relists. */
function fakeRuntime() {
  const state = {
    relists: 0,
    sandboxes: [] as Array<{ id: string; uid: string; state: string }>,
    containers: [] as Array<{ id: string; uid: string; state: string }>,
  };
  const runtime = {
    listPodSandbox: async () => {
      state.relists++;
      return state.sandboxes.map((s) => ({ id: s.id, metadata: { uid: s.uid }, state: s.state, labels: { [PodUIDLabel]: s.uid } }));
    },
    listContainers: async () => state.containers.map((c) => ({ id: c.id, state: c.state, labels: { [PodUIDLabel]: c.uid } })),
  } as unknown as RuntimeService;
  return { state, runtime };
}

/** A stream the test drives: open it, send events, break it. */
class FakeSource implements ContainerEventSource {
  handlers?: ContainerEventHandlers;
  opens = 0;
  cancelled = 0;
  watchContainerEvents(h: ContainerEventHandlers) {
    this.opens++;
    this.handlers = h;
    return { cancel: () => void this.cancelled++ };
  }
}

const flush = () => new Promise((r) => setImmediate(r));

async function setup() {
  const clock = new FakeClock();
  const rt = fakeRuntime();
  const woken: PodLifecycleEvent[] = [];
  const logger = silentLogger();
  const generic = new GenericPLEG({ runtime: rt.runtime, nodeName: 'n1', clock, logger, relistPeriodMs: 1000, onEvent: (e) => woken.push(e) });
  const source = new FakeSource();
  const evented = new EventedPLEG({ source, generic, nodeName: 'n1', clock, logger, normalPeriodMs: 1000, onEvent: (e) => woken.push(e) });
  await generic.relist();
  generic.start();
  evented.start();
  /** Moves time in steps, letting each relist's promise settle. */
  const advance = async (ms: number, step = 100) => {
    for (let t = 0; t < ms; t += step) {
      clock.step(Math.min(step, ms - t));
      await flush();
    }
  };
  return { clock, rt, woken, generic, source, evented, advance };
}

const event = (type: string, id: string, uid: string, sandboxId = 'sb1', sandboxState = 'SANDBOX_READY', node = 'n1') =>
  ({
    container_id: id,
    container_event_type: type,
    created_at: '0',
    pod_sandbox_status: { id: sandboxId, state: sandboxState, metadata: { uid }, labels: { [NodeNameLabel]: node } },
    containers_statuses: [],
  }) as unknown as ContainerEventResponse;

test('an event wakes its pod at once and is not announced again by the next relist', async () => {
  const t = await setup();
  t.source.handlers!.onOpen();
  await t.advance(100);
  const relists = t.rt.state.relists;
  t.source.handlers!.onEvent(event('CONTAINER_CREATED_EVENT', 'c1', 'u1'));
  assert.equal(t.woken.length, 0, 'a container created wakes nobody');
  t.source.handlers!.onEvent(event('CONTAINER_STARTED_EVENT', 'c1', 'u1'));
  assert.deepEqual(t.woken, [{ uid: 'u1', type: 'ContainerStarted', id: 'c1' }]);
  assert.equal(t.rt.state.relists, relists, 'no relist was needed');
  t.source.handlers!.onEvent(event('CONTAINER_STOPPED_EVENT', 'c1', 'u1'));
  t.source.handlers!.onEvent(event('CONTAINER_STOPPED_EVENT', 'c1', 'u1')); // the same news twice wakes once
  t.source.handlers!.onEvent(event('CONTAINER_DELETED_EVENT', 'c1', 'u1'));
  t.source.handlers!.onEvent(event('CONTAINER_STOPPED_EVENT', 'sb1', 'u1', 'sb1', 'SANDBOX_NOTREADY'));
  t.source.handlers!.onEvent(event('CONTAINER_STARTED_EVENT', 'x', 'u2', 'sb2', 'SANDBOX_READY', 'another-node'));
  assert.deepEqual(
    t.woken.map((e) => e.type),
    ['ContainerStarted', 'ContainerDied', 'ContainerRemoved', 'SandboxChanged'],
  );
  // The runtime now shows what the events said: the safety-net relist finds nothing new.
  t.rt.state.sandboxes = [{ id: 'sb1', uid: 'u1', state: 'SANDBOX_NOTREADY' }];
  const before = t.woken.length;
  await t.advance(300_000, 10_000);
  assert.equal(t.woken.length, before);
});

test('while events flow the relist runs every 5 minutes; before the stream opens, every second', async () => {
  const t = await setup();
  let r0 = t.rt.state.relists;
  await t.advance(10_000);
  assert.ok(t.rt.state.relists - r0 >= 9, 'relisting every second until the stream is open');
  t.source.handlers!.onOpen();
  assert.equal(t.evented.streaming, true);
  await t.advance(100);
  r0 = t.rt.state.relists; // one relist right after the stream opens covers what came before
  await t.advance(299_000, 1000);
  assert.equal(t.rt.state.relists, r0, 'no relist for 5 minutes');
  await t.advance(2000, 1000);
  assert.equal(t.rt.state.relists, r0 + 1, 'the safety net');
  assert.equal(t.generic.healthProblem(), undefined, 'healthy with a relist every 5 minutes');
});

test('a broken stream brings the 1 s relist back at once, and the stream is opened again', async () => {
  const t = await setup();
  t.source.handlers!.onOpen();
  await t.advance(2000);
  const r0 = t.rt.state.relists;
  t.rt.state.containers = [{ id: 'c9', uid: 'u9', state: 'CONTAINER_RUNNING' }];
  t.source.handlers!.onEnd(new Error('the runtime went away'));
  assert.equal(t.evented.streaming, false);
  await t.advance(100);
  assert.equal(t.rt.state.relists, r0 + 1, 'a relist at once sees what the stream missed');
  assert.deepEqual(t.woken.at(-1), { uid: 'u9', type: 'ContainerStarted', id: 'c9' });
  await t.advance(3000);
  assert.ok(t.rt.state.relists >= r0 + 3, 'then every second');
  assert.equal(t.source.opens, 2, 'asked again after 1 s');
  t.source.handlers!.onEnd(new Error('still away'));
  await t.advance(1900);
  assert.equal(t.source.opens, 2, 'then after 2 s');
  await t.advance(200);
  assert.equal(t.source.opens, 3);
  t.source.handlers!.onOpen();
  const r1 = t.rt.state.relists;
  await t.advance(60_000, 1000);
  assert.ok(t.rt.state.relists - r1 <= 1, 'back to the safety net once open');
});

test('a runtime without events (Unimplemented) keeps the 1 s relist and is asked again only every 5 minutes', async () => {
  const t = await setup();
  t.source.handlers!.onEnd(new CriError('Unimplemented', 'GetContainerEvents', 'unix:///x', 'no'));
  const r0 = t.rt.state.relists;
  await t.advance(60_000, 1000);
  assert.ok(t.rt.state.relists - r0 >= 59);
  assert.equal(t.source.opens, 1);
  await t.advance(240_000, 10_000);
  assert.equal(t.source.opens, 2);
  t.evented.stop();
  assert.equal(t.source.cancelled, 1);
});

test('the state an event leaves: containers by type, sandboxes by their status', () => {
  assert.equal(stateAfter(event('CONTAINER_CREATED_EVENT', 'c', 'u')), 'CONTAINER_CREATED');
  assert.equal(stateAfter(event('CONTAINER_STOPPED_EVENT', 'c', 'u')), 'CONTAINER_EXITED');
  assert.equal(stateAfter(event('CONTAINER_DELETED_EVENT', 'c', 'u')), undefined);
  assert.equal(stateAfter(event('CONTAINER_STARTED_EVENT', 'sb1', 'u')), 'SANDBOX_READY');
  assert.equal(stateAfter(event('CONTAINER_DELETED_EVENT', 'sb1', 'u')), undefined);
});
