// The drills' invariants are themselves checked: each must flag what it exists to catch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import type { Container, PodSandbox } from '../../../src/cri/types.js';
import { checkRestarts, leftovers, restartLedger, RuntimeObserver, statusDifferences } from '../../drills/invariants.js';

const uid = 'u1';
const sandbox = (state: string, id = 'sb1', podUid = uid): PodSandbox => ({ id, state, labels: { 'io.kubernetes.pod.uid': podUid } }) as unknown as PodSandbox;
const ctr = (id: string, attempt: number, state: string, created: number, podUid = uid): Container =>
  ({ id, state, created_at: String(created), labels: { 'io.kubernetes.pod.uid': podUid, 'io.kubernetes.container.name': 'c' }, annotations: { 'io.kubernetes.container.restartCount': String(attempt) }, metadata: { name: 'c', attempt } }) as unknown as Container;
const pod = (restartCount: number, containerID: string, running: boolean): V1Pod => ({
  metadata: { uid, name: 'p' },
  status: { phase: 'Running', containerStatuses: [{ name: 'c', restartCount, containerID, ready: running, image: 'i', imageID: 'i', state: running ? { running: {} } : { waiting: { reason: 'CrashLoopBackOff' } } }] },
});

/** An observer whose runtime shows these lists, one poll after another. */
function observerOf(...polls: Array<{ sandboxes: PodSandbox[]; containers: Container[] }>): RuntimeObserver {
  let i = 0;
  const cri = {
    listPodSandbox: async () => polls[Math.min(i, polls.length - 1)]!.sandboxes,
    listContainers: async () => polls[Math.min(i++, polls.length - 1)]!.containers,
  };
  return new RuntimeObserver(cri as never, 'n');
}

test('duplicates: two running instances of a container, or two ready sandboxes, are flagged', async () => {
  const o = observerOf({ sandboxes: [sandbox('SANDBOX_READY'), sandbox('SANDBOX_READY', 'sb2')], containers: [ctr('a', 0, 'CONTAINER_RUNNING', 1), ctr('b', 1, 'CONTAINER_RUNNING', 2)] });
  await o.poll();
  assert.equal(o.violations.length, 2);
  const fine = observerOf({ sandboxes: [sandbox('SANDBOX_READY'), sandbox('SANDBOX_NOTREADY', 'sb2')], containers: [ctr('a', 0, 'CONTAINER_EXITED', 1), ctr('b', 1, 'CONTAINER_RUNNING', 2)] });
  await fine.poll();
  assert.deepEqual(fine.violations, []);
});

test('restart counts: a jump, a lost count and an unexplained restart are flagged; a crash loop is not', async () => {
  const o = observerOf(
    { sandboxes: [], containers: [ctr('a', 0, 'CONTAINER_EXITED', 1)] },
    { sandboxes: [], containers: [ctr('a', 0, 'CONTAINER_EXITED', 1), ctr('b', 2, 'CONTAINER_RUNNING', 2)] },
  );
  await o.poll();
  const seenBefore = new Set(o.containers.keys());
  await o.poll();
  const before = restartLedger([pod(0, 'x://a', false)]);
  const after = restartLedger([pod(2, 'x://b', true)]);
  const errs = checkRestarts(before, after, o, { seenBefore, mayRestart: () => false, mustRestart: new Set() });
  assert.ok(errs.some((e) => /attempts 0 then 2/.test(e)), errs.join('\n'));
  assert.ok(errs.some((e) => /nothing should have restarted it/.test(e)), errs.join('\n'));
  assert.ok(checkRestarts(restartLedger([pod(3, 'x://a', true)]), restartLedger([pod(1, 'x://a', true)]), o, { seenBefore, mayRestart: () => true, mustRestart: new Set() }).some((e) => /went from 3 to 1/.test(e)));

  const loop = observerOf({ sandboxes: [], containers: [ctr('a', 0, 'CONTAINER_EXITED', 1), ctr('b', 1, 'CONTAINER_RUNNING', 2)] });
  await loop.poll();
  assert.deepEqual(checkRestarts(before, restartLedger([pod(1, 'x://b', true)]), loop, { seenBefore: new Set(['a']), mayRestart: () => true, mustRestart: new Set([`${uid}/c`]) }), []);
  // A container the drill killed must show its restart.
  assert.ok(checkRestarts(before, restartLedger([pod(0, 'x://a', true)]), loop, { seenBefore: new Set(['a', 'b']), mayRestart: () => true, mustRestart: new Set([`${uid}/c`]) }).some((e) => /restartCount stayed 0/.test(e)));
});

test('status: the API must name the newest container, its state and its count', () => {
  const sandboxes = [sandbox('SANDBOX_READY')];
  const containers = [ctr('a', 0, 'CONTAINER_EXITED', 1), ctr('b', 1, 'CONTAINER_RUNNING', 2)];
  assert.deepEqual(statusDifferences([pod(1, 'containerd://b', true)], sandboxes, containers, 'containerd'), []);
  assert.equal(statusDifferences([pod(1, 'containerd://a', true)], sandboxes, containers, 'containerd').length, 1);
  assert.equal(statusDifferences([pod(0, 'containerd://b', true)], sandboxes, containers, 'containerd').length, 1);
  assert.equal(statusDifferences([pod(1, 'containerd://b', false)], sandboxes, containers, 'containerd').length, 1);
  assert.ok(statusDifferences([pod(1, 'containerd://b', true)], [], containers, 'containerd').some((e) => /without a ready sandbox/.test(e)));
});

test('leftovers: what runs for a deleted pod is a resource; its stopped records wait for garbage collection', async () => {
  const live = { sandboxes: [sandbox('SANDBOX_READY', 'sb1', 'gone'), sandbox('SANDBOX_NOTREADY', 'sb2', 'gone')], containers: [ctr('c1', 0, 'CONTAINER_RUNNING', 1, 'gone'), ctr('c2', 0, 'CONTAINER_EXITED', 1, 'gone'), ctr('c3', 0, 'CONTAINER_RUNNING', 1, 'here')] };
  const o = observerOf(live);
  await o.poll();
  const left = leftovers(o, live, new Set(['here']), '/nonexistent-root');
  assert.equal(left.resources.length, 2, left.resources.join('\n'));
  assert.equal(left.records.length, 2, left.records.join('\n'));
});
