// The node's readiness as the kubelet makes it: the runtime's conditions and the PLEG's health.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RuntimeState } from '../../../src/agent/runtime-state.js';
import { aggregateErrors } from '../../../src/util/errors.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { GenericPLEG } from '../../../src/pleg/generic-pleg.js';
import { goDuration } from '../../../src/util/duration.js';
import { FakeClock } from '../../../src/util/clock.js';
import { FakeRuntime } from '../runtime/fake-runtime.js';

function runtimeWith(conditions: Record<string, boolean>) {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  runtime.status = async () =>
    ({ status: { conditions: Object.entries(conditions).map(([type, status]) => ({ type, status, reason: status ? '' : 'NoCNIConfig', message: status ? '' : 'no network config found' })) } }) as never;
  return { clock, runtime };
}

test('a PLEG whose relist has not completed for over 3 minutes makes the node NotReady, in the kubelet\'s words', async () => {
  const { clock, runtime } = runtimeWith({ RuntimeReady: true, NetworkReady: true });
  const pleg = new GenericPLEG({ runtime, nodeName: 'n', clock, logger: silentLogger(), onEvent: () => undefined });
  const state = new RuntimeState(runtime, clock);
  state.addHealthCheck('PLEG', () => pleg.healthProblem());
  await state.refresh();
  assert.equal(state.health().notReadyMessage, 'PLEG is not healthy: pleg has yet to be successful');
  await pleg.relist();
  assert.equal(state.health().notReadyMessage, undefined);
  clock.step(3 * 60_000);
  await state.refresh();
  assert.equal(state.health().notReadyMessage, undefined, 'at the threshold still healthy');
  clock.step(5_250);
  await state.refresh();
  assert.equal(state.health().notReadyMessage, 'PLEG is not healthy: pleg was last seen active 3m5.25s ago; threshold is 3m0s');
  await pleg.relist();
  assert.equal(state.health().notReadyMessage, undefined, 'healthy again after a relist');
});

test('a runtime whose network is not ready: pods on the pod network wait, and the node says why, with every other error', async () => {
  const { runtime, clock } = runtimeWith({ RuntimeReady: true, NetworkReady: false });
  const state = new RuntimeState(runtime, clock);
  assert.equal(state.health().notReadyMessage, 'container runtime status check may not have completed yet');
  await state.refresh();
  const network = 'container runtime network not ready: NetworkReady=false reason:NoCNIConfig message:no network config found';
  assert.equal(state.networkNotReady(), network);
  assert.equal(state.health().notReadyMessage, network);
  state.addHealthCheck('PLEG', () => 'pleg has yet to be successful');
  assert.equal(state.health().notReadyMessage, `[PLEG is not healthy: pleg has yet to be successful, ${network}]`);
});

test('Go\'s formats: durations, and aggregated errors', () => {
  assert.deepEqual([0, 999, 1000, 180_000, 185_250, 3_600_001].map(goDuration), ['0s', '999ms', '1s', '3m0s', '3m5.25s', '1h0m0.001s']);
  assert.equal(aggregateErrors([]), undefined);
  assert.equal(aggregateErrors(['a']), 'a');
  assert.equal(aggregateErrors(['a', 'b', 'a']), '[a, b]');
});

test('a runtime that stops answering keeps its last conditions for 30 s, then the node says it is down', async () => {
  const { runtime, clock } = runtimeWith({ RuntimeReady: true, NetworkReady: false });
  const state = new RuntimeState(runtime, clock);
  await state.refresh();
  const network = state.networkNotReady();
  assert.ok(network);
  runtime.status = async () => {
    throw new Error('container runtime is not reachable at unix:///x.sock (Status): connection refused');
  };
  clock.step(5000);
  await state.refresh();
  assert.equal(state.networkNotReady(), network, 'one failed call changes nothing: the network gate stays');
  assert.equal(state.health().notReadyMessage, network);
  clock.step(26_000);
  await state.refresh();
  assert.equal(state.health().notReadyMessage, `[container runtime is down: container runtime is not reachable at unix:///x.sock (Status): connection refused, ${network}]`);
});
