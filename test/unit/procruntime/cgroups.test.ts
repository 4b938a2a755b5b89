// The process runtime's cgroup v2 figures that must read as on a kubelet's node (runc's conversions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharesToWeight as cpuWeight } from '../../../src/cm/cgroup-manager.js';

test('cpu.shares convert to cpu.weight as runc converts them: the kubelet node shows 4 for 100m, 1 and 10000 at the ends', () => {
  // Measured in the lab: a 100m container (102 shares) has cpu.weight 4 on the kubelet's v2 node.
  assert.equal(cpuWeight(102), 4);
  assert.equal(cpuWeight(2), 1);
  assert.equal(cpuWeight(1024), 39);
  assert.equal(cpuWeight(262144), 10000);
  assert.equal(cpuWeight(1), 1);
});
