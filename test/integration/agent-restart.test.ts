// Restarts on the real cluster: the agent killed with SIGKILL adopts what runs; the runtime going
// away and coming back makes syncs fail with a clear error, then recover by themselves.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { CriClient } from '../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';
import { container, core, createPod, getPod, running, waitPod } from '../support/kube.js';

const env = clusterEnv();
const cri = new CriClient(env.runtimeEndpoint);
let agent: RunningAgent;
let node: string;

before(async () => {
  node = uniqueNodeName('it-restart');
  agent = await startAgent(node);
});
after(async () => {
  await cleanupAgent(agent);
  cri.close();
});

const loop = 'while true; do sleep 1; done';

async function containersOf(uid: string) {
  return cri.listContainers({ label_selector: { 'io.kubernetes.pod.uid': uid } });
}

test('the agent killed with SIGKILL while 10 pods run: restarted, it duplicates nothing and keeps restart counts', async () => {
  const created = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      createPod(node, `adopt${i}`, { containers: i % 2 ? [container('c', loop)] : [container('c', loop), container('d', loop)] }),
    ),
  );
  // One pod has restarted once, so there is a restart count to keep (/dev/shm is the sandbox's, it outlives the container).
  const restarted = await createPod(node, 'adopt-restarted', { containers: [container('c', '[ -e /dev/shm/once ] || { touch /dev/shm/once; exit 1; }; while true; do sleep 1; done')] });
  const pods = await Promise.all([...created, restarted].map((p) => waitPod(p, 'Running', 60_000, (x) => (running(x) && (x.metadata!.uid !== restarted.metadata!.uid || x.status!.containerStatuses![0]!.restartCount === 1) ? x : undefined))));
  const before = new Map<string, string[]>();
  for (const p of pods) before.set(p.metadata!.uid!, p.status!.containerStatuses!.map((c) => `${c.name}=${c.containerID}@${c.restartCount}`).sort());

  await agent.kill();
  agent = await startAgent(node);
  // Give the new agent a few sync rounds (PLEG relists every second).
  await new Promise((r) => setTimeout(r, 5000));

  for (const p of pods) {
    const uid = p.metadata!.uid!;
    const now = await getPod(p);
    assert.ok(running(now), `${p.metadata!.name} still Running`);
    assert.deepEqual(now.status!.containerStatuses!.map((c) => `${c.name}=${c.containerID}@${c.restartCount}`).sort(), before.get(uid));
    const inRuntime = await containersOf(uid);
    const runningNow = inRuntime.filter((c) => c.state === 'CONTAINER_RUNNING');
    assert.equal(runningNow.length, p.spec!.containers.length, `${p.metadata!.name}: one running instance per container`);
    const sandboxes = await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } });
    assert.equal(sandboxes.filter((s) => s.state === 'SANDBOX_READY').length, 1, `${p.metadata!.name}: one ready sandbox`);
  }
  assert.equal((await getPod(restarted)).status!.containerStatuses![0]!.restartCount, 1);
});

test('the runtime goes away and comes back: clear errors meanwhile, then everything recovers by itself', async () => {
  const steady = await waitPod(await createPod(node, 'steady', { containers: [container('c', loop)] }), 'Running', 30_000, running);
  const pidFile = join(env.clusterDir, 'containerd.pid');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  const linesBefore = agent.lines.length;
  process.kill(pid, 'SIGTERM');
  await eventually('containerd to stop', 20_000, async () => {
    try {
      process.kill(pid, 0);
      return undefined;
    } catch {
      return true;
    }
  });
  let late: V1Pod | undefined;
  try {
    late = await createPod(node, 'late', { containers: [container('c', loop)] });
    const complaint = await eventually('the agent to report the runtime as unreachable', 20_000, async () =>
      agent.lines.slice(linesBefore).find((l) => typeof l.error === 'string' && l.error.includes(`container runtime is not reachable at ${env.runtimeEndpoint}`)),
    );
    assert.ok(complaint);
    assert.ok(agent.process.exitCode === null, 'the agent keeps running');
    assert.notEqual((await getPod(late)).status?.phase, 'Running');
  } finally {
    execFileSync(join(projectRoot, 'hack/cluster-up.sh'), { stdio: 'ignore' });
  }
  await waitPod(late!, 'Running once the runtime is back', 60_000, running);
  const after = await getPod(steady);
  assert.ok(running(after), 'the steady pod is Running');
  assert.equal(after.status!.containerStatuses![0]!.containerID, steady.status!.containerStatuses![0]!.containerID, 'its container survived the runtime restart');
  assert.equal(after.status!.containerStatuses![0]!.restartCount, 0);
  await core.readNamespacedPod({ name: late!.metadata!.name!, namespace: 'default' });
});
