// The prober manager and its workers on a fake clock: thresholds, the initial results, liveness
// on hold until the container is replaced, startup gating the other probes, readiness into the
// pod's status, events, and no worker or result left behind once a pod goes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1ContainerStatus, V1Pod, V1PodStatus, V1Probe } from '@kubernetes/client-node';
import { ProbeManager } from '../../../src/prober/manager.js';
import { FakeClock } from '../../../src/util/clock.js';

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

function setup(probes: { liveness?: V1Probe; readiness?: V1Probe; startup?: V1Probe }) {
  const clock = new FakeClock();
  const events: string[] = [];
  const updates: string[] = [];
  let exitCode = 0;
  const statuses = new Map<string, V1PodStatus>();
  const m = new ProbeManager({
    clock,
    random: () => 0,
    recorder: { event: (_ref, type, reason, message) => events.push(`${type} ${reason} ${message}`) },
    runInContainer: async () => ({ stdout: Buffer.from(exitCode ? 'bad' : 'good'), stderr: Buffer.alloc(0), exitCode }),
    podStatus: (uid) => statuses.get(uid),
    onUpdate: (type, u) => updates.push(`${type} ${u.containerID} ${u.result}`),
  });
  const pod: V1Pod = {
    metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
    spec: { containers: [{ name: 'c', image: 'i', livenessProbe: probes.liveness, readinessProbe: probes.readiness, startupProbe: probes.startup }] },
  };
  const running = (id: string, started?: boolean): V1ContainerStatus => ({
    name: 'c',
    image: 'i',
    imageID: '',
    containerID: `containerd://${id}`,
    ready: false,
    restartCount: 0,
    started,
    state: { running: { startedAt: new Date(clock.now()) } },
  });
  const setStatus = (cs: V1ContainerStatus) => statuses.set('u1', { phase: 'Running', podIP: '10.0.0.1', containerStatuses: [cs] });
  return { clock, events, updates, m, pod, running, setStatus, statuses, fail: (on: boolean) => (exitCode = on ? 1 : 0) };
}

const exec = (extra: Partial<V1Probe> = {}): V1Probe => ({ exec: { command: ['check'] }, periodSeconds: 10, failureThreshold: 3, successThreshold: 1, timeoutSeconds: 1, ...extra });

test('liveness: failures below the threshold change nothing; the third fails the container with Unhealthy events; then it waits for the next instance', async () => {
  const t = setup({ liveness: exec() });
  t.setStatus(t.running('a', true));
  t.m.addPod(t.pod);
  t.clock.step(0);
  await flush();
  assert.deepEqual(t.updates, ['Liveness a Success'], 'alive until probed otherwise');
  t.fail(true);
  for (let i = 0; i < 2; i++) {
    t.clock.step(10_000);
    await flush();
  }
  assert.equal(t.m.liveness.get('a'), 'Success', 'two failures are below failureThreshold 3');
  t.clock.step(10_000);
  await flush();
  assert.equal(t.m.liveness.get('a'), 'Failure');
  assert.deepEqual(t.updates.at(-1), 'Liveness a Failure');
  assert.equal(t.events.filter((e) => e === 'Warning Unhealthy Liveness probe failed: bad').length, 3, 'one event per failed probe');
  // On hold: no more probes of this instance.
  t.clock.step(30_000);
  await flush();
  assert.equal(t.events.length, 3);
  // Its replacement starts alive.
  t.fail(false);
  t.setStatus(t.running('b', true));
  t.clock.step(10_000);
  await flush();
  assert.equal(t.m.liveness.get('b'), 'Success');
  assert.equal(t.m.liveness.get('a'), undefined, 'the old instance\'s result is dropped');
});

test('readiness: not ready until a probe passes, then ready in the status; a failure makes it not ready again', async () => {
  const t = setup({ readiness: exec({ failureThreshold: 1 }) });
  t.setStatus(t.running('a', true));
  t.m.addPod(t.pod);
  t.clock.step(0);
  const status = () => {
    const cs = t.running('a');
    t.m.updatePodStatus(t.pod, { containerStatuses: [cs] });
    return { started: cs.started, ready: cs.ready };
  };
  assert.deepEqual(status(), { started: true, ready: false }, 'a readiness probe that has not run: not ready');
  await flush();
  assert.equal(t.m.readiness.get('a'), 'Success');
  assert.deepEqual(status(), { started: true, ready: true });
  t.fail(true);
  t.clock.step(10_000);
  await flush();
  assert.deepEqual(status(), { started: true, ready: false });
  assert.ok(t.events.includes('Warning Unhealthy Readiness probe failed: bad'));
});

test('startup: liveness and readiness wait until it passes; the container is started only then', async () => {
  const t = setup({ startup: exec({ failureThreshold: 30 }), liveness: exec(), readiness: exec() });
  t.fail(true);
  t.setStatus(t.running('a', false));
  t.m.addPod(t.pod);
  t.clock.step(0);
  await flush();
  t.clock.step(20_000);
  await flush();
  assert.ok(t.events.every((e) => e.startsWith('Warning Unhealthy Startup probe failed')), t.events.join('\n'));
  const cs = t.running('a');
  t.m.updatePodStatus(t.pod, { containerStatuses: [cs] });
  assert.equal(cs.started, false);
  assert.equal(cs.ready, false);
  t.fail(false);
  t.clock.step(10_000);
  await flush();
  assert.equal(t.m.startup.get('a'), 'Success');
  const after = t.running('a');
  t.m.updatePodStatus(t.pod, { containerStatuses: [after] });
  assert.equal(after.started, true);
  await flush(); // the readiness probe this status asked for
  t.setStatus(t.running('a', true));
  t.clock.step(10_000);
  await flush();
  assert.equal(t.m.readiness.get('a'), 'Success', 'readiness runs once started');
});

test('initialDelaySeconds holds the first probe; a pod that goes takes its workers and results with it', async () => {
  const t = setup({ readiness: exec({ initialDelaySeconds: 25 }), liveness: exec() });
  t.setStatus(t.running('a', true));
  t.m.addPod(t.pod);
  t.clock.step(0);
  await flush();
  t.clock.step(20_000);
  await flush();
  assert.equal(t.m.readiness.get('a'), 'Failure', 'the initial value while the delay lasts');
  t.clock.step(10_000);
  await flush();
  assert.equal(t.m.readiness.get('a'), 'Success');
  assert.equal(t.m.workerCount, 2);
  t.m.cleanupPods(() => false);
  await flush();
  assert.equal(t.m.workerCount, 0);
  assert.equal(t.m.readiness.get('a'), undefined);
  assert.equal(t.m.liveness.get('a'), undefined);
  assert.equal(t.clock.pendingTimers(), 0, 'no timer left');
});

test('a terminal pod ends its workers on their next run', async () => {
  const t = setup({ readiness: exec() });
  t.setStatus(t.running('a', true));
  t.m.addPod(t.pod);
  t.clock.step(0);
  await flush();
  assert.equal(t.m.workerCount, 1);
  t.statuses.set('u1', { phase: 'Succeeded', containerStatuses: [] });
  t.clock.step(10_000);
  await flush();
  assert.equal(t.m.workerCount, 0);
});
