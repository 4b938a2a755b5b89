// Container GC: the kubelet's decisions (pure), then carried out against the in-memory runtime.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { defaultGCPolicy, garbageCollect, planContainerGC, removeDeletedPod, planSandboxGC, type GCContainer, type GCSandbox } from '../../../src/runtime/gc.js';
import { getPodStatus } from '../../../src/runtime/pod-status.js';
import { syncPod } from '../../../src/runtime/sync-pod.js';
import { fakeDeps } from './deps.js';

function pod(): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'ns', uid: 'uid-1' },
    spec: { restartPolicy: 'Always', containers: [{ name: 'c', image: 'nodelet.test/busybox:1', command: ['sh'] }] },
  };
}

const status = (deps: ReturnType<typeof fakeDeps>['deps'], p: V1Pod) => getPodStatus(deps, p.metadata!.uid!, p.metadata!.name!, p.metadata!.namespace!);
const alive = () => false;
const ctr = (id: string, createdAt: number, state: GCContainer['state'], extra: Partial<GCContainer> = {}): GCContainer => ({ id, name: 'c', podUID: 'u1', sandboxID: 'sb1', createdAt, state, ...extra });

test('container GC plan: created and unknown containers count as dead; one per (pod, container) kept, the newest; running ones never', () => {
  const list = [ctr('old', 1, 'exited'), ctr('failed-start', 2, 'created'), ctr('lost', 3, 'unknown'), ctr('newest', 4, 'exited'), ctr('run', 5, 'running')];
  assert.deepEqual(planContainerGC(list, 10, defaultGCPolicy, alive).map((c) => c.id), ['old', 'failed-start', 'lost']);
  // Another container name of the same pod is its own unit.
  assert.deepEqual(planContainerGC([ctr('a', 1, 'created'), ctr('b', 2, 'created', { name: 'd' })], 10, defaultGCPolicy, alive), []);
});

test('container GC plan: a pod that is gone loses all; the minimum age holds young ones back; a node-wide limit takes the oldest', () => {
  const list = [ctr('a', 1, 'exited'), ctr('b', 2, 'exited'), ctr('x', 3, 'exited', { podUID: 'u2' })];
  assert.deepEqual(planContainerGC(list, 10, defaultGCPolicy, (uid) => uid === 'u1').map((c) => c.id), ['a', 'b']);
  assert.deepEqual(planContainerGC(list, 10, { ...defaultGCPolicy, minAgeMs: 9 }, alive).map((c) => c.id), []);
  const many = [ctr('p1', 1, 'exited', { podUID: 'p' }), ctr('q1', 2, 'exited', { podUID: 'q' }), ctr('r1', 3, 'exited', { podUID: 'r' })];
  assert.deepEqual(planContainerGC(many, 10, { ...defaultGCPolicy, maxContainers: 1 }, alive).map((c) => c.id).sort(), ['p1', 'q1']);
});

test('sandbox GC plan: of a live pod every old sandbox that is not ready and holds no container goes, even while another sandbox holds its containers; its newest stays', () => {
  const sb = (id: string, createdAt: number, ready = false, podUID = 'u1'): GCSandbox => ({ id, podUID, createdAt, ready });
  const sandboxes = [sb('old', 1), sb('old-with-dead', 2), sb('current', 3, true)];
  const containers = [ctr('dead', 2, 'exited', { sandboxID: 'old-with-dead' }), ctr('run', 3, 'running', { sandboxID: 'current' })];
  assert.deepEqual(planSandboxGC(sandboxes, containers, alive).map((s) => s.id), ['old']);
  // The newest is kept even when it is not ready (the pod may need it to decide its next attempt).
  assert.deepEqual(planSandboxGC([sb('a', 1), sb('b', 2)], [], alive).map((s) => s.id), ['a']);
  // A pod that is gone: every inactive sandbox.
  assert.deepEqual(planSandboxGC([sb('a', 1), sb('b', 2), sb('c', 3, true)], [], () => true).map((s) => s.id), ['a', 'b']);
});

test('GC stops an unknown container before removing it, and stops a sandbox before removing it', async () => {
  const { deps, runtime, gone, clock } = fakeDeps();
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  clock.step(1000);
  const c = runtime.running()[0]!;
  c.state = 'CONTAINER_UNKNOWN' as typeof c.state;
  for (const sb of runtime.sandboxes.values()) sb.state = 'SANDBOX_NOTREADY';
  gone.add('uid-1');
  runtime.calls = [];
  const report = await garbageCollect(deps, defaultGCPolicy, true);
  assert.deepEqual(runtime.calls.map((x) => x.replace(/ timeout=\d+| sb\d+/g, '')), ['StopContainer c', 'RemoveContainer c', 'StopPodSandbox', 'RemovePodSandbox']);
  assert.equal(report.containersRemoved, 1);
  assert.equal(report.sandboxesRemoved, 1);
});

