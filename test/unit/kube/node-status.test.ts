import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { defaultConfig } from '../../../src/config/config.js';
import type { HostInfo } from '../../../src/kube/host.js';
import type { NodeConditionType } from '../../../src/eviction/thresholds.js';
import { capacityAndAllocatable, computeNodeStatus, nodeStatusChanged } from '../../../src/kube/node-status.js';
import { admitPod, podRequests } from '../../../src/pods/admission.js';

const host: HostInfo = {
  hostname: 'h', machineID: 'm', systemUUID: 'u', bootID: 'b', kernelVersion: '6.1', osImage: 'Debian', operatingSystem: 'linux',
  architecture: 'amd64', cpus: 4, memoryBytes: 8 * 2 ** 30, ephemeralStorageBytes: 100e9,
};
const calm: ReadonlySet<NodeConditionType> = new Set();

test('allocatable is capacity minus system and kube reserved and the hard eviction thresholds', () => {
  const c = { ...defaultConfig(), nodeName: 'n', systemReserved: { cpu: '500m', memory: '1Gi' }, kubeReserved: { cpu: '250m' } };
  const { capacity, allocatable } = capacityAndAllocatable(c, host);
  assert.deepEqual(capacity, { cpu: '4', memory: `${8 * 2 ** 20}Ki`, 'ephemeral-storage': '100000000000', pods: '110' });
  assert.equal(allocatable.cpu, '3250m');
  assert.equal(allocatable.memory, `${8 * 2 ** 20 - 2 ** 20 - 100 * 1024}Ki`);
  assert.equal(allocatable['ephemeral-storage'], '90000000000');
  const over = capacityAndAllocatable({ ...c, capacity: { cpu: '2', pods: '20' } }, host);
  assert.equal(over.capacity.cpu, '2');
  assert.equal(over.capacity.pods, '20');
});

const input = (over: Partial<Parameters<typeof computeNodeStatus>[0]> = {}) => ({
  config: { ...defaultConfig(), nodeName: 'n' }, host, nodeIP: '10.0.0.5', kubeletVersion: 'v0.1.0-nodelet', port: 10250,
  runtime: { runtimeVersion: 'containerd://1.6.20' }, pressure: calm, now: 1000, ...over,
});

