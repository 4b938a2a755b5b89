import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { EvictionManager } from '../../../src/eviction/eviction-manager.js';
import { hasLocalStorageLimits, localStorageViolation, quantityText } from '../../../src/eviction/local-storage.js';
import type { PodSummary } from '../../../src/server/stats.js';
import { FakeClock } from '../../../src/util/clock.js';

const Mi = 1024 * 1024;
const pod = (spec: Record<string, unknown>, uid = 'u'): V1Pod => ({ metadata: { uid, name: uid, namespace: 'n' }, spec: { containers: [], ...spec } }) as V1Pod;
const stats = (s: Partial<PodSummary>): PodSummary => ({ podRef: { name: 'p', namespace: 'n', uid: 'u' }, startTime: '', containers: [], ...s });

test('an emptyDir over its sizeLimit, in the kubelet\'s words; a memory-backed one is the kernel\'s to hold', () => {
  const p = pod({ volumes: [{ name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }, { name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }], containers: [{ name: 'c' }] });
  assert.ok(hasLocalStorageLimits(p));
  assert.equal(localStorageViolation(p, stats({ volume: [{ name: 'scratch', time: '', usedBytes: Mi }, { name: 'mem', time: '', usedBytes: 5 * Mi }] })), undefined);
  assert.equal(localStorageViolation(p, stats({ volume: [{ name: 'scratch', time: '', usedBytes: Mi + 1 }] })), 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ');
});

test('a container over its ephemeral-storage limit counts its writable layer and its logs; the pod\'s total limit first', () => {
  const p = pod({ containers: [{ name: 'a', resources: { limits: { 'ephemeral-storage': '2Mi' } } }, { name: 'b', resources: { limits: { 'ephemeral-storage': '2Mi' } } }] });
  const c = (name: string, rootfs: number, logs: number) => ({ name, startTime: '', rootfs: { time: '', usedBytes: rootfs }, logs: { time: '', usedBytes: logs } });
  assert.equal(localStorageViolation(p, stats({ containers: [c('a', Mi, Mi), c('b', 0, 0)], 'ephemeral-storage': { time: '', usedBytes: 2 * Mi } })), undefined);
  assert.equal(localStorageViolation(p, stats({ containers: [c('a', Mi, Mi + 1), c('b', 0, 0)], 'ephemeral-storage': { time: '', usedBytes: 2 * Mi + 1 } })), 'Container a exceeded its local ephemeral storage limit "2Mi". ');
  assert.equal(localStorageViolation(p, stats({ containers: [c('a', Mi, Mi), c('b', 0, 0)], 'ephemeral-storage': { time: '', usedBytes: 4 * Mi + 1 } })), 'Pod ephemeral local storage usage exceeds the total limit of containers 4Mi. ');
  // One container without a limit: no pod-level limit, only the other's own.
  const open = pod({ containers: [{ name: 'a', resources: { limits: { 'ephemeral-storage': '2Mi' } } }, { name: 'b' }] });
  assert.equal(localStorageViolation(open, stats({ containers: [c('b', 10 * Mi, 0)], 'ephemeral-storage': { time: '', usedBytes: 10 * Mi } })), undefined);
  assert.ok(!hasLocalStorageLimits(pod({ containers: [{ name: 'x' }], volumes: [{ name: 'v', emptyDir: {} }] })));
  assert.equal(quantityText(4 * Mi), '4Mi');
  assert.equal(quantityText(1500), '1500');
});

test('the eviction manager: pods over a limit evicted, critical ones spared, no stats read without a limit to watch', async () => {
  const clock = new FakeClock(0);
  const limited = pod({ volumes: [{ name: 's', emptyDir: { sizeLimit: '1Mi' } }], containers: [{ name: 'c' }] }, 'over');
  const critical = pod({ priority: 2_000_000_000, volumes: [{ name: 's', emptyDir: { sizeLimit: '1Mi' } }], containers: [{ name: 'c' }] }, 'critical');
  const evicted: Array<[string, string]> = [];
  let reads = 0;
  let active = [pod({ containers: [{ name: 'c' }] }, 'plain')];
  const over = stats({ volume: [{ name: 's', time: '', usedBytes: 2 * Mi }] });
  const m = new EvictionManager({
    clock,
    logger: { info: () => undefined, warn: () => undefined, debug: () => undefined, error: () => undefined } as never,
    activePods: () => active,
    podStats: async () => {
      reads++;
      return new Map([['over', over], ['critical', over]]);
    },
    isCritical: (p) => (p.spec?.priority ?? 0) >= 2_000_000_000,
    evict: (p, e) => evicted.push([p.metadata!.uid!, `${e.gracePeriodSeconds} ${e.disruptionTarget} ${e.message}`]),
    thresholds: [],
    pressureTransitionPeriodMs: 300_000,
    maxPodGracePeriodSeconds: 0,
    observe: async () => ({}),
    nodeEvent: () => undefined,
    dedicatedImageFs: () => false,
  });
  assert.deepEqual(await m.synchronize(), []);
  assert.equal(reads, 0, 'no pod with a limit: no stats read');
  active = [limited, critical];
  await m.synchronize();
  assert.deepEqual(evicted, [['over', '1 false Usage of EmptyDir volume "s" exceeds the limit "1Mi". ']], 'at once (1 s), with no DisruptionTarget');
});
