// The pod reflector against a scripted watch stream: resume, bookmarks, 410 relist, stalls, errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import type { PodApi } from '../../../src/kube/client.js';
import { PodReflector, type WatchStream } from '../../../src/kube/reflector.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeClock } from '../../../src/util/clock.js';

const pod = (uid: string, rv: string): V1Pod => ({ metadata: { uid, name: uid, namespace: 'ns', resourceVersion: rv } });

interface OpenWatch {
  query: Record<string, unknown>;
  emit(type: string, obj: unknown): void;
  end(err?: Error): void;
  aborted: boolean;
}

function harness(listResults: Array<V1PodList | Error>) {
  const clock = new FakeClock();
  const lists: string[] = [];
  const api: PodApi = {
    async listPods(selector) {
      lists.push(selector);
      const next = listResults.shift();
      if (!next) throw new Error('no more lists scripted');
      if (next instanceof Error) throw next;
      return next;
    },
    patchPodStatus: async () => ({}),
    deletePod: async () => undefined,
  };
  const watches: OpenWatch[] = [];
  const stream: WatchStream = {
    watch(_path, query, onEvent) {
      let finish!: (err?: Error) => void;
      const done = new Promise<void>((resolve, reject) => (finish = (err) => (err ? reject(err) : resolve())));
      const w: OpenWatch = { query, emit: onEvent, end: (err) => finish(err), aborted: false };
      watches.push(w);
      return {
        done,
        abort: () => {
          w.aborted = true;
          finish();
        },
      };
    },
  };
  const seen: string[] = [];
  let synced = 0;
  const reflector = new PodReflector({
    api,
    stream,
    nodeName: 'n1',
    clock,
    logger: silentLogger(),
    resyncPeriodMs: 60_000,
    stallTimeoutMs: 30_000,
    backoffInitialMs: 1000,
    backoffMaxMs: 4000,
    handler: {
      onAdd: (p) => seen.push(`add ${p.metadata!.uid}@${p.metadata!.resourceVersion}`),
      onUpdate: (p) => seen.push(`update ${p.metadata!.uid}@${p.metadata!.resourceVersion}`),
      onDelete: (p) => seen.push(`delete ${p.metadata!.uid}`),
      onResync: (p) => seen.push(`resync ${p.metadata!.uid}`),
      onSynced: () => synced++,
    },
  });
  return { clock, lists, watches, seen, reflector, synced: () => synced };
}

const list = (rv: string, ...pods: V1Pod[]): V1PodList => ({ items: pods, metadata: { resourceVersion: rv } });
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

test('lists with the node field selector, then watches from the list resourceVersion with bookmarks', async () => {
  const h = harness([list('10', pod('a', '5'))]);
  h.reflector.start();
  await settle();
  assert.deepEqual(h.lists, ['spec.nodeName=n1']);
  assert.equal(h.synced(), 1);
  assert.equal(h.watches.length, 1);
  assert.equal(h.watches[0]!.query.resourceVersion, '10');
  assert.equal(h.watches[0]!.query.allowWatchBookmarks, true);
  assert.equal(h.watches[0]!.query.fieldSelector, 'spec.nodeName=n1');
  h.watches[0]!.emit('ADDED', pod('b', '11'));
  h.watches[0]!.emit('MODIFIED', pod('a', '12'));
  h.watches[0]!.emit('BOOKMARK', { metadata: { resourceVersion: '15' } });
  h.watches[0]!.emit('DELETED', pod('b', '16'));
  assert.deepEqual(h.seen, ['add a@5', 'add b@11', 'update a@12', 'delete b']);
  // The server closes the watch (its timeout): the next one resumes where the last event left off.
  h.watches[0]!.end();
  await settle();
  assert.equal(h.watches[1]!.query.resourceVersion, '16');
  assert.equal(h.lists.length, 1, 'no relist for a normal watch end');
  await h.reflector.stop();
});

test('a bookmark moves the resume point', async () => {
  const h = harness([list('10')]);
  h.reflector.start();
  await settle();
  h.watches[0]!.emit('BOOKMARK', { metadata: { resourceVersion: '99' } });
  h.watches[0]!.end();
  await settle();
  assert.equal(h.watches[1]!.query.resourceVersion, '99');
  await h.reflector.stop();
});

test('410 Gone relists, and the relist reconciles adds, updates and deletes', async () => {
  const h = harness([list('10', pod('a', '5'), pod('b', '6')), list('30', pod('a', '20'), pod('c', '21'))]);
  h.reflector.start();
  await settle();
  h.watches[0]!.emit('ERROR', { kind: 'Status', code: 410, message: 'too old resource version' });
  await settle();
  assert.equal(h.lists.length, 2);
  assert.deepEqual(h.seen, ['add a@5', 'add b@6', 'update a@20', 'add c@21', 'delete b']);
  assert.equal(h.watches[1]!.query.resourceVersion, '30');
  assert.equal(h.reflector.stats.relistsOnGone, 1);
  await h.reflector.stop();
});

test('a watch quiet past the stall timeout is restarted', async () => {
  const h = harness([list('10')]);
  h.reflector.start();
  await settle();
  h.clock.step(29_000);
  h.watches[0]!.emit('BOOKMARK', { metadata: { resourceVersion: '11' } });
  h.clock.step(29_000);
  await settle();
  assert.equal(h.watches.length, 1, 'an event re-arms the watchdog');
  h.clock.step(2_000);
  await settle();
  assert.ok(h.watches[0]!.aborted);
  assert.equal(h.watches.length, 2);
  assert.equal(h.watches[1]!.query.resourceVersion, '11');
  assert.equal(h.reflector.stats.stalls, 1);
  await h.reflector.stop();
});

test('errors reconnect with capped, jittered exponential backoff; the agent is never stopped by them', async () => {
  const h = harness([new Error('connection refused'), new Error('connection refused'), new Error('connection refused'), new Error('connection refused'), list('10')]);
  h.reflector.start();
  await settle();
  const at: number[] = [];
  for (let i = 0; i < 4; i++) {
    const n = h.lists.length;
    const start = h.clock.now();
    while (h.lists.length === n) {
      h.clock.step(50);
      await settle();
    }
    at.push(h.clock.now() - start);
  }
  // Base 1, 2, 4, 4 s (capped), each jittered into [base/2, base].
  const bases = [1000, 2000, 4000, 4000];
  at.forEach((ms, i) => assert.ok(ms >= bases[i]! / 2 && ms <= bases[i]! + 50, `retry ${i + 1} after ${ms} ms`));
  assert.equal(h.synced(), 1);
  await h.reflector.stop();
});

test('every resync period the cache is replayed to the handler, with no API call', async () => {
  const h = harness([list('10', pod('a', '5'))]);
  h.reflector.start();
  await settle();
  h.clock.step(60_000);
  await settle();
  assert.deepEqual(h.seen, ['add a@5', 'resync a']);
  assert.equal(h.lists.length, 1);
  await h.reflector.stop();
});
