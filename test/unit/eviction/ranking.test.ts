import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { decimalQuantityText, evictionMessage } from '../../../src/eviction/messages.js';
import { diskStatsFor, podDiskUsage, rankDiskPressure, rankFor, rankMemoryPressure, rankPIDPressure } from '../../../src/eviction/ranking.js';
import { parseThresholds } from '../../../src/eviction/thresholds.js';
import type { PodSummary } from '../../../src/server/stats.js';

const Mi = 1024 * 1024;
const pod = (uid: string, requests: Record<string, string> = {}, priority?: number, volumes: object[] = []): V1Pod =>
  ({ metadata: { uid, name: uid, namespace: 'n' }, spec: { priority, volumes, containers: [{ name: 'c', resources: { requests } }] } }) as V1Pod;
const summary = (uid: string, s: Partial<PodSummary> = {}): [string, PodSummary] => [uid, { podRef: { name: uid, namespace: 'n', uid }, startTime: '', containers: [], ...s }];
const mem = (uid: string, wsMi: number) => summary(uid, { memory: { time: '', workingSetBytes: wsMi * Mi }, containers: [{ name: 'c', startTime: '', memory: { time: '', workingSetBytes: wsMi * Mi } }] });
const disk = (uid: string, rootMi: number, logsMi: number, volumes: Array<[string, number]> = []) =>
  summary(uid, {
    containers: [{ name: 'c', startTime: '', rootfs: { time: '', usedBytes: rootMi * Mi, inodesUsed: rootMi }, logs: { time: '', usedBytes: logsMi * Mi, inodesUsed: 1 } }],
    volume: volumes.map(([name, mi]) => ({ name, time: '', usedBytes: mi * Mi, inodesUsed: mi })),
  });
const uids = (pods: V1Pod[]) => pods.map((p) => p.metadata!.uid);

test('memory: over its request first, then lower priority, then the larger use above request; a pod without stats before all', () => {
  const pods = [pod('within', { memory: '512Mi' }), pod('over-small', { memory: '10Mi' }), pod('over-big'), pod('over-high-priority', {}, 1000), pod('no-stats')];
  const stats = new Map([mem('within', 100), mem('over-small', 60), mem('over-big', 300), mem('over-high-priority', 900)]);
  assert.deepEqual(uids(rankMemoryPressure(pods, stats)), ['no-stats', 'over-big', 'over-small', 'over-high-priority', 'within']);
});

test('pids: lower priority first, then more processes', () => {
  const stats = new Map([summary('few', { process_stats: { process_count: 3 } }), summary('many', { process_stats: { process_count: 300 } }), summary('vip', { process_stats: { process_count: 900 } })]);
  assert.deepEqual(uids(rankPIDPressure([pod('few'), pod('vip', {}, 10), pod('many')], stats)), ['many', 'few', 'vip']);
});

test('disk: what counts depends on the signal and on whether images have a filesystem of their own', () => {
  const p = pod('p', {}, undefined, [{ name: 'scratch', emptyDir: {} }, { name: 'ram', emptyDir: { medium: 'Memory' } }]);
  const [, s] = disk('p', 5, 2, [['scratch', 10], ['ram', 100]]);
  assert.deepEqual(podDiskUsage(s, p, diskStatsFor('nodefs.available', false)), { bytes: 17 * Mi, inodes: 5 + 1 + 10 }, 'one filesystem: everything but the memory-backed volume');
  assert.equal(podDiskUsage(s, p, diskStatsFor('nodefs.available', true)).bytes, 12 * Mi, 'nodefs of its own: logs and local volumes');
  assert.equal(podDiskUsage(s, p, diskStatsFor('imagefs.available', true)).bytes, 5 * Mi, 'imagefs: writable layers');
  const pods = [pod('small'), pod('big'), pod('asked', { 'ephemeral-storage': '1Gi' }), pod('vip', {}, 100)];
  const stats = new Map([disk('small', 1, 0), disk('big', 50, 0), disk('asked', 400, 0), disk('vip', 900, 0)]);
  assert.deepEqual(uids(rankDiskPressure(pods, stats, ['root'], 'ephemeral-storage')), ['big', 'small', 'vip', 'asked'], 'over request first, then priority, then use above request');
  assert.deepEqual(uids(rankFor('nodefs.inodesFree', pods, stats, false)), ['big', 'small', 'asked', 'vip'], 'inodes: no request to be within');
});

test('the message: the threshold met, then each container over its request, in the kubelet\'s words and quantities', () => {
  const thresholds = parseThresholds({ evictionHard: { 'memory.available': '100Mi', 'nodefs.inodesFree': '5%' }, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, enforceNodeAllocatable: [] });
  const obs = { 'memory.available': { available: 90 * Mi, capacity: 2048 * Mi }, 'nodefs.inodesFree': { available: 4000, capacity: 100_000 } };
  assert.equal(evictionMessage('memory', pod('p', { memory: '64Mi' }), mem('p', 300)[1], thresholds, obs), 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container c was using 300Mi, request is 64Mi, has larger consumption of memory. ');
  assert.equal(evictionMessage('memory', pod('p'), mem('p', 300)[1], thresholds, obs), 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container c was using 300Mi, request is 0, has larger consumption of memory. ');
  assert.equal(evictionMessage('inodes', pod('p'), disk('p', 1, 1)[1], thresholds, obs), 'The node was low on resource: inodes. Threshold quantity: 5k, available: 4k. ');
  const withPodLevel = { ...pod('p'), spec: { ...pod('p').spec!, resources: { requests: { memory: '128Mi' } } } } as V1Pod;
  assert.match(evictionMessage('memory', withPodLevel, mem('p', 300)[1], thresholds, obs), /Pod p was using 300Mi, request is 128Mi, has larger consumption of memory\. Container c/);
  const ds = thresholds.concat(parseThresholds({ evictionHard: { 'nodefs.available': '10%' }, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, enforceNodeAllocatable: [] }));
  assert.equal(
    evictionMessage('ephemeral-storage', pod('p'), disk('p', 3, 1)[1], ds, { 'nodefs.available': { available: 5 * Mi, capacity: 100 * Mi } }),
    'The node was low on resource: ephemeral-storage. Threshold quantity: 10Mi, available: 5Mi. Container c was using 4Mi, request is 0, has larger consumption of ephemeral-storage. ',
  );
  assert.equal(decimalQuantityText(123456), '123456');
  assert.equal(decimalQuantityText(2_000_000), '2M');
});
