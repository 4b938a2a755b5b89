import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { limitsDeclared, podLimit, podRequest } from '../../../src/cm/pod-resources.js';
import { allocatableConfig, burstableShares, parseCgroupfs, podCgroupName, resourceConfigForPod, toCgroupfs } from '../../../src/cm/resource-config.js';

type R = { requests?: Record<string, string>; limits?: Record<string, string> };
const pod = (containers: R[], extra: Record<string, unknown> = {}, uid = 'u1'): V1Pod =>
  ({ metadata: { uid }, spec: { containers: containers.map((resources, i) => ({ name: `c${i}`, resources })), ...extra } }) as V1Pod;
const Mi = 1024 * 1024;

test('a Guaranteed pod cgroup: shares, quota and the sum of its memory limits, overhead added', () => {
  const two = pod([{ limits: { cpu: '100m', memory: '64Mi' } }, { limits: { cpu: '200m', memory: '64Mi' } }]);
  assert.deepEqual(resourceConfigForPod(two, { cpuCFSQuota: true }), { cpuShares: 307, cpuQuota: 30000, cpuPeriod: 100000, memory: 128 * Mi });
  const withOverhead = pod([{ limits: { cpu: '100m', memory: '64Mi' } }], { overhead: { cpu: '50m', memory: '16Mi' } });
  assert.deepEqual(resourceConfigForPod(withOverhead, { cpuCFSQuota: true }), { cpuShares: 153, cpuQuota: 15000, cpuPeriod: 100000, memory: 80 * Mi });
  // CFS quota disabled: no quota.
  assert.equal(resourceConfigForPod(two, { cpuCFSQuota: false }).cpuQuota, -1);
});

test('a Burstable pod cgroup: a limit only when every container declares one', () => {
  const partial = pod([{ requests: { cpu: '100m', memory: '32Mi' }, limits: { memory: '64Mi' } }, { requests: { cpu: '100m' } }]);
  assert.deepEqual(resourceConfigForPod(partial, { cpuCFSQuota: true }), { cpuShares: 204 });
  const allMemory = pod([{ requests: { cpu: '100m' }, limits: { memory: '64Mi' } }, { limits: { memory: '32Mi' } }]);
  assert.deepEqual(resourceConfigForPod(allMemory, { cpuCFSQuota: true }), { cpuShares: 102, memory: 96 * Mi });
  // Pod-level limits count as declared.
  const podLevel = pod([{ requests: { cpu: '100m' } }, {}], { resources: { requests: { cpu: '200m' }, limits: { cpu: '1', memory: '256Mi' } } });
  assert.deepEqual(resourceConfigForPod(podLevel, { cpuCFSQuota: true }), { cpuShares: 204, cpuQuota: 100000, cpuPeriod: 100000, memory: 256 * Mi });
  assert.ok(limitsDeclared(podLevel, 'memory'));
  assert.ok(!limitsDeclared(partial, 'memory'));
});

test('a BestEffort pod cgroup gets the minimum shares and nothing else', () => {
  assert.deepEqual(resourceConfigForPod(pod([{}]), { cpuCFSQuota: true }), { cpuShares: 2 });
});

test('requests and limits count sidecars and init containers as the kubelet does', () => {
  const p = pod([{ requests: { cpu: '100m' }, limits: { memory: '100Mi' } }], {
    initContainers: [
      { name: 'side', restartPolicy: 'Always', resources: { requests: { cpu: '50m' }, limits: { memory: '20Mi' } } },
      { name: 'big-init', resources: { requests: { cpu: '500m' }, limits: { memory: '300Mi' } } },
    ],
  });
  // Regular + sidecar = 150m; the init container runs beside the sidecar started before it: 550m.
  assert.equal(podRequest(p, 'cpu'), 550);
  assert.equal(podLimit(p, 'memory'), 320 * Mi);
  // Overhead goes only on a limit that is there.
  const noLimit = pod([{ requests: { cpu: '100m' } }], { overhead: { cpu: '10m', memory: '5Mi' } });
  assert.equal(podLimit(noLimit, 'memory'), 0);
  assert.equal(podRequest(noLimit, 'memory'), 5 * Mi);
  assert.equal(podRequest(noLimit, 'cpu', { excludeOverhead: true }), 100);
});

test('pod cgroup names: Guaranteed directly under kubepods, the others under their class', () => {
  const kubepods = [...parseCgroupfs('/nodelet-tests/n1'), 'kubepods'];
  assert.equal(toCgroupfs(podCgroupName(kubepods, pod([{ limits: { cpu: '1', memory: '1Gi' } }], {}, 'abc'))), '/nodelet-tests/n1/kubepods/podabc');
  assert.equal(toCgroupfs(podCgroupName(kubepods, pod([{ requests: { cpu: '1' } }], {}, 'abc'))), '/nodelet-tests/n1/kubepods/burstable/podabc');
  assert.equal(toCgroupfs(podCgroupName(['kubepods'], pod([{}], {}, 'abc'))), '/kubepods/besteffort/podabc');
  // The API's stored class is the one used (it never changes).
  assert.equal(toCgroupfs(podCgroupName(['kubepods'], { ...pod([{}], {}, 'x'), status: { qosClass: 'Burstable' } })), '/kubepods/burstable/podx');
  assert.deepEqual(parseCgroupfs('/'), []);
});

test('kubepods from allocatable; the Burstable class from its pods\' requests', () => {
  assert.deepEqual(allocatableConfig({ milliCPU: 1800, memory: 1000, pids: 4096 }), { cpuShares: 1843, memory: 1000, pidsLimit: 4096 });
  const pods = [pod([{ requests: { cpu: '250m' } }]), pod([{ requests: { cpu: '250m' } }]), pod([{ limits: { cpu: '1', memory: '1Gi' } }]), pod([{}])];
  assert.equal(burstableShares(pods), 512);
  assert.equal(burstableShares([]), 2);
});
