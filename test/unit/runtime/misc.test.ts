import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { diffSnapshots } from '../../../src/pleg/generic-pleg.js';
import { expandVars, makeEnvironment } from '../../../src/runtime/env.js';
import { getContainerInfoFromAnnotations, getContainerInfoFromLabels, newContainerAnnotations, newContainerLabels } from '../../../src/runtime/labels.js';
import { hashContainer, legacyHashContainer } from '../../../src/runtime/hash.js';
import { isNodeCriticalPod, milliCPUToQuota, milliCPUToShares, oomScoreAdj, podQOSClass } from '../../../src/runtime/resources.js';
import { effectivePullPolicy, validImageName } from '../../../src/images/image-manager.js';
import { bytes, milliCPU } from '../../../src/util/quantity.js';
import { generatePodSandboxConfig } from '../../../src/runtime/sandbox.js';

test('labels and annotations written on a container read back what a restarted agent needs', () => {
  const pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u', deletionGracePeriodSeconds: 7 }, spec: { terminationGracePeriodSeconds: 30, containers: [] } };
  const c = { name: 'c', image: 'i', ports: [{ containerPort: 80 }] };
  assert.deepEqual(getContainerInfoFromLabels(newContainerLabels(c, pod, 'node')), { podName: 'p', podNamespace: 'ns', podUID: 'u', containerName: 'c' });
  const a = getContainerInfoFromAnnotations(newContainerAnnotations(c, pod, 4, 'init'));
  assert.equal(a.restartCount, 4);
  assert.equal(a.hash, hashContainer(c));
  assert.equal(a.podDeletionGracePeriod, 7);
  assert.equal(a.podTerminationGracePeriod, 30);
  assert.equal(a.type, 'init');
  assert.equal(getContainerInfoFromAnnotations({}).restartCount, 0);
});

test('the spec hash covers name and image, as the kubelet\'s: a resize does not change it', () => {
  assert.equal(hashContainer({ name: 'c', image: 'i', command: ['a'] }), hashContainer({ command: ['a'], image: 'i', name: 'c' }));
  assert.notEqual(hashContainer({ name: 'c', image: 'i' }), hashContainer({ name: 'c', image: 'j' }));
  assert.equal(hashContainer({ name: 'c', image: 'i', resources: { limits: { cpu: '1' } } }), hashContainer({ name: 'c', image: 'i', resources: { limits: { cpu: '2' } } }));
  // A container made by nodelet 0.1.0 (whole-spec hash) is not "changed" by the new hash.
  const old: V1Pod = { spec: { containers: [{ name: 'c', image: 'i', command: ['a'] }] } };
  assert.notEqual(legacyHashContainer(old.spec!.containers[0]!), hashContainer(old.spec!.containers[0]!));
});

test('PLEG: differences between relists become lifecycle events', () => {
  const before = new Map([['p1', new Map([['sb1', 'SANDBOX_READY'], ['c1', 'CONTAINER_RUNNING'], ['c0', 'CONTAINER_EXITED']])]]);
  const after = new Map([
    ['p1', new Map([['sb1', 'SANDBOX_NOTREADY'], ['c1', 'CONTAINER_EXITED']])],
    ['p2', new Map([['c2', 'CONTAINER_RUNNING']])],
  ]);
  assert.deepEqual(
    diffSnapshots(before, after).map((e) => `${e.uid} ${e.type} ${e.id}`).sort(),
    ['p1 ContainerDied c1', 'p1 ContainerRemoved c0', 'p1 SandboxChanged sb1', 'p2 ContainerStarted c2'].sort(),
  );
  assert.deepEqual(diffSnapshots(after, after), []);
});

test('$(VAR) expansion: defined names, $$ escapes, unknown names kept', () => {
  const vars = new Map([['A', 'x'], ['B', 'y']]);
  assert.equal(expandVars('$(A)-$(B)', vars), 'x-y');
  assert.equal(expandVars('$$(A)', vars), '$(A)');
  assert.equal(expandVars('$(C)', vars), '$(C)');
  assert.equal(expandVars('cost $5', vars), 'cost $5');
});

