// Bad input on the real cluster: each broken pod gets the kubelet's waiting reason, a message and a
// Warning event, is retried, and a healthy pod on the same node is not disturbed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { container, createPod, getPod, podEvents, running, waitPod } from '../support/kube.js';

let agent: RunningAgent;
let node: string;
let healthy: V1Pod;

before(async () => {
  node = uniqueNodeName('it-bad');
  agent = await startAgent(node);
  healthy = await waitPod(await createPod(node, 'healthy', { containers: [container('c', 'while true; do sleep 1; done')] }), 'Running', 30_000, running);
});
after(async () => {
  // The healthy pod ran through all of it, untouched.
  const p = await getPod(healthy);
  assert.ok(running(p), 'the healthy pod is still Running');
  assert.equal(p.status!.containerStatuses![0]!.restartCount, 0);
  assert.equal(p.status!.containerStatuses![0]!.containerID, healthy.status!.containerStatuses![0]!.containerID);
  await cleanupAgent(agent);
});

async function waitingReason(pod: V1Pod, reasons: string[], timeoutMs = 30_000) {
  return waitPod(pod, `waiting with ${reasons.join(' or ')}`, timeoutMs, (p) => {
    const w = p.status?.containerStatuses?.[0]?.state?.waiting;
    return w && reasons.includes(w.reason ?? '') ? w : undefined;
  });
}

async function warning(pod: V1Pod, reason: string, pattern: RegExp) {
  const events = await podEvents(pod);
  const e = events.find((x) => x.type === 'Warning' && x.reason === reason && pattern.test(x.message ?? ''));
  assert.ok(e, `Warning ${reason} matching ${pattern} among: ${events.map((x) => `${x.type} ${x.reason}: ${x.message}`).join(' | ')}`);
  return e;
}

test('an image that is not present and cannot be pulled: ErrImagePull, then ImagePullBackOff', async () => {
  const pod = await createPod(node, 'noimage', { containers: [{ name: 'c', image: 'nodelet.test/not-here:1', imagePullPolicy: 'IfNotPresent' }] });
  const w = await waitingReason(pod, ['ErrImagePull', 'ImagePullBackOff']);
  assert.match(w.message ?? '', /nodelet\.test\/not-here:1/);
  await warning(pod, 'Failed', /^Failed to pull image "nodelet\.test\/not-here:1": /);
  const backingOff = await waitingReason(pod, ['ImagePullBackOff']);
  assert.match(backingOff.message ?? '', /^Back-off pulling image "nodelet\.test\/not-here:1": ErrImagePull: /);
  assert.equal((await getPod(pod)).status!.phase, 'Pending');
  // The back-off ends 10 s after the failed pull (then 20 s, 40 s ...): the pull is tried again well within a minute.
  const deadline = Date.now() + 60_000;
  let pulls = 0;
  while (Date.now() < deadline) {
    pulls = (await podEvents(pod)).find((e) => e.reason === 'Pulling')?.count ?? 0;
    if (pulls >= 2) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  assert.ok(pulls >= 2, `pulled again after the first back-off (Pulling seen ${pulls} times)`);
});

test('imagePullPolicy Never with a missing image: ErrImageNeverPull', async () => {
  const pod = await createPod(node, 'neverpull', { containers: [{ name: 'c', image: 'nodelet.test/not-here:2', imagePullPolicy: 'Never' }] });
  const w = await waitingReason(pod, ['ErrImageNeverPull']);
  assert.equal(w.message, 'Container image "nodelet.test/not-here:2" is not present with pull policy of Never');
  await warning(pod, 'ErrImageNeverPull', /is not present with pull policy of Never/);
});

test('a command that does not exist: RunContainerError, then the crash-loop back-off', async () => {
  const pod = await createPod(node, 'nocmd', { containers: [{ name: 'c', image: 'nodelet.test/busybox:1', command: ['/no/such/binary'] }] });
  const w = await waitingReason(pod, ['RunContainerError', 'CrashLoopBackOff']);
  assert.ok(w.message, 'the waiting state carries the runtime\'s message');
  await warning(pod, 'Failed', /no such file or directory|not found/);
  await waitPod(pod, 'retried with back-off', 30_000, (p) => ((p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined));
});

test('a missing ConfigMap: CreateContainerConfigError naming it', async () => {
  const pod = await createPod(node, 'nocm', {
    containers: [container('c', 'sleep 3600', { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'no-such-config', key: 'k' } } }] })],
  });
  const w = await waitingReason(pod, ['CreateContainerConfigError']);
  assert.equal(w.message, 'configmap "no-such-config" not found');
  await warning(pod, 'Failed', /^Error: configmap "no-such-config" not found$/);
});

test('an invalid image name: InvalidImageName', async () => {
  const pod = await createPod(node, 'badname', { containers: [{ name: 'c', image: 'nodelet.test/UPPER CASE:1' }] });
  const w = await waitingReason(pod, ['InvalidImageName']);
  assert.match(w.message ?? '', /invalid reference format/);
});
