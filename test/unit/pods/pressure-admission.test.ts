// Admission under node pressure, case by case as the kubelet's eviction manager admits pods.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { admitPodHere } from '../../../src/pods/admission.js';
import { admitUnderPressure, isCriticalPod, pressureConditions, SYSTEM_CRITICAL_PRIORITY } from '../../../src/pods/pressure-admission.js';
import { SysctlAllowlist } from '../../../src/pods/sysctls.js';

const node = (...pressures: string[]): V1Node => ({
  metadata: { name: 'n', labels: { 'kubernetes.io/os': 'linux' } },
  status: {
    allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
    conditions: ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map((type) => ({ type, status: type === 'Ready' || pressures.includes(type) ? 'True' : 'False' })),
  },
});
const pod = (spec: Partial<V1Pod['spec']> = {}): V1Pod => ({ metadata: { name: 'p', uid: 'u' }, spec: { containers: [{ name: 'c', image: 'i' }], ...spec } });
const burstable = pod({ containers: [{ name: 'c', image: 'i', resources: { requests: { memory: '10Mi' } } }] });

test('no pressure: every pod is admitted', () => {
  assert.deepEqual(pressureConditions(node()), []);
  assert.deepEqual(admitUnderPressure(pod(), [], false), { admit: true });
  assert.deepEqual(pressureConditions(undefined), []);
});

test('DiskPressure refuses every pod but a critical one, as Evicted with the kubelet message', () => {
  const p = pressureConditions(node('DiskPressure'));
  assert.deepEqual(p, ['DiskPressure']);
  assert.deepEqual(admitUnderPressure(burstable, p, false), { admit: false, reason: 'Evicted', message: 'The node had condition: [DiskPressure]. ' });
  assert.deepEqual(admitUnderPressure(pod({ tolerations: [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' }] }), p, false).admit, false, 'tolerating the taint does not help');
  assert.deepEqual(admitUnderPressure(pod(), p, true), { admit: true });
});

test('MemoryPressure alone refuses only BestEffort pods that do not tolerate its taint', () => {
  const p = ['MemoryPressure'];
  assert.equal(admitUnderPressure(burstable, p, false).admit, true);
  assert.deepEqual(admitUnderPressure(pod(), p, false), { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' });
  assert.equal(admitUnderPressure(pod({ tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }] }), p, false).admit, true);
  assert.equal(admitUnderPressure(burstable, ['MemoryPressure', 'DiskPressure'], false).admit, false, 'with another pressure, every pod');
  assert.deepEqual(admitUnderPressure(pod(), pressureConditions(node('MemoryPressure', 'PIDPressure')), false), { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure PIDPressure]. ' });
});

test('critical pods: static or mirror, or a system-critical priority', () => {
  assert.equal(isCriticalPod(pod(), true), true);
  assert.equal(isCriticalPod(pod({ priority: SYSTEM_CRITICAL_PRIORITY + 1000 }), false), true);
  assert.equal(isCriticalPod(pod({ priority: SYSTEM_CRITICAL_PRIORITY - 1 }), false), false);
  assert.equal(isCriticalPod(pod(), false), false);
});

test('the pressure handler comes first of the admit handlers', () => {
  const here = { node: node('DiskPressure'), admitted: [], sysctls: new SysctlAllowlist([]), appArmorEnabled: true };
  assert.deepEqual(admitPodHere(pod({ securityContext: { sysctls: [{ name: 'kernel.forbidden', value: '1' }] } }), here), { admit: false, reason: 'Evicted', message: 'The node had condition: [DiskPressure]. ' });
  assert.equal(admitPodHere(pod(), { ...here, staticOrMirror: true }).admit, true);
  assert.equal(admitPodHere(pod(), { ...here, node: node() }).admit, true);
});
