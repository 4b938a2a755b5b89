// `nodelet plan` and `nodelet history` on the real cluster, once per runtime: the plan of a
// crash-looping container (its back-off time left), of a changed image (kill then start, definition
// changed), of a sandbox stopped behind the agent's back, and of a pod being deleted; each compared
// with what the agent's next sync then did, as its sync history records it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodPlan } from '../../../src/agent/debug-view.js';
import type { SyncRecord } from '../../../src/debug/sync-history.js';
import type { PlanStep } from '../../../src/runtime/plan.js';
import { CriClient } from '../../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { clusterEnv, eventually, projectRoot } from '../cluster.js';
import { container, core, createPod, getPod, NS, running, waitPod } from '../kube.js';
import type { TestRuntime } from '../runtimes.js';

const run = promisify(execFile);
const CLI = join(projectRoot, 'dist/src/cli/main.js');

interface History {
  uid: string;
  deleted: boolean;
  syncs: SyncRecord[];
}

export function debugSuite(makeRuntime: () => Promise<TestRuntime>): void {
  const env = clusterEnv();
  let rt: TestRuntime;
  let agent: RunningAgent;
  let node: string;
  let server: string;

  before(async () => {
    rt = await makeRuntime();
    node = uniqueNodeName(`it-debug-${rt.name}`);
    agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint]);
    server = `http://127.0.0.1:${agent.localPort}`;
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    await rt.stop();
  });

  const cli = async (...args: string[]): Promise<string> => (await run(CLI, args, { timeout: 30_000 })).stdout;
  const plan = async (pod: V1Pod, ...how: string[]): Promise<PodPlan> => JSON.parse(await cli('plan', `${NS}/${pod.metadata!.name}`, '-o', 'json', ...(how.length ? how : ['--server', server]))) as PodPlan;
  const history = async (pod: V1Pod): Promise<History> => JSON.parse(await cli('history', `${NS}/${pod.metadata!.name}`, '-o', 'json', '--server', server)) as History;
  const acting = (steps: PlanStep[]) => steps.filter((s) => s.verb !== 'keep').map((s) => ({ verb: s.verb, target: s.verb === 'kill-sandbox' ? '' : s.target, reason: s.reason }));
  /** The first sync after `since` whose plan acts. */
  const nextActing = (pod: V1Pod, since: number, what: string) =>
    eventually(`${pod.metadata!.name}: ${what} in its sync history`, 60_000, async () => (await history(pod)).syncs.find((s) => s.at >= since && s.plan.length > 0), 250);
  const loop = "trap 'exit 0' TERM; while true; do sleep 0.2; done";

  test('a crash-looping container: the plan waits out the back-off, with the time left, and the next sync then starts it', async () => {
    const created = await createPod(node, 'crashloop', { containers: [container('c', 'exit 1')] });
    await waitPod(created, 'in CrashLoopBackOff', 60_000, (p) => (p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff' ? p : undefined));
    // Over the node API as the kubeconfig's user (authorized as nodes/proxy); nobody else is answered.
    const secure = `https://127.0.0.1:${agent.port}`;
    const p = await plan(created, '--server', secure, '--kubeconfig', env.kubeconfig);
    const anonymous = await run(CLI, ['plan', `${NS}/${created.metadata!.name}`, '--server', secure, '--insecure-skip-tls-verify', 'true'], { env: { ...process.env, KUBECONFIG: '' } }).then(() => 'answered', (e: { stderr: string }) => e.stderr);
    assert.match(anonymous, /answered 401/);
    const wait = p.steps.find((s) => s.target === 'c')!;
    assert.equal(wait.verb, 'wait', JSON.stringify(p.steps));
    assert.equal(wait.reason, 'CrashLoopBackOff');
    assert.ok(wait.backOffRemainingMs! > 0 && wait.backOffRemainingMs! <= 20_000, `back-off left: ${wait.backOffRemainingMs} ms`);
    assert.match(wait.text, /^start container c \(attempt \d+\): back-off ends in \d+ (s|ms) \(the last instance exited with 1\)$/);
    const text = await cli('plan', `${NS}/${created.metadata!.name}`, '--server', server);
    assert.match(text, /start container c \(attempt \d+\): back-off ends in .*\[CrashLoopBackOff\]/);
    // The next sync that starts c does so when the back-off ends, with the attempt planned.
    const done = await eventually('the container started again', 60_000, async () => (await history(created)).syncs.find((s) => s.at >= p.at && s.results.some((r) => r.action === 'StartContainer' && r.target === 'c' && r.ok)), 250);
    assert.ok(done.at >= p.at + wait.backOffRemainingMs! - 1500, `started at +${done.at - p.at} ms, the back-off had ${wait.backOffRemainingMs} ms left`);
    const start = done.plan.find((s) => s.target === 'c')!;
    assert.equal(start.verb, 'start');
    assert.equal(start.attempt, wait.attempt);
    // The page's summary counts down to the same start.
    const summary = (await (await fetch(`${server}/debug/pods`)).json()) as { pods: Array<{ uid: string; timeline: unknown[] }> };
    assert.ok(summary.pods.find((x) => x.uid === created.metadata!.uid)!.timeline.length >= 2);
  });

  test('a changed image: the plan is kill then start for the definition changed, and the sync of the update does exactly that', async () => {
    const created = await createPod(node, 'image', { containers: [container('c', loop)] });
    const pod = await waitPod(created, 'Running', 60_000, running);
    const steady = await plan(pod);
    assert.deepEqual(acting(steady.steps), [], `a steady pod has nothing to do: ${JSON.stringify(steady.steps)}`);
    assert.ok(steady.steps.some((s) => s.verb === 'keep' && s.target === 'c' && s.text === 'keep container c: running, spec hash unchanged'));
    // The changed pod planned against the runtime before the API has it (nodelet plan --file).
    const changed: V1Pod = { ...pod, apiVersion: 'v1', kind: 'Pod', spec: { ...pod.spec!, containers: [{ ...pod.spec!.containers[0]!, image: env.testImage2 }] } };
    const file = join(env.clusterDir, `${pod.metadata!.name}.json`);
    writeFileSync(file, JSON.stringify(changed));
    const p = JSON.parse(await cli('plan', '--file', file, '--runtime-endpoint', rt.endpoint, '--node-name', node, '-o', 'json')) as PodPlan;
    assert.deepEqual(acting(p.steps), [
      { verb: 'kill', target: 'c', reason: 'DefinitionChanged' },
      { verb: 'start', target: 'c', reason: 'DefinitionChanged' },
    ]);
    assert.equal(p.steps[0]!.text, 'restart container c: its definition changed (spec hash differs)');
    const since = Date.now();
    await core.patchNamespacedPod({ name: pod.metadata!.name!, namespace: NS, body: { spec: { containers: [{ name: 'c', image: env.testImage2 }] } } }, k8s.setHeaderOptions('Content-Type', 'application/strategic-merge-patch+json'));
    const did = await nextActing(pod, since - 1000, 'the sync of the update');
    assert.deepEqual(acting(did.plan), acting(p.steps));
    assert.deepEqual(did.results.map((r) => [r.action, r.target, r.ok]), [['KillContainer', 'c', true], ['StartContainer', 'c', true]]);
  });

  test('a sandbox stopped behind the agent\'s back: the plan kills and re-creates it (SandboxChanged), and the next sync does', async () => {
    const created = await createPod(node, 'sandbox', { containers: [container('c', loop)] });
    const pod = await waitPod(created, 'Running', 60_000, running);
    const cri = new CriClient(rt.endpoint);
    try {
      const [sb] = await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': pod.metadata!.uid! } });
      // The agent is paused while the sandbox goes, so that the plan is asked before it acts.
      agent.process.kill('SIGSTOP');
      let p: PodPlan;
      try {
        await cri.stopPodSandbox(sb!.id);
        const file = join(env.clusterDir, `${pod.metadata!.name}.json`);
        writeFileSync(file, JSON.stringify({ ...pod, apiVersion: 'v1', kind: 'Pod' }));
        p = JSON.parse(await cli('plan', '--file', file, '--runtime-endpoint', rt.endpoint, '--node-name', node, '-o', 'json')) as PodPlan;
      } finally {
        agent.process.kill('SIGCONT');
      }
      const since = Date.now();
      assert.deepEqual(acting(p.steps), [
        { verb: 'kill-sandbox', target: '', reason: 'SandboxChanged' },
        { verb: 'create-sandbox', target: 'sandbox', reason: 'SandboxChanged' },
        { verb: 'start', target: 'c', reason: 'SandboxChanged' },
      ]);
      assert.equal(p.steps[0]!.id, sb!.id);
      assert.equal(p.steps[1]!.attempt, 1);
      const did = await nextActing(pod, since - 1000, 'the sync after the sandbox stopped');
      assert.deepEqual(acting(did.plan), acting(p.steps));
      assert.ok(did.results.some((r) => r.action === 'CreatePodSandbox' && r.ok), JSON.stringify(did.results));
    } finally {
      cri.close();
    }
    await waitPod(pod, 'Running again in its new sandbox', 60_000, running);
  });

  test('a pod being deleted: the plan kills its containers and sandbox, and the termination does; its history outlives it', async () => {
    const created = await createPod(node, 'deleting', { terminationGracePeriodSeconds: 20, containers: [container('c', "trap '' TERM; while true; do sleep 0.2; done")] });
    const pod = await waitPod(created, 'Running', 60_000, running);
    await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: NS });
    const p = await eventually('a plan of the termination', 20_000, async () => {
      const x = await plan(pod);
      return x.worker?.phase === 'terminating' ? x : undefined;
    });
    assert.deepEqual(acting(p.steps), [
      { verb: 'kill', target: 'c', reason: 'Terminating' },
      { verb: 'kill-sandbox', target: '', reason: 'Terminating' },
    ]);
    assert.equal(p.steps[0]!.text, 'kill container c: the pod is being deleted (grace period 20 s)');
    const text = await cli('plan', `${NS}/${pod.metadata!.name}`, '--server', server);
    assert.match(text, /worker terminating now/);
    await eventually('the pod gone from the API', 60_000, async () => (await getPod(pod).then(() => undefined, () => true)));
    const h = await history(pod);
    assert.equal(h.deleted, true);
    const last = h.syncs[h.syncs.length - 1]!;
    assert.equal(last.trigger, 'terminate');
    assert.deepEqual(acting(last.plan), acting(p.steps));
    assert.ok(last.durationMs >= 15_000, `the kill waited out the grace period: ${last.durationMs} ms`);
  });
}
