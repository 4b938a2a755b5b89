// make attacks: the attack suite (test/support/suites/attacks.ts) whole, in cgroup v2 lab nodes:
// nodelet on containerd on lab-1 and nodelet's process runtime on lab-2 at once. make test runs a
// reduced set of it in its lab lane (test/integration/lab.test.ts).
import { after, before, describe } from 'node:test';
import { useClusterEnv } from '../support/cluster.js';
import { labDown, labUp } from '../support/lab.js';
import { LabNode, labClusterEnv, labContainerd, labProcessRuntime } from '../support/lab-place.js';
import { attackSuite } from '../support/suites/attacks.js';

useClusterEnv(labClusterEnv());
const [lab1, lab2] = [new LabNode('lab-1'), new LabNode('lab-2')];

before(async () => {
  await labDown();
  await labUp(['nodelet-containerd', 'nodelet-process'], '2G', 4096);
});
after(async () => {
  if (process.env.NODELET_LAB_KEEP !== '1') await labDown();
});

describe('attacks on cgroup v2 nodes', { concurrency: 2 }, () => {
  describe('nodelet on containerd (lab-1)', () => attackSuite(lab1, () => labContainerd(lab1)));
  describe("nodelet's process runtime (lab-2)", () => attackSuite(lab2, () => labProcessRuntime(lab2, 'attacks')));
});
