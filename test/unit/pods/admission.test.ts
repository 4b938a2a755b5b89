// Pod admission: the host-port rule (the scheduler's NodePorts, which the kubelet checks again), found by
// the bad-input drill's host-port-conflict case, which nodelet admitted and started; and a pod's requests as the kubelet counts them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1ContainerPort, V1Node, V1Pod } from '@kubernetes/client-node';
import { admitPod, hostPortConflict, podRequests } from '../../../src/pods/admission.js';

const node: V1Node = { metadata: { name: 'n', labels: {} }, status: { allocatable: { cpu: '4', memory: '8Gi', pods: '110' } } };
const withPorts = (ports: V1ContainerPort[], sidecar = false): V1Pod => ({
  metadata: { name: 'p' },
  spec: sidecar
    ? { initContainers: [{ name: 's', restartPolicy: 'Always', ports }], containers: [{ name: 'c' }] }
    : { containers: [{ name: 'c', ports }] },
});

test('a host port held by an admitted pod: NodePorts, in the kubelet\'s words', () => {
  const holder = withPorts([{ containerPort: 80, hostPort: 8080 }]);
  assert.deepEqual(admitPod(withPorts([{ containerPort: 81, hostPort: 8080 }]), node, [holder]), {
    admit: false,
    reason: 'NodePorts',
    message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
  });
  assert.deepEqual(admitPod(withPorts([{ containerPort: 80, hostPort: 8081 }]), node, [holder]), { admit: true });
  // Container ports without a host port never conflict.
  assert.deepEqual(admitPod(withPorts([{ containerPort: 80 }]), node, [withPorts([{ containerPort: 80 }])]), { admit: true });
});

test('host ports conflict by protocol, port and address; an unset address is every address', () => {
  const held = [withPorts([{ containerPort: 1, hostPort: 53, protocol: 'UDP', hostIP: '10.0.0.1' }])];
  assert.equal(hostPortConflict(withPorts([{ containerPort: 1, hostPort: 53 }]), held), false, 'TCP and UDP are apart');
  assert.equal(hostPortConflict(withPorts([{ containerPort: 1, hostPort: 53, protocol: 'UDP' }]), held), true, 'every address includes 10.0.0.1');
  assert.equal(hostPortConflict(withPorts([{ containerPort: 1, hostPort: 53, protocol: 'UDP', hostIP: '10.0.0.2' }]), held), false, 'another address');
  assert.equal(hostPortConflict(withPorts([{ containerPort: 1, hostPort: 53, protocol: 'UDP', hostIP: '10.0.0.1' }]), held), true);
  const wildcard = [withPorts([{ containerPort: 1, hostPort: 9000 }])];
  assert.equal(hostPortConflict(withPorts([{ containerPort: 1, hostPort: 9000, hostIP: '127.0.0.1' }]), wildcard), true, 'held on every address');
  // A sidecar (restartable init container) holds its ports as long as the pod runs; a plain init container does not.
  assert.equal(hostPortConflict(withPorts([{ containerPort: 1, hostPort: 7000 }]), [withPorts([{ containerPort: 1, hostPort: 7000 }], true)]), true);
  const initOnly: V1Pod = { spec: { initContainers: [{ name: 'i', ports: [{ containerPort: 1, hostPort: 7000 }] }], containers: [{ name: 'c' }] } };
  assert.equal(hostPortConflict(withPorts([{ containerPort: 1, hostPort: 7000 }]), [initOnly]), false);
});

test('a pod\'s requests as the kubelet counts them: sidecars with the containers and under each later init container, pod-level requests in place, overhead on top', () => {
  const c = (name: string, cpu: string, restartPolicy?: string) => ({ name, resources: { requests: { cpu, memory: '1Mi' } }, ...(restartPolicy ? { restartPolicy } : {}) });
  // Regular 100m + sidecar 200m = 300m; the init container after the sidecar: 250m + 200m = 450m: the larger.
  const pod = { spec: { initContainers: [c('side', '200m', 'Always'), c('init', '250m')], containers: [c('app', '100m')] } } as V1Pod;
  assert.equal(podRequests(pod).milliCPU, 450);
  // An init container before the sidecar does not count it.
  assert.equal(podRequests({ spec: { initContainers: [c('init', '250m'), c('side', '200m', 'Always')], containers: [c('app', '100m')] } } as V1Pod).milliCPU, 300);
  // Pod-level requests replace the containers'; overhead is added.
  assert.equal(podRequests({ spec: { resources: { requests: { cpu: '1' } }, overhead: { cpu: '50m' }, containers: [c('app', '100m')] } } as V1Pod).milliCPU, 1050);
  assert.equal(podRequests({ spec: { resources: { requests: { cpu: '1' } }, containers: [c('app', '100m')] } } as V1Pod).memory, 2 ** 20, 'memory not set at pod level: the containers\'');
});
