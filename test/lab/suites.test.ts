// make test-lab: the integration suites that look at pods and containers, whole, with their agents
// on cgroup v2 lab nodes (README "The lab"): nodelet on containerd on lab-1 and nodelet's process
// runtime on lab-2 at once, the kubelet of lab-3 observed beside them where a suite compares. make
// test runs a few of these cases in its lab lane (test/integration/lab.test.ts).
import { after, before, describe } from 'node:test';
import { useClusterEnv } from '../support/cluster.js';
import { labDown, labUp } from '../support/lab.js';
import { LabNode, labClusterEnv, labContainerd, labKubelet, labProcessRuntime } from '../support/lab-place.js';
import { evictionSuite } from '../support/suites/eviction.js';
import { nodeApiSuite } from '../support/suites/node-api.js';
import { podIsolationSuite } from '../support/suites/pod-isolation.js';
import { podLifecycleSuite } from '../support/suites/pod-lifecycle.js';

useClusterEnv(labClusterEnv());
const [lab1, lab2, lab3] = [new LabNode('lab-1'), new LabNode('lab-2'), new LabNode('lab-3')];

before(async () => {
  await labDown();
  await labUp(['nodelet-containerd', 'nodelet-process', 'kubelet'], '2G', 4096);
});
after(async () => {
  if (process.env.NODELET_LAB_KEEP !== '1') await labDown();
});

describe('the integration suites on cgroup v2 nodes', { concurrency: 2 }, () => {
  describe('nodelet on containerd (lab-1)', () => {
    describe('pod lifecycle', () => podLifecycleSuite(() => labContainerd(lab1)));
    describe('pod isolation', () => podIsolationSuite(() => labContainerd(lab1)));
    describe('node API', () => nodeApiSuite(() => labContainerd(lab1), { kubelet: () => labKubelet(lab3) }));
    describe('eviction', () => evictionSuite(() => labContainerd(lab1)));
  });
  describe("nodelet's process runtime (lab-2)", () => {
    describe('pod lifecycle', () => podLifecycleSuite(() => labProcessRuntime(lab2, 'lifecycle')));
    describe('pod isolation', () => podIsolationSuite(() => labProcessRuntime(lab2, 'isolation')));
    describe('node API', () => nodeApiSuite(() => labProcessRuntime(lab2, 'node-api'), { kubelet: () => labKubelet(lab3) }));
    describe('eviction', () => evictionSuite(() => labProcessRuntime(lab2, 'eviction')));
  });
});