test('the environment: values in order with expansion, downward API fields, missing ConfigMap error', async () => {
  const pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u', labels: { app: 'web' } }, spec: { containers: [] } };
  const container = {
    name: 'c',
    env: [
      { name: 'A', value: 'one' },
      { name: 'B', value: '$(A)-two' },
      { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
      { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ],
  };
  const env = await makeEnvironment({ pod, container, podIPs: ['10.0.0.9'], hostIP: '192.0.2.1', nodeName: 'n', memoryCapacity: 1 });
  assert.deepEqual(env, [
    { key: 'A', value: 'one' },
    { key: 'B', value: 'one-two' },
    { key: 'NAME', value: 'p' },
    { key: 'APP', value: 'web' },
    { key: 'IP', value: '10.0.0.9' },
  ]);
  const source = { getConfigMap: async () => undefined, getSecret: async () => undefined };
  await assert.rejects(
    makeEnvironment({ pod, container: { name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }] }, podIPs: [], hostIP: '', nodeName: 'n', memoryCapacity: 1, configSource: source }),
    (e: unknown) => (e as { reason: string }).reason === 'CreateContainerConfigError' && (e as Error).message === 'configmap "cfg" not found',
  );
  const optional = await makeEnvironment({ pod, container: { name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k', optional: true } } }] }, podIPs: [], hostIP: '', nodeName: 'n', memoryCapacity: 1, configSource: source });
  assert.deepEqual(optional, []);
});

test('quantities, shares, quota and QoS classes', () => {
  assert.equal(milliCPU('250m'), 250);
  assert.equal(milliCPU('1.5'), 1500);
  assert.equal(bytes('64Mi'), 64 * 2 ** 20);
  assert.equal(bytes('1G'), 1e9);
  assert.equal(milliCPUToShares(0), 2);
  assert.equal(milliCPUToShares(1000), 1024);
  assert.equal(milliCPUToQuota(500, 100_000), 50_000);
  assert.equal(milliCPUToQuota(1, 100_000), 1000, 'minimum quota');
  const pod = (resources: object) => ({ spec: { containers: [{ name: 'c', resources }] } });
  assert.equal(podQOSClass(pod({})), 'BestEffort');
  assert.equal(podQOSClass(pod({ limits: { cpu: '1', memory: '1Gi' } })), 'Guaranteed');
  assert.equal(podQOSClass(pod({ requests: { cpu: '1000m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } })), 'Guaranteed');
  assert.equal(podQOSClass(pod({ requests: { cpu: '500m' } })), 'Burstable');
  // A request of "0" is no request: equal and zero is BestEffort's shape, as the API server's.
  assert.equal(podQOSClass(pod({ requests: { cpu: '0' } })), 'BestEffort');
  assert.equal(podQOSClass(pod({ requests: { cpu: '0', memory: '0' }, limits: { cpu: '0' } })), 'BestEffort');
  // Guaranteed in one container and BestEffort in another: Burstable.
  assert.equal(podQOSClass({ spec: { containers: [{ name: 'a', resources: { limits: { cpu: '1', memory: '1Gi' } } }, { name: 'b' }] } }), 'Burstable');
  // Pod-level resources decide when they name cpu or memory.
  assert.equal(podQOSClass({ spec: { resources: { limits: { cpu: '1', memory: '1Gi' } }, containers: [{ name: 'a', resources: { requests: { cpu: '100m' } } }] } } as V1Pod), 'Guaranteed');
  assert.equal(podQOSClass({ spec: { resources: { requests: { memory: '1Gi' } }, containers: [{ name: 'a' }] } } as V1Pod), 'Burstable');
  // The API's value is the pod's, whatever the spec now says (status.qosClass is immutable).
  assert.equal(podQOSClass({ ...pod({ requests: { cpu: '500m' } }), status: { qosClass: 'BestEffort' } }), 'BestEffort');
});

test('pull policy defaults and image name checks', () => {
  assert.equal(effectivePullPolicy({ name: 'c', image: 'nodelet.test/busybox:1' }), 'IfNotPresent');
  assert.equal(effectivePullPolicy({ name: 'c', image: 'nodelet.test/busybox' }), 'Always');
  assert.equal(effectivePullPolicy({ name: 'c', image: 'nodelet.test/busybox:latest' }), 'Always');
  assert.equal(effectivePullPolicy({ name: 'c', image: 'localhost:5000/busybox' }), 'Always');
  assert.equal(effectivePullPolicy({ name: 'c', image: 'x', imagePullPolicy: 'Never' }), 'Never');
  assert.ok(validImageName('nodelet.test/busybox:1'));
  assert.ok(validImageName(`localhost:5000/a/b@sha256:${'ab'.repeat(32)}`));
  // A digest too short for sha256 does not parse (the bad-input drill's image-invalid-digest).
  assert.ok(!validImageName('localhost:5000/a/b@sha256:abc'));
  assert.ok(!validImageName('nodelet.test/UPPER CASE:1'));
  assert.ok(!validImageName('nodelet.test/Upper:1'));
});

test('OOM score as the kubelet sets it: Burstable never below 3 nor 1000, a sidecar no higher than the smallest regular request, node-critical pods as Guaranteed', () => {
  const gi = 2 ** 30;
  const burstable = (memory: string, extra: Partial<V1Pod['spec']> = {}, meta: V1Pod['metadata'] = {}): V1Pod => ({
    metadata: meta,
    spec: { containers: [{ name: 'c', resources: { requests: { memory } } }], ...extra },
  });
  const c = (p: V1Pod) => p.spec!.containers[0]!;
  // Requests as large as the node: 1000 - 1000 = 0, floored at 3.
  let p = burstable('1Gi');
  assert.equal(oomScoreAdj(p, c(p), gi), 3);
  // A request too small to move the score: 1000 becomes 999 (BestEffort's is 1000).
  p = burstable('1');
  assert.equal(oomScoreAdj(p, c(p), gi), 999);
  p = burstable('256Mi');
  assert.equal(oomScoreAdj(p, c(p), gi), 750);
  // A sidecar with no request of its own scores as the regular container with the least.
  const sidecar = { name: 's', restartPolicy: 'Always', resources: { requests: { memory: '1' } } };
  p = burstable('512Mi', { initContainers: [sidecar] });
  assert.equal(oomScoreAdj(p, sidecar, gi), 500);
  // system-node-critical and critical (a static pod): as Guaranteed.
  p = burstable('1', { priorityClassName: 'system-node-critical' }, { annotations: { 'kubernetes.io/config.source': 'file' } });
  assert.ok(isNodeCriticalPod(p));
  assert.equal(oomScoreAdj(p, c(p), gi), -997);
  p = burstable('1', { priorityClassName: 'system-node-critical', priority: 2_000_001_000 });
  assert.equal(oomScoreAdj(p, c(p), gi), -997);
  p = burstable('1', { priorityClassName: 'system-node-critical', priority: 1000 });
  assert.equal(oomScoreAdj(p, c(p), gi), 999, 'not critical by priority, not static: Burstable');
});

test('sandbox sysctls go to the runtime with dots, as the kubelet normalizes them', () => {
  const pod = { metadata: { name: 'p', namespace: 'n', uid: 'u' }, spec: { containers: [], securityContext: { sysctls: [{ name: 'kernel/shm_rmid_forced', value: '1' }, { name: 'net.ipv4.conf.eno2/100.rp_filter', value: '0' }, { name: 'net/ipv4/conf/eno2.100/rp_filter', value: '2' }] } } } as V1Pod;
  const cfg = generatePodSandboxConfig({ podLogRoot: '/logs', nodeName: 'node', allowPrivileged: false, cpuCFSQuota: true, dns: { clusterDNS: [], clusterDomain: 'cluster.local', resolvConf: '' } }, pod, 0);
  assert.deepEqual(cfg.linux?.sysctls, { 'kernel.shm_rmid_forced': '1', 'net.ipv4.conf.eno2/100.rp_filter': '2' });
});
