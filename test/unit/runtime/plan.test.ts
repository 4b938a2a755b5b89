// The plan: computePodActions' decision in words, one case per kind of step the issue names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { Backoff, containerBackoffKey } from '../../../src/runtime/backoff.js';
import { hashContainer } from '../../../src/runtime/hash.js';
import { computePodActions, type ProbeInputs } from '../../../src/runtime/pod-actions.js';
import { acts, explainPodActions, explainTermination, type PlanStep } from '../../../src/runtime/plan.js';
import type { PodStatus } from '../../../src/runtime/types.js';
import { FakeClock } from '../../../src/util/clock.js';
import { containerStatus, makePod, runningStatus, sandbox } from './fixtures.js';

const none = { get: () => undefined };
function plan(pod: V1Pod, status: PodStatus, opts: { probes?: ProbeInputs; backoff?: Backoff } = {}): PlanStep[] {
  const probes = opts.probes ?? { liveness: none, startup: none };
  const backoff = opts.backoff ?? new Backoff(new FakeClock(0), 10_000, 300_000);
  return explainPodActions({ pod, status, actions: computePodActions(pod, status, probes), probes, backoff });
}
const brief = (steps: PlanStep[]) => steps.map((s) => `${s.verb} ${s.target} ${s.reason}`);

test('a new pod: a sandbox, then every container, none of it a keep', () => {
  const pod = makePod({ containers: ['web', 'db'] });
  const steps = plan(pod, { ...runningStatus(pod), sandboxStatuses: [], containerStatuses: [] });
  assert.deepEqual(brief(steps), ['create-sandbox sandbox NoSandbox', 'start web NotStarted', 'start db NotStarted']);
  assert.equal(steps[1]!.text, 'start container web (attempt 0): not started yet');
  assert.ok(steps.every(acts));
});

test('a steady pod: keeps only, each saying why', () => {
  const pod = makePod({ containers: ['db'] });
  const steps = plan(pod, runningStatus(pod));
  assert.deepEqual(brief(steps), ['keep sandbox-0 Ready', 'keep db Running']);
  assert.equal(steps[1]!.text, 'keep container db: running, spec hash unchanged');
  assert.ok(!steps.some(acts));
});

test('a crash loop: the start waits, with the back-off time left', () => {
  const clock = new FakeClock(100_000);
  const backoff = new Backoff(clock, 10_000, 300_000);
  const pod = makePod({ containers: ['web'] });
  const c = pod.spec!.containers[0]!;
  const status = runningStatus(pod);
  status.containerStatuses = [containerStatus(c, 'exited', { exitCode: 1, restartCount: 2, finishedAt: 90_000 })];
  const key = containerBackoffKey('foo', 'new', '12345678', 'web', hashContainer(c));
  backoff.next(key, 90_000);
  backoff.next(key, 90_000); // 20 s from the exit at 90 s: 10 s left at 100 s
  const steps = plan(pod, status, { backoff });
  const wait = steps.find((s) => s.target === 'web')!;
  assert.equal(wait.verb, 'wait');
  assert.equal(wait.reason, 'CrashLoopBackOff');
  assert.equal(wait.attempt, 3);
  assert.equal(wait.backOffRemainingMs, 10_000);
  assert.match(wait.text, /^start container web \(attempt 3\): back-off ends in 10 s \(the last instance exited with 1\)$/);
  clock.step(10_001);
  const after = plan(pod, status, { backoff }).find((s) => s.target === 'web')!;
  assert.equal(after.verb, 'start', 'once the back-off has passed the start is no longer held');
  assert.equal(after.reason, 'Exited');
});

test('a changed image: kill then start, for the definition changed', () => {
  const pod = makePod({ containers: ['web'] });
  const status = runningStatus(pod);
  const id = status.containerStatuses[0]!.id.id;
  pod.spec!.containers[0]!.image = 'nodelet.test/busybox:2';
  const steps = plan(pod, status);
  assert.deepEqual(brief(steps), ['kill web DefinitionChanged', 'keep sandbox-0 Ready', 'start web DefinitionChanged']);
  assert.equal(steps[0]!.id, id);
  assert.equal(steps[0]!.text, 'restart container web: its definition changed (spec hash differs)');
  assert.equal(steps[2]!.text, 'start container web (attempt 1): Container web definition changed, will be restarted');
});

test('a failed liveness probe: restart, naming the threshold', () => {
  const pod = makePod({ containers: ['app'] });
  pod.spec!.containers[0]!.livenessProbe = { exec: { command: ['true'] }, failureThreshold: 3 };
  const status = runningStatus(pod);
  const id = status.containerStatuses[0]!.id.id;
  const steps = plan(pod, status, { probes: { liveness: { get: (x) => (x === id ? 'Failure' : undefined) }, startup: none } });
  assert.equal(steps[0]!.text, 'restart container app: liveness probe failed 3 times');
  assert.equal(steps[0]!.reason, 'LivenessProbe');
});

test('a sandbox gone behind our back: SandboxChanged, kill and create, every container again', () => {
  const pod = makePod({ containers: ['web'] });
  const status = runningStatus(pod);
  status.sandboxStatuses = [sandbox({ ready: false, attempt: 0 })];
  status.containerStatuses = [containerStatus(pod.spec!.containers[0]!, 'exited', { exitCode: 137 })];
  const steps = plan(pod, status);
  assert.deepEqual(brief(steps), ['kill-sandbox sandbox-0 SandboxChanged', 'create-sandbox sandbox SandboxChanged', 'start web SandboxChanged']);
  assert.equal(steps[0]!.text, 'kill sandbox sandbox-0 (no ready sandbox) and every container in it');
  assert.equal(steps[1]!.attempt, 1);
});

test('restartPolicy Never and the container done: the pod is stopped, the container left', () => {
  const pod = makePod({ containers: ['job'], restartPolicy: 'Never' });
  const status = runningStatus(pod);
  status.containerStatuses = [containerStatus(pod.spec!.containers[0]!, 'exited', { exitCode: 0 })];
  assert.deepEqual(brief(plan(pod, status)), ['kill-pod foo KillPod']);
});

test('a pod being deleted: its running containers, then its sandbox, are stopped', () => {
  const pod = makePod({ containers: ['web', 'db'] });
  const status = runningStatus(pod);
  status.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'exited', { exitCode: 0 });
  const steps = explainTermination(pod, status, 'the pod is being deleted (grace period 30 s)');
  assert.deepEqual(brief(steps), ['kill web Terminating', 'kill-sandbox sandbox-0 Terminating']);
  assert.equal(steps[0]!.text, 'kill container web: the pod is being deleted (grace period 30 s)');
});
