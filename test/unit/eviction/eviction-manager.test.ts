import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { EvictionManager, type EvictionManagerDeps } from '../../../src/eviction/eviction-manager.js';
import { parseThresholds, type Observations, type ThresholdConfig } from '../../../src/eviction/thresholds.js';
import type { PodSummary } from '../../../src/server/stats.js';
import { FakeClock } from '../../../src/util/clock.js';

const Mi = 1024 * 1024;
const pod = (uid: string, priority?: number, grace?: number): V1Pod =>
  ({ metadata: { uid, name: uid, namespace: 'n' }, spec: { priority, terminationGracePeriodSeconds: grace, containers: [{ name: 'c' }] } }) as V1Pod;
const usage = (uid: string, wsMi: number, rootMi = 0): [string, PodSummary] => [
  uid,
  { podRef: { name: uid, namespace: 'n', uid }, startTime: '', memory: { time: '', workingSetBytes: wsMi * Mi }, containers: [{ name: 'c', startTime: '', memory: { time: '', workingSetBytes: wsMi * Mi }, rootfs: { time: '', usedBytes: rootMi * Mi }, logs: { time: '', usedBytes: 0 } }] },
];
const thresholds = (c: Partial<ThresholdConfig>) => parseThresholds({ evictionHard: {}, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, enforceNodeAllocatable: [], ...c });

function harness(over: Partial<EvictionManagerDeps> & { obs: () => Observations }) {
  const clock = new FakeClock(0);
  const evicted: string[] = [];
  const events: string[] = [];
  const m = new EvictionManager({
    clock,
    logger: { info: () => undefined, warn: () => undefined, debug: () => undefined, error: () => undefined } as never,
    thresholds: [],
    pressureTransitionPeriodMs: 300_000,
    maxPodGracePeriodSeconds: 20,
    activePods: () => [pod('critical', 2_000_000_000), pod('hog', 0, 60), pod('small', 0)],
    podStats: async () => new Map([usage('critical', 900, 900), usage('hog', 400, 400), usage('small', 10, 1)]),
    isCritical: (p) => (p.spec?.priority ?? 0) >= 2_000_000_000,
    evict: (p, e) => evicted.push(`${p.metadata!.uid} ${e.gracePeriodSeconds}s ${e.disruptionTarget ? 'DisruptionTarget' : '-'}`),
    nodeEvent: (type, reason, message) => events.push(`${type} ${reason} ${message}`),
    dedicatedImageFs: () => false,
    observe: async () => over.obs(),
    ...over,
  });
  return { m, clock, evicted, events };
}

test('a hard memory threshold: one pod a pass, at once, with DisruptionTarget; never a critical one; MemoryPressure reported', async () => {
  let available = 500 * Mi;
  const h = harness({ thresholds: thresholds({ evictionHard: { 'memory.available': '100Mi' } }), obs: () => ({ 'memory.available': { available, capacity: 2048 * Mi } }) });
  assert.deepEqual(await h.m.synchronize(), []);
  assert.equal(h.m.conditions().size, 0);
  available = 80 * Mi;
  await h.m.synchronize();
  assert.deepEqual(h.evicted, ['hog 1s DisruptionTarget']);
  assert.deepEqual(h.events, ['Warning EvictionThresholdMet Attempting to reclaim memory']);
  assert.deepEqual([...h.m.conditions()], ['MemoryPressure']);
});

test('a soft threshold waits for its grace period, then evicts with the smaller of evictionMaxPodGracePeriod and the pod\'s own', async () => {
  const h = harness({
    thresholds: thresholds({ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '30s' } }),
    obs: () => ({ 'memory.available': { available: 512 * Mi, capacity: 2048 * Mi } }),
  });
  await h.m.synchronize();
  assert.deepEqual(h.evicted, [], 'within the grace period');
  assert.deepEqual([...h.m.conditions()], ['MemoryPressure'], 'the condition does not wait');
  h.clock.step(30_000);
  await h.m.synchronize();
  assert.deepEqual(h.evicted, ['hog 20s DisruptionTarget'], 'min(20, 60)');
});

test('disk pressure: dead containers and unused images first; pods only when that did not free enough', async () => {
  let availablePct = 5;
  const reclaimed: string[] = [];
  const reclaimers = {
    deleteAllUnusedContainers: async () => void reclaimed.push('containers'),
    deleteUnusedImages: async () => {
      reclaimed.push('images');
      availablePct += 20;
    },
  };
  const h = harness({ thresholds: thresholds({ evictionHard: { 'nodefs.available': '10%' } }), reclaimers, obs: () => ({ 'nodefs.available': { available: availablePct * Mi, capacity: 100 * Mi } }) });
  await h.m.synchronize();
  assert.deepEqual(reclaimed, ['containers', 'images']);
  assert.deepEqual(h.evicted, [], 'images freed enough');
  assert.deepEqual([...h.m.conditions()], ['DiskPressure']);
  availablePct = 2;
  reclaimers.deleteUnusedImages = async () => void reclaimed.push('images');
  await h.m.synchronize();
  assert.deepEqual(h.evicted, ['hog 1s DisruptionTarget'], 'the largest writer above its request');
});

test('with images on a filesystem of their own, nodefs pressure is not eased by image GC', async () => {
  const reclaimed: string[] = [];
  const h = harness({
    thresholds: thresholds({ evictionHard: { 'nodefs.available': '10%' } }),
    dedicatedImageFs: () => true,
    reclaimers: { deleteAllUnusedContainers: async () => void reclaimed.push('containers'), deleteUnusedImages: async () => void reclaimed.push('images') },
    obs: () => ({ 'nodefs.available': { available: 1 * Mi, capacity: 100 * Mi } }),
  });
  await h.m.synchronize();
  assert.deepEqual(reclaimed, []);
  assert.equal(h.evicted.length, 1);
});
