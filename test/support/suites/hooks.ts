// Lifecycle hooks on the real cluster, once per runtime: a preStop hook runs before the stop
// signal and its sleep delays the stop by that long, within the grace period (and not past it);
// postStart runs right after start, and a failing one kills the container with
// FailedPostStartHook and PostStartHookError.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { eventually } from '../cluster.js';
import { container, createPod, deletePod, getPod, podEvents, podGone, running, waitPod } from '../kube.js';
import type { TestRuntime } from '../runtimes.js';

export function hooksSuite(makeRuntime: () => Promise<TestRuntime>): void {
  let rt: TestRuntime;
  let cri: CriClient;
  let agent: RunningAgent;
  let node: string;

  before(async () => {
    rt = await makeRuntime();
    cri = new CriClient(rt.endpoint);
    node = uniqueNodeName(`it-hook-${rt.name}`);
    agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint]);
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    cri.close();
    await rt.stop();
  });

  /** A directory of the host the pod writes its evidence to. */
  function hostDir(): string {
    const d = mkdtempSync(join(tmpdir(), 'nodelet-hook-'));
    chmodSync(d, 0o777);
    return d;
  }
  const mount = (dir: string) => ({ volumes: [{ name: 'h', hostPath: { path: dir, type: 'Directory' } }], mounts: [{ name: 'h', mountPath: '/h' }] });
  const events = async (pod: V1Pod, reason: string) => (await podEvents(pod)).filter((e) => e.reason === reason).map((e) => e.message ?? '');

  test('a preStop hook runs before the stop signal, and its sleep delays the stop by that long, within the grace period', async () => {
    const dir = hostDir();
    const { volumes, mounts } = mount(dir);
    const created = await createPod(node, 'prestop', {
      terminationGracePeriodSeconds: 30,
      volumes,
      containers: [
        container('exec', "trap 'cat /h/hook > /h/seen 2>/dev/null; exit 0' TERM; while true; do sleep 0.2; done", {
          volumeMounts: mounts,
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo ran > /h/hook'] } } },
        }),
        container('sleep', "trap 'date +%s > /h/term; exit 0' TERM; while true; do sleep 0.2; done", { volumeMounts: mounts, lifecycle: { preStop: { sleep: { seconds: 4 } } } }),
      ],
    });
    const pod = await waitPod(created, 'Running', 60_000, running);
    const deletedAt = Date.now() / 1000;
    await deletePod(pod);
    await podGone(pod, 40_000);
    assert.equal(readFileSync(join(dir, 'seen'), 'utf8').trim(), 'ran', 'the exec hook ran before SIGTERM reached the container');
    const term = Number(readFileSync(join(dir, 'term'), 'utf8'));
    // date +%s has whole seconds: the signal came no sooner than the sleep's 4 s (less the rounding), well within 30.
    assert.ok(term - Math.floor(deletedAt) >= 3, `SIGTERM ${term - deletedAt} s after the delete`);
    assert.ok(term - deletedAt < 20, `SIGTERM ${term - deletedAt} s after the delete`);
  });

  test('a preStop hook that outlasts the grace period is cut short: the container stops within it', async () => {
    const created = await createPod(node, 'prestop-long', {
      terminationGracePeriodSeconds: 3,
      containers: [container('c', "trap 'exit 0' TERM; while true; do sleep 0.2; done", { lifecycle: { preStop: { exec: { command: ['sleep', '120'] } } } })],
    });
    const pod = await waitPod(created, 'Running', 60_000, running);
    const t0 = Date.now();
    await deletePod(pod);
    await podGone(pod, 30_000);
    assert.ok(Date.now() - t0 < 15_000, `gone ${(Date.now() - t0) / 1000} s after the delete, not after the hook's 120 s`);
  });

  test('a postStart hook runs right after the start, before the container is reported running', async () => {
    const created = await createPod(node, 'poststart', {
      containers: [container('c', "trap 'exit 0' TERM; while true; do sleep 0.2; done", { lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo hooked > /tmp/poststart'] } } } })],
    });
    const pod = await waitPod(created, 'Running', 60_000, running);
    const id = pod.status!.containerStatuses![0]!.containerID!.replace(/^[^:]+:\/\//, '');
    const r = await cri.execSync(id, ['cat', '/tmp/poststart'], 10);
    assert.equal(Buffer.from(r.stdout).toString().trim(), 'hooked');
  });

  test('a failing postStart hook kills the container: FailedPostStartHook, Killing, and PostStartHookError with the hook\'s output', async () => {
    const created = await createPod(node, 'poststart-fail', {
      containers: [container('c', "trap 'exit 0' TERM; while true; do sleep 0.2; done", { lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo oops; exit 3'] } } } })],
    });
    const waiting = await waitPod(created, 'PostStartHookError', 60_000, (p) => {
      const w = p.status?.containerStatuses?.[0]?.state?.waiting;
      return w?.reason === 'PostStartHookError' ? w : undefined;
    });
    assert.match(waiting.message ?? '', /^Exec lifecycle hook \(\[sh -c echo oops; exit 3\]\) for Container "c" in Pod "poststart-fail-\w+_default\([0-9a-f-]+\)" failed - error: command 'sh -c echo oops; exit 3' exited with 3: , message: "oops\\n"$/);
    await eventually('the events', 20_000, async () => {
      const failed = await events(created, 'FailedPostStartHook');
      const killing = await events(created, 'Killing');
      return failed.includes('PostStartHook failed') && killing.includes('FailedPostStartHook') ? true : undefined;
    });
    const after = await getPod(created);
    assert.ok(!after.status!.containerStatuses![0]!.state?.running || after.status!.containerStatuses![0]!.restartCount >= 1, 'the container did not go on running');
  });
}
