import assert from 'node:assert/strict';
import test from 'node:test';
import { emptyEvictionState, evaluate, EvictionConfigError, hardEvictionReservation, parseThresholds, thresholdQuantity, thresholdsMet, type ThresholdConfig } from '../../../src/eviction/thresholds.js';

const Mi = 1024 * 1024;
const cfg = (c: Partial<ThresholdConfig>): ThresholdConfig => ({ evictionHard: {}, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, enforceNodeAllocatable: [], ...c });

test('parsing: hard, soft with its grace period, minimum reclaim; allocatableMemory.available beside a hard memory.available when pods are enforced', () => {
  const t = parseThresholds(
    cfg({
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'imagefs.inodesFree': '0%', 'containerfs.available': '5%' },
      evictionSoft: { 'memory.available': '300Mi' },
      evictionSoftGracePeriod: { 'memory.available': '1m30s' },
      evictionMinimumReclaim: { 'memory.available': '50Mi' },
      enforceNodeAllocatable: ['pods'],
    }),
  );
  const show = t.map((x) => `${x.signal} ${JSON.stringify(x.value)} ${x.gracePeriodMs} ${x.minReclaim ? JSON.stringify(x.minReclaim) : '-'}`);
  assert.deepEqual(show, [
    `memory.available {"quantity":${100 * Mi}} 0 {"quantity":${50 * Mi}}`,
    'nodefs.available {"percentage":0.1} 0 -',
    `memory.available {"quantity":${300 * Mi}} 90000 {"quantity":${50 * Mi}}`,
    `allocatableMemory.available {"quantity":${100 * Mi}} 0 {"quantity":${50 * Mi}}`,
  ]);
});

test('parsing refuses what the kubelet refuses, in its words', () => {
  const refused = (c: Partial<ThresholdConfig>, re: RegExp) => assert.throws(() => parseThresholds(cfg(c)), (e: Error) => e instanceof EvictionConfigError && re.test(e.message));
  refused({ evictionHard: { 'memory.free': '1Mi' } }, /^unsupported eviction signal memory\.free$/);
  refused({ evictionHard: { 'nodefs.available': '150%' } }, /^eviction percentage threshold nodefs\.available must be <= 100%: 150%$/);
  refused({ evictionHard: { 'nodefs.available': '-5%' } }, /^eviction percentage threshold nodefs\.available must be >= 0%: -5%$/);
  refused({ evictionHard: { 'memory.available': '-100Mi' } }, /^eviction threshold memory\.available must be positive: -100Mi$/);
  refused({ evictionHard: { 'memory.available': 'lots' } }, /^quantities must match/);
  refused({ evictionSoft: { 'memory.available': '1Gi' } }, /^grace period must be specified for the soft eviction threshold memory\.available$/);
  refused({ evictionSoftGracePeriod: { 'memory.available': 'soon' } }, /^time: invalid duration "soon"$/);
  refused({ evictionMinimumReclaim: { 'nodefs.available': '0%' } }, /^eviction percentage minimum reclaim nodefs\.available must be positive: 0%$/);
});

test('a threshold is met while available is below it; with minimum reclaim, until that much more is free', () => {
  const [t] = parseThresholds(cfg({ evictionHard: { 'memory.available': '10%' }, evictionMinimumReclaim: { 'memory.available': '5%' } }));
  assert.equal(thresholdQuantity(t!.value, 1000 * Mi), Math.floor(0.1 * 1000 * Mi));
  const obs = (availMi: number) => ({ 'memory.available': { available: availMi * Mi, capacity: 1000 * Mi } });
  assert.equal(thresholdsMet([t!], obs(99), false).length, 1);
  assert.equal(thresholdsMet([t!], obs(120), false).length, 0);
  assert.equal(thresholdsMet([t!], obs(120), true).length, 1, '120Mi < 100Mi + 50Mi');
  assert.equal(thresholdsMet([t!], {}, false).length, 0, 'no observation: not met');
});

test('evaluation: a soft threshold acts after its grace period; a met one stays until its minimum reclaim; conditions hold for the transition period', () => {
  const thresholds = parseThresholds(
    cfg({ evictionHard: { 'nodefs.available': '10%' }, evictionMinimumReclaim: { 'nodefs.available': '10%' }, evictionSoft: { 'memory.available': '500Mi' }, evictionSoftGracePeriod: { 'memory.available': '30s' } }),
  );
  const obs = (memMi: number, diskPct: number) => ({ 'memory.available': { available: memMi * Mi, capacity: 4096 * Mi }, 'nodefs.available': { available: diskPct, capacity: 100 } });
  let ev = evaluate(thresholds, obs(400, 50), emptyEvictionState(), 0, 300_000);
  assert.deepEqual([...ev.conditions], ['MemoryPressure'], 'observed at once');
  assert.deepEqual(ev.actionable, [], 'the grace period runs');
  ev = evaluate(thresholds, obs(400, 50), ev.state, 30_000, 300_000);
  assert.deepEqual(ev.actionable.map((t) => t.signal), ['memory.available']);
  ev = evaluate(thresholds, obs(400, 5), ev.state, 40_000, 300_000);
  assert.deepEqual(ev.actionable.map((t) => t.signal), ['memory.available', 'nodefs.available'], 'memory first');
  ev = evaluate(thresholds, obs(1000, 15), ev.state, 50_000, 300_000);
  assert.deepEqual(ev.actionable.map((t) => t.signal), ['nodefs.available'], 'over its threshold but not past its minimum reclaim (20%)');
  ev = evaluate(thresholds, obs(1000, 25), ev.state, 60_000, 300_000);
  assert.deepEqual(ev.actionable, []);
  assert.deepEqual([...ev.conditions].sort(), ['DiskPressure', 'MemoryPressure'], 'still within the transition period');
  ev = evaluate(thresholds, obs(1000, 25), ev.state, 40_000 + 300_000, 300_000);
  assert.deepEqual([...ev.conditions], ['DiskPressure'], 'memory last seen at 40 s: its period is over');
  ev = evaluate(thresholds, obs(400, 25), ev.state, 400_000, 300_000);
  assert.deepEqual(ev.actionable, [], 'met again: a new grace period');
});

test('the hard thresholds kept out of allocatable', () => {
  const t = parseThresholds(cfg({ evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' }, evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '1m' } }));
  assert.equal(hardEvictionReservation(t, 'memory.available', 8192 * Mi), 100 * Mi);
  assert.equal(hardEvictionReservation(t, 'nodefs.available', 1000), 100);
  assert.equal(hardEvictionReservation([], 'memory.available', 8192 * Mi), 0);
});
