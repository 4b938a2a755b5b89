// A container's own restartPolicy and restartPolicyRules over the pod's, as the kubelet decides.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Container } from '@kubernetes/client-node';
import { containerShouldRestart } from '../../../src/runtime/restart-policy.js';
import { podPhase } from '../../../src/status/generate.js';

test('the pod\'s policy, unless the container has its own; rules on exit codes first', () => {
  const plain: V1Container = { name: 'c' };
  assert.equal(containerShouldRestart(plain, { restartPolicy: 'Always', containers: [] }, 0), true);
  assert.equal(containerShouldRestart(plain, { restartPolicy: 'OnFailure', containers: [] }, 0), false);
  assert.equal(containerShouldRestart(plain, { restartPolicy: 'OnFailure', containers: [] }, 1), true);
  assert.equal(containerShouldRestart(plain, { restartPolicy: 'Never', containers: [] }, 1), false);
  const never: V1Container = { name: 'c', restartPolicy: 'Never' };
  assert.equal(containerShouldRestart(never, { restartPolicy: 'Always', containers: [] }, 1), false, 'its own Never wins over the pod\'s Always');
  const rules = { name: 'c', restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }] } as V1Container;
  assert.equal(containerShouldRestart(rules, { restartPolicy: 'Never', containers: [] }, 42), true, 'a matching rule restarts it');
  assert.equal(containerShouldRestart(rules, { restartPolicy: 'Never', containers: [] }, 1), false);
  const notIn = { name: 'c', restartPolicy: 'Always', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'NotIn', values: [0] } }] } as V1Container;
  assert.equal(containerShouldRestart(notIn, { containers: [] }, 3), true);
});

test('phase by each container\'s own policy: an Always pod whose only container will not restart ends', () => {
  const pod = { spec: { restartPolicy: 'Always', containers: [{ name: 'c', restartPolicy: 'Never' }] } };
  const done = (exitCode: number) => [{ name: 'c', image: '', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode } } }];
  assert.equal(podPhase(pod, [], done(0)), 'Succeeded');
  assert.equal(podPhase(pod, [], done(1)), 'Failed');
});
