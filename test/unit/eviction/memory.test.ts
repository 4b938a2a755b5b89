import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { EvictionManager } from '../../../src/eviction/eviction-manager.js';
import { memoryEvictionMessage, memoryThresholdMet, rankMemoryPressure, thresholdBytes } from '../../../src/eviction/memory.js';
import type { PodSummary } from '../../../src/server/stats.js';
import { FakeClock } from '../../../src/util/clock.js';

const Mi = 1024 * 1024;
const pod = (uid: string, requestMi?: number, priority?: number): V1Pod =>
  ({ metadata: { uid, name: uid, namespace: 'n' }, spec: { priority, containers: [{ name: 'c', resources: requestMi === undefined ? {} : { requests: { memory: `${requestMi}Mi` } } }] } }) as V1Pod;
const usage = (uid: string, wsMi: number): [string, PodSummary] => [uid, { podRef: { name: uid, namespace: 'n', uid }, startTime: '', memory: { time: '', workingSetBytes: wsMi * Mi }, containers: [{ name: 'c', startTime: '', memory: { time: '', workingSetBytes: wsMi * Mi } }] }];

test('thresholds: a quantity or a share of the signal\'s capacity; met when available is below it', () => {
  assert.equal(thresholdBytes('100Mi', 0), 100 * Mi);
  assert.equal(thresholdBytes('10%', 1000 * Mi), 100 * Mi);
  const obs = [{ signal: 'memory.available' as const, availableBytes: 500 * Mi, capacityBytes: 2048 * Mi }, { signal: 'allocatableMemory.available' as const, availableBytes: 50 * Mi, capacityBytes: 1024 * Mi }];
  assert.equal(memoryThresholdMet(obs, '100Mi')?.observation.signal, 'allocatableMemory.available');
  assert.equal(memoryThresholdMet(obs.slice(0, 1), '100Mi'), undefined);
});

test('the ranking: over its request first, then lower priority, then the larger use above request; a pod without stats before all', () => {
  const pods = [pod('within', 512), pod('over-small', 10), pod('over-big', 0), pod('over-high-priority', 0, 1000), pod('no-stats')];
  const stats = new Map([usage('within', 100), usage('over-small', 60), usage('over-big', 300), usage('over-high-priority', 900)]);
  assert.deepEqual(rankMemoryPressure(pods, stats).map((p) => p.metadata!.uid), ['no-stats', 'over-big', 'over-small', 'over-high-priority', 'within']);
});

test('the message: the threshold met, then each container over its request, in the kubelet\'s words', () => {
  const met = { observation: { signal: 'memory.available' as const, availableBytes: 90 * Mi, capacityBytes: 2048 * Mi }, quantity: 100 * Mi };
  assert.equal(memoryEvictionMessage(pod('p', 64), usage('p', 300)[1], met), 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container c was using 300Mi, request is 64Mi, has larger consumption of memory. ');
  assert.equal(memoryEvictionMessage(pod('p'), usage('p', 300)[1], met), 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container c was using 300Mi, request is 0, has larger consumption of memory. ');
});

test('the eviction manager evicts one pod a pass under memory pressure, never a critical one', async () => {
  const evicted: string[] = [];
  let available = 500 * Mi;
  const m = new EvictionManager({
    clock: new FakeClock(0),
    logger: { info: () => undefined, warn: () => undefined, debug: () => undefined, error: () => undefined } as never,
    activePods: () => [pod('critical', 0, 2_000_000_000), pod('hog', 0), pod('small', 0)],
    podStats: async () => new Map([usage('critical', 900), usage('hog', 400), usage('small', 10)]),
    isCritical: (p) => (p.spec?.priority ?? 0) >= 2_000_000_000,
    evict: (p) => evicted.push(p.metadata!.uid!),
    memoryThreshold: '100Mi',
    observeMemory: () => [{ signal: 'memory.available', availableBytes: available, capacityBytes: 2048 * Mi }],
  });
  assert.deepEqual(await m.synchronize(), []);
  available = 80 * Mi;
  await m.synchronize();
  assert.deepEqual(evicted, ['hog']);
});
