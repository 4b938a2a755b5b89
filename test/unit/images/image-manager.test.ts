import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { ImageManager } from '../../../src/images/image-manager.js';
import { Reasons, SyncError } from '../../../src/runtime/errors.js';
import { FakeClock } from '../../../src/util/clock.js';
import { MemoryRecorder } from '../runtime/deps.js';
import { FakeRuntime } from '../runtime/fake-runtime.js';

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'ns', uid: 'uid-1' },
  spec: { containers: [{ name: 'c', image: 'registry.test/missing:1' }] },
};

async function reasonOf(m: ImageManager): Promise<string> {
  try {
    await m.ensureImageExists(pod, pod.spec!.containers[0]!);
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof SyncError);
    return err.reason;
  }
}

test('image pull back-off: retried after 10 s, 20 s, 40 s ... up to 300 s, counted from the last failed pull', async () => {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const recorder = new MemoryRecorder();
  const m = new ImageManager({ images: runtime, recorder, clock, pullQPS: 0 });
  assert.equal(await reasonOf(m), Reasons.ImagePull, 'the first attempt pulls');
  const waits: number[] = [];
  for (let attempt = 0; attempt < 7; attempt++) {
    let waited = 0;
    for (;;) {
      const r = await reasonOf(m);
      if (r !== Reasons.ImagePullBackOff) {
        assert.equal(r, Reasons.ImagePull);
        break;
      }
      clock.step(1000);
      waited += 1000;
    }
    waits.push(waited / 1000);
  }
  assert.deepEqual(waits, [10, 20, 40, 80, 160, 300, 300]);
});

test('image pull: the waiting message is the runtime\'s error, and the back-off message carries it on', async () => {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const m = new ImageManager({ images: runtime, recorder: new MemoryRecorder(), clock, pullQPS: 0 });
  const messageOf = async () => {
    try {
      await m.ensureImageExists(pod, pod.spec!.containers[0]!);
    } catch (err) {
      return (err as SyncError).message;
    }
    return '';
  };
  assert.equal(await messageOf(), 'no registry here for registry.test/missing:1');
  assert.equal(await messageOf(), 'Back-off pulling image "registry.test/missing:1": ErrImagePull: no registry here for registry.test/missing:1');
});

test('image pull back-off entries are forgotten once quiet for twice the maximum', async () => {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const m = new ImageManager({ images: runtime, recorder: new MemoryRecorder(), clock, pullQPS: 0 });
  await reasonOf(m);
  assert.equal(m.backoffEntries(), 1);
  clock.step(10 * 60_000 + 1);
  m.gc();
  assert.equal(m.backoffEntries(), 0);
});