test('GC removes a container whose start failed (left in created state)', async () => {
  const { deps, runtime, clock } = fakeDeps();
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  const first = runtime.running()[0]!;
  runtime.exit(first.id, 1);
  clock.step(1000);
  // Two failed starts: created, never started; the first instance exited before them.
  for (const id of ['failed-1', 'failed-2']) {
    runtime.containers.set(id, { ...first, id, state: 'CONTAINER_CREATED', createdAt: clock.now() });
    clock.step(1000);
  }
  const report = await garbageCollect(deps, defaultGCPolicy, true);
  assert.equal(report.containersRemoved, 2);
  assert.deepEqual([...runtime.containers.keys()], ['failed-2']);
});

test('GC keeps one dead instance per container (older than 1 min), and everything of a pod that is gone', async () => {
  const { deps, runtime, clock, gone } = fakeDeps();
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  // Three dead instances, then a running one.
  for (let i = 0; i < 3; i++) {
    runtime.exit(runtime.running()[0]!.id, 1);
    clock.step(400_000);
    await syncPod(deps, p, await status(deps, p));
  }
  assert.equal(runtime.containers.size, 4);
  let report = await garbageCollect(deps, { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: -1 }, true);
  assert.equal(report.containersRemoved, 2, 'two oldest dead instances removed');
  assert.deepEqual([...runtime.containers.values()].map((c) => c.state).sort(), ['CONTAINER_EXITED', 'CONTAINER_RUNNING']);

  // A dead instance younger than the minimum age stays.
  runtime.exit(runtime.running()[0]!.id, 1);
  await syncPod(deps, p, await status(deps, p));
  report = await garbageCollect(deps, { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: -1 }, true);
  assert.equal(report.containersRemoved, 0);

  // The pod goes: its containers (once stopped), sandboxes and log directory go too.
  for (const c of runtime.running()) runtime.exit(c.id, 0);
  for (const sb of runtime.sandboxes.values()) sb.state = 'SANDBOX_NOTREADY';
  gone.add('uid-1');
  mkdirSync(join(deps.podLogRoot, 'ns_web_uid-1', 'c'), { recursive: true });
  clock.step(120_000);
  report = await garbageCollect(deps, { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: -1 }, true);
  assert.equal(runtime.containers.size, 0);
  assert.equal(runtime.sandboxes.size, 0);
  assert.equal(report.logDirsRemoved, 1);
  assert.ok(!existsSync(join(deps.podLogRoot, 'ns_web_uid-1')));
});

test('GC before the pod sources are ready removes nothing of pods it cannot yet tell are gone', async () => {
  const { deps, runtime, clock, gone } = fakeDeps();
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  runtime.exit(runtime.running()[0]!.id, 0);
  gone.add('uid-1');
  clock.step(120_000);
  const report = await garbageCollect(deps, { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: -1 }, false);
  assert.equal(report.containersRemoved, 0);
  assert.equal(runtime.containers.size, 1);
});


test('a deleted pod is removed from the runtime at once: its stopped containers, then its sandbox; other pods and running containers stay', async () => {
  const { deps, runtime, clock } = fakeDeps();
  const a = pod();
  const b: V1Pod = { ...pod(), metadata: { name: 'other', namespace: 'ns', uid: 'uid-2' } };
  await syncPod(deps, a, await status(deps, a));
  await syncPod(deps, b, await status(deps, b));
  clock.step(1000);
  const [ca] = runtime.running().filter((c) => c.config.labels?.['io.kubernetes.pod.uid'] === 'uid-1');
  // Still running: nothing of the pod goes (its worker has not stopped it).
  assert.deepEqual(await removeDeletedPod(deps, { uid: 'uid-1', fields: {} }), { containers: 0, sandboxes: 0 });
  runtime.exit(ca!.id, 0);
  for (const sb of runtime.sandboxes.values()) if (sb.config.metadata?.uid === 'uid-1') sb.state = 'SANDBOX_NOTREADY';
  runtime.calls = [];
  assert.deepEqual(await removeDeletedPod(deps, { uid: 'uid-1', fields: {} }), { containers: 1, sandboxes: 1 });
  assert.deepEqual(runtime.calls.filter((x) => !x.startsWith('List') && !x.startsWith('ContainerStatus')).map((x) => x.replace(/ timeout=\d+| sb\d+| [0-9a-f-]{6,}$/g, '')), ['RemoveContainer c', 'StopPodSandbox', 'RemovePodSandbox']);
  assert.equal(runtime.running().length, 1, "the other pod's container runs on");
  assert.equal(runtime.sandboxes.size, 1);
});

test('GC for the eviction manager (DeleteAllUnusedContainers) also takes the dead containers and sandboxes of pods that have ended but are still in the API', async () => {
  const { deps, runtime, ended, clock } = fakeDeps();
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  runtime.exit(runtime.running()[0]!.id, 0);
  for (const sb of runtime.sandboxes.values()) sb.state = 'SANDBOX_NOTREADY';
  clock.step(1000);
  ended.add('uid-1');
  assert.equal((await garbageCollect(deps, defaultGCPolicy, true)).containersRemoved, 0, 'the routine pass keeps the last dead instance');
  const report = await garbageCollect(deps, defaultGCPolicy, true, true);
  assert.equal(report.containersRemoved, 1);
  assert.equal(report.sandboxesRemoved, 1);
  assert.equal(runtime.containers.size, 0);
});
