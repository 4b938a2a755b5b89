import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { admitPod, admitPodHere, insufficientResources } from '../../../src/pods/admission.js';
import { SysctlAllowlist } from '../../../src/pods/sysctls.js';
import { podsToPreempt, preemptable, PreemptionError, requirementsOf } from '../../../src/preemption/preemption.js';

const CRITICAL = 2_000_001_000;
const pod = (uid: string, requests: Record<string, string> = {}, priority?: number, limits?: Record<string, string>): V1Pod =>
  ({ metadata: { uid, name: uid, namespace: 'n' }, spec: { priority, containers: [{ name: 'c', resources: { requests, ...(limits ? { limits } : {}) } }] } }) as V1Pod;
const node = (allocatable: Record<string, string>): V1Node => ({ metadata: { name: 'n', labels: {} }, status: { allocatable: { pods: '110', ...allocatable } } });
const uids = (pods: V1Pod[]) => pods.map((p) => p.metadata!.uid);

test('admission: each resource the node lacks, in the kubelet\'s order and words; extended resources too, unless the node does not advertise them', () => {
  const n = node({ cpu: '2', memory: '1Gi', 'ephemeral-storage': '10Gi', 'example.com/gpu': '1' });
  const busy = [pod('a', { cpu: '1500m', 'ephemeral-storage': '9Gi', 'example.com/gpu': '1' }, undefined, { 'example.com/gpu': '1' })];
  const want = pod('w', { cpu: '1', 'ephemeral-storage': '2Gi', 'example.com/gpu': '1', 'cluster.io/licence': '1' }, undefined, { 'example.com/gpu': '1' });
  assert.deepEqual(
    insufficientResources(want, n, busy).map((r) => `${r.resourceName} ${r.requested} ${r.used} ${r.capacity}`),
    ['cpu 1000 1500 2000', `ephemeral-storage ${2 * 2 ** 30} ${9 * 2 ** 30} ${10 * 2 ** 30}`, 'example.com/gpu 1 1 1'],
  );
  assert.deepEqual(admitPod(want, n, busy), { admit: false, reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000" });
  const gpuOnly = pod('g', { 'example.com/gpu': '1' }, undefined, { 'example.com/gpu': '1' });
  assert.deepEqual(admitPod(gpuOnly, n, busy), { admit: false, reason: 'OutOfexample.com/gpu', message: "Node didn't have enough resource: example.com/gpu, requested: 1, used: 1, capacity: 1" });
  assert.equal(admitPod(pod('h', { 'hugepages-2Mi': '2Mi' }, undefined, { 'hugepages-2Mi': '2Mi', memory: '10Mi' }), n, []).admit, false, 'no hugepages advertised: none to have');
});

test('preemptable: a critical pod any other but critical ones; else only a higher priority a lower', () => {
  assert.ok(preemptable(pod('c', {}, CRITICAL), pod('x', {}, 1_000_000)));
  assert.ok(!preemptable(pod('c', {}, CRITICAL), pod('y', {}, CRITICAL)));
  assert.ok(preemptable(pod('p', {}, 10), pod('q', {}, 5)));
  assert.ok(!preemptable(pod('p', {}, 10), pod('q')));
});

test('which pods: BestEffort before Burstable before Guaranteed, the fewest and closest to what is missing', () => {
  const be = pod('be');
  const small = pod('burst-small', { cpu: '100m' });
  const big = pod('burst-big', { cpu: '800m' });
  const fit = pod('burst-fit', { cpu: '500m' });
  const guaranteed = pod('guar', { cpu: '1', memory: '1Gi' }, undefined, { cpu: '1', memory: '1Gi' });
  const critical = pod('crit', { cpu: '500m' }, CRITICAL);
  const active = [be, small, big, fit, guaranteed];
  assert.deepEqual(uids(podsToPreempt(critical, active, [{ resourceName: 'cpu', quantity: 450 }])), ['burst-fit'], 'the one closest to 450m');
  assert.deepEqual(uids(podsToPreempt(critical, active, [{ resourceName: 'cpu', quantity: 1300 }])), ['burst-big', 'burst-fit'], 'Burstable ones suffice: the Guaranteed pod stays');
  assert.deepEqual(uids(podsToPreempt(critical, active, [{ resourceName: 'cpu', quantity: 2300 }])), ['burst-big', 'burst-fit', 'guar'], 'the Guaranteed pod for what Burstable ones cannot free; then only the Burstable ones still needed');
  assert.throws(() => podsToPreempt(critical, active, [{ resourceName: 'cpu', quantity: 5000 }]), (e: Error) => e instanceof PreemptionError && e.message === 'no set of running pods found to reclaim resources: [(res: cpu, q: 2600), ]');
  assert.deepEqual(requirementsOf([{ resourceName: 'cpu', requested: 600, used: 1500, capacity: 2000 }]), [{ resourceName: 'cpu', quantity: 100 }]);
});

test('admission: a critical pod short only of resources is admitted with pods to preempt; short of anything else, or not critical, refused', () => {
  const here = (admitted: V1Pod[]) => ({ node: node({ cpu: '1', memory: '1Gi' }), admitted, sysctls: new SysctlAllowlist([]), appArmorEnabled: false });
  const victim = pod('victim', { cpu: '600m' });
  const verdict = admitPodHere(pod('crit', { cpu: '600m' }, CRITICAL), here([victim]));
  assert.ok(verdict.admit && 'preempt' in verdict && uids(verdict.preempt).join() === 'victim');
  const plain = admitPodHere(pod('plain', { cpu: '600m' }), here([victim]));
  assert.deepEqual(plain, { admit: false, reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000" });
  const otherCritical = admitPodHere(pod('crit2', { cpu: '600m' }, CRITICAL), here([pod('crit1', { cpu: '600m' }, CRITICAL)]));
  assert.deepEqual(otherCritical.admit ? undefined : [otherCritical.reason, otherCritical.message], [
    'UnexpectedAdmissionError',
    'Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 200), ]',
  ]);
  const withSelector = { ...pod('sel', { cpu: '600m' }, CRITICAL), spec: { ...pod('sel', { cpu: '600m' }, CRITICAL).spec!, nodeSelector: { disk: 'ssd' } } } as V1Pod;
  const refused = admitPodHere(withSelector, here([victim]));
  assert.equal(refused.admit ? 'admitted' : refused.reason, 'NodeAffinity', 'what preemption cannot help is the answer');
});