test('conditions: Ready follows the runtime; pressure is the eviction manager\'s; transitions keep their time', () => {
  const ok = computeNodeStatus(input());
  const byType = (s: typeof ok) => Object.fromEntries(s.conditions!.map((c) => [c.type, `${c.status}/${c.reason}`]));
  assert.deepEqual(byType(ok), { MemoryPressure: 'False/KubeletHasSufficientMemory', DiskPressure: 'False/KubeletHasNoDiskPressure', PIDPressure: 'False/KubeletHasSufficientPID', Ready: 'True/KubeletReady' });
  const down = computeNodeStatus(input({ runtime: { runtimeVersion: 'containerd://1.6.20', notReadyMessage: 'container runtime is down: x' }, previous: ok, now: 5000 }));
  const ready = down.conditions!.find((c) => c.type === 'Ready')!;
  assert.equal(ready.status, 'False');
  assert.equal(ready.reason, 'KubeletNotReady');
  assert.equal(ready.message, 'container runtime is down: x');
  assert.equal(new Date(ready.lastTransitionTime!).getTime(), 5000);
  const mem = down.conditions!.find((c) => c.type === 'MemoryPressure')!;
  assert.equal(new Date(mem.lastTransitionTime!).getTime(), 1000, 'unchanged condition keeps its transition time');
  assert.equal(new Date(mem.lastHeartbeatTime!).getTime(), 5000);
  const pressured = computeNodeStatus(input({ pressure: new Set(['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const) }));
  assert.deepEqual(pressured.conditions!.filter((c) => c.status === 'True').map((c) => c.type).sort(), ['DiskPressure', 'MemoryPressure', 'PIDPressure', 'Ready']);
});

test('a node shutting down is not Ready, in the kubelet\'s words, beside any other reason', () => {
  const ready = (over: object) => computeNodeStatus(input(over)).conditions!.find((c) => c.type === 'Ready')!;
  assert.deepEqual([ready({ shuttingDown: true }).status, ready({ shuttingDown: true }).reason, ready({ shuttingDown: true }).message], ['False', 'KubeletNotReady', 'node is shutting down']);
  assert.equal(ready({ shuttingDown: true, runtime: { runtimeVersion: 'x', notReadyMessage: 'container runtime is down' } }).message, '[container runtime is down, node is shutting down]');
});

test('the hard thresholds kept out of allocatable are the configuration\'s: none when evictionHard leaves them out', () => {
  const c = { ...defaultConfig(), nodeName: 'n', evictionHard: { 'memory.available': '1Gi' } };
  const { allocatable } = capacityAndAllocatable(c, host);
  assert.equal(allocatable.memory, `${7 * 2 ** 20}Ki`);
  assert.equal(allocatable['ephemeral-storage'], '100000000000', 'nodefs.available not given: nothing kept');
});

test('a status that differs only in heartbeat times is not a change', () => {
  const a = computeNodeStatus(input({ now: 1000 }));
  const b = computeNodeStatus(input({ now: 9000, previous: a }));
  assert.equal(nodeStatusChanged(a, b), false);
  const c = computeNodeStatus(input({ now: 9000, previous: a, runtime: { runtimeVersion: 'containerd://1.6.20', notReadyMessage: 'down' } }));
  assert.equal(nodeStatusChanged(a, c), true);
});

const node: V1Node = {
  metadata: { name: 'n', labels: { zone: 'a', 'kubernetes.io/hostname': 'n' } },
  spec: { taints: [{ key: 'dedicated', value: 'x', effect: 'NoExecute' }, { key: 'nodelet.io/agent', value: 'true', effect: 'NoSchedule' }] },
  status: { allocatable: { cpu: '2', memory: '4Gi', pods: '3' } },
};
const tolerant = [{ key: 'dedicated', operator: 'Exists' as const }];
const pod = (spec: Partial<V1Pod['spec']> = {}, cpu?: string, memory?: string): V1Pod => ({
  spec: { tolerations: tolerant, containers: [{ name: 'c', resources: { requests: { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) } } }], ...spec },
});

test('admission: pods, cpu, memory, node selector and affinity, NoExecute taints', () => {
  assert.deepEqual(admitPod(pod(), node, []), { admit: true });
  assert.deepEqual(admitPod(pod(), node, [pod(), pod(), pod()]), { admit: false, reason: 'OutOfpods', message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" });
  assert.deepEqual(admitPod(pod({}, '1500m'), node, [pod({}, '1')]), { admit: false, reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000" });
  assert.equal((admitPod(pod({}, undefined, '5Gi'), node, []) as { reason: string }).reason, 'OutOfmemory');
  assert.equal((admitPod(pod({ nodeSelector: { zone: 'b' } }), node, []) as { reason: string }).reason, 'NodeAffinity');
  assert.deepEqual(admitPod(pod({ nodeSelector: { zone: 'a' } }), node, []), { admit: true });
  const affinity = (values: string[]) => ({ nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values }] }] } } });
  assert.equal((admitPod(pod({ affinity: affinity(['b']) }), node, []) as { reason: string }).reason, 'NodeAffinity');
  assert.deepEqual(admitPod(pod({ affinity: affinity(['a', 'b']) }), node, []), { admit: true });
  const intolerant = admitPod(pod({ tolerations: [] }), node, []);
  assert.deepEqual(intolerant, { admit: false, reason: 'Taint', message: 'Predicate TaintToleration failed: node(s) had untolerated taint {dedicated: x}' });
});

test('a pod\'s request: the sum of its containers or its largest init container, whichever is larger', () => {
  const p: V1Pod = {
    spec: {
      initContainers: [{ name: 'i', resources: { requests: { cpu: '3' } } }],
      containers: [{ name: 'a', resources: { requests: { cpu: '1', memory: '1Gi' } } }, { name: 'b', resources: { limits: { cpu: '500m' } } }],
    },
  };
  assert.deepEqual(podRequests(p), { milliCPU: 3000, memory: 2 ** 30 });
});
