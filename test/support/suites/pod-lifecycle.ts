// The core pipeline on the real cluster: nodelet (the CLI, as a child process) runs pods created
// through the API in a real runtime (containerd, or nodelet's process runtime), and reports status
// and events back. One suite, run once per runtime by the *.test.ts files that call it.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { CriClient } from '../../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { clusterEnv, eventually } from '../cluster.js';
import { container, core, createPod, getPod, nodeV1, NS, podEvents, podGone, running, waitPod, watchDeletion } from '../kube.js';
import type { TestRuntime } from '../runtimes.js';
import { casesOf, type SuiteOptions } from '../cases.js';

export function podLifecycleSuite(makeRuntime: () => Promise<TestRuntime>, opts: SuiteOptions = {}): void {
const test = casesOf(opts);
const env = clusterEnv();
let rt: TestRuntime;
let cri: CriClient;
let agent: RunningAgent;
let node: string;

before(async () => {
  rt = await makeRuntime();
  cri = new CriClient(rt.endpoint);
  node = uniqueNodeName(`it-life-${rt.name}`);
  agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint], { place: rt.place });
});
after(async () => {
  await cleanupAgent(agent, rt.endpoint);
  cri.close();
  await rt.stop();
});

const loop = "trap 'exit 0' TERM; while true; do sleep 0.2; done";
const lstatOrUndefined = (p: string) => {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
};

async function eventCount(pod: V1Pod, reason: string, fieldPath?: string): Promise<number> {
  return (await podEvents(pod))
    .filter((e) => e.reason === reason && (!fieldPath || e.involvedObject.fieldPath === fieldPath))
    .reduce((n, e) => n + (e.count ?? 1), 0);
}

test('a pod with two containers runs: Running, both ready, a pod IP, real container IDs', async () => {
  const created = await createPod(node, 'two', { containers: [container('a', loop), container('b', loop)] });
  const pod = await waitPod(created, 'Running with both containers ready', 30_000, running);
  assert.ok(rt.checkPodIP(pod.status!.podIP!, pod.status!.hostIP!), `pod IP ${pod.status!.podIP} (${rt.podNetwork ? 'from the bridge' : 'the host\'s'})`);
  assert.deepEqual(pod.status!.podIPs!.map((p) => p.ip), [pod.status!.podIP]);
  assert.equal(pod.status!.qosClass, 'BestEffort');
  assert.ok(pod.status!.startTime);
  for (const type of ['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready']) {
    assert.equal(pod.status!.conditions!.find((c) => c.type === type)?.status, 'True', `${type} is True`);
  }
  const inRuntime = await cri.listContainers({ label_selector: { 'io.kubernetes.pod.uid': pod.metadata!.uid! } });
  for (const cs of pod.status!.containerStatuses!) {
    assert.equal(cs.restartCount, 0);
    assert.ok(cs.state?.running?.startedAt);
    assert.equal(cs.image, env.testImage);
    assert.ok(cs.containerID!.startsWith(`${rt.idScheme}://`), cs.containerID);
    const id = cs.containerID!.replace(`${rt.idScheme}://`, '');
    // The runtime's image_ref: an image ID, or a repo digest when the image came from a registry
    // (containerd names it so once any tag of that image was pulled, as the kubelet reports too).
    const imageRef = (await cri.containerStatus(id)).status?.image_ref;
    assert.match(cs.imageID, /^(\S+@)?sha256:[0-9a-f]{64}$/);
    assert.equal(cs.imageID, imageRef);
    const match = inRuntime.find((c) => c.id === id);
    assert.ok(match, `${cs.containerID} exists in containerd`);
    assert.equal(match.labels['io.kubernetes.container.name'], cs.name);
    assert.equal(match.state, 'CONTAINER_RUNNING');
  }
  const events = await podEvents(pod);
  for (const name of ['a', 'b']) {
    const e = events.find((x) => x.reason === 'Started' && x.involvedObject.fieldPath === `spec.containers{${name}}`);
    assert.ok(e, `Started event for ${name}`);
    assert.equal(e.message, 'Container started');
    assert.equal(e.source?.component, 'nodelet');
    assert.equal(e.source?.host, node);
  }
});

test('a request of "0" and pod-level resources: each pod becomes Ready with the qosClass the API server gave it', async () => {
  const zero = await createPod(node, 'qos-zero', { containers: [container('a', loop, { resources: { requests: { cpu: '0' } } })] });
  const podLevel = await createPod(node, 'qos-podlevel', { resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } }, containers: [container('a', loop)] } as never);
  for (const [created, qos] of [[zero, 'BestEffort'], [podLevel, 'Guaranteed']] as const) {
    const pod = await waitPod(created, 'Running and Ready', 30_000, running);
    assert.equal(pod.status!.qosClass, qos, pod.metadata!.name);
    assert.equal(pod.status!.conditions!.find((c) => c.type === 'Ready')?.status, 'True');
  }
  // Their requests would be counted by the admission of the cases after this one.
  await Promise.all([zero, podLevel].map((p) => core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: p.metadata!.namespace!, gracePeriodSeconds: 0 })));
  await Promise.all([zero, podLevel].map((p) => podGone(p, 30_000)));
});

test('a crash-looping container: restarts grow, CrashLoopBackOff between them, back-off 10 s then 20 s', async () => {
  // As the kubelet: the first restart is immediate, then the back-off starts at 10 s and doubles.
  const created = await createPod(node, 'crash', { containers: [container('c', 'echo bye; exit 1')] });
  const waitingSeen = new Set<string>();
  const pod = await waitPod(created, 'three restarts', 60_000, (p) => {
    const cs = p.status?.containerStatuses?.[0];
    if (cs?.state?.waiting?.reason) waitingSeen.add(cs.state.waiting.reason);
    return (cs?.restartCount ?? 0) >= 3 ? p : undefined;
  });
  const cs = pod.status!.containerStatuses![0]!;
  assert.ok(waitingSeen.has('CrashLoopBackOff'), `waiting reasons seen: ${[...waitingSeen].join(', ')}`);
  assert.equal(cs.lastState?.terminated?.exitCode, 1);
  assert.equal(cs.lastState?.terminated?.reason, 'Error');
  const backOff = (await podEvents(pod)).filter((e) => e.reason === 'BackOff');
  assert.equal(backOff.length, 1, 'repeats aggregate into one Event');
  assert.equal(backOff[0]!.message, `Back-off restarting failed container c in pod ${pod.metadata!.name}_${pod.metadata!.namespace}(${pod.metadata!.uid})`);
  assert.equal(backOff[0]!.type, 'Warning');
  assert.equal(backOff[0]!.involvedObject.fieldPath, 'spec.containers{c}');
  assert.ok((backOff[0]!.count ?? 0) > 1, `BackOff count ${backOff[0]!.count}`);

  // The back-off intervals, from the runtime's own timestamps: each start after the previous exit.
  const ids = (await cri.listContainers({ label_selector: { 'io.kubernetes.pod.uid': pod.metadata!.uid! } })).map((c) => c.id);
  const instances = (await Promise.all(ids.map((id) => cri.containerStatus(id)))).map((r) => r.status!).sort((a, b) => a.metadata!.attempt - b.metadata!.attempt);
  assert.deepEqual(instances.map((i) => i.metadata!.attempt).slice(0, 4), [0, 1, 2, 3]);
  const gap = (i: number) => (Number(instances[i]!.started_at) - Number(instances[i - 1]!.finished_at)) / 1e9;
  assert.ok(gap(1) < 3, `first restart is immediate (${gap(1).toFixed(1)} s)`);
  assert.ok(gap(2) >= 9.5 && gap(2) < 14, `first back-off ${gap(2).toFixed(1)} s, expected 10 s`);
  assert.ok(gap(3) >= 19.5 && gap(3) < 24, `second back-off ${gap(3).toFixed(1)} s, expected 20 s`);
});

test('a sandbox stopped behind the agent\'s back: SandboxChanged, a new sandbox with attempt 1, Running again', async () => {
  const created = await createPod(node, 'sandbox', { containers: [container('c', loop)] });
  const pod = await waitPod(created, 'Running', 30_000, running);
  const uid = pod.metadata!.uid!;
  const [first] = await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } });
  assert.ok(first);
  await cri.stopPodSandbox(first.id);
  const sandboxes = await eventually('a new ready sandbox', 30_000, async () => {
    const list = await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } });
    return list.some((s) => s.id !== first.id && s.state === 'SANDBOX_READY') ? list : undefined;
  });
  const fresh = sandboxes.find((s) => s.id !== first.id)!;
  assert.equal(fresh.metadata?.attempt, first.metadata!.attempt + 1);
  const again = await waitPod(pod, 'Running in the new sandbox', 30_000, (p) => (running(p) && p.status!.containerStatuses![0]!.restartCount === 1 ? p : undefined));
  assert.ok(again);
  const changed = (await podEvents(pod)).find((e) => e.reason === 'SandboxChanged');
  assert.equal(changed?.message, 'Pod sandbox changed, it will be killed and re-created.');
  assert.equal(changed?.type, 'Normal');
});

test('init containers run one at a time, in order, before the app container', async () => {
  const created = await createPod(node, 'init', {
    initContainers: [container('i1', 'sleep 1'), container('i2', 'sleep 1')],
    containers: [container('app', loop)],
  });
  const pod = await waitPod(created, 'Running after init', 40_000, running);
  const inits = pod.status!.initContainerStatuses!;
  assert.deepEqual(inits.map((s) => [s.name, s.state?.terminated?.reason, s.state?.terminated?.exitCode, s.ready]), [
    ['i1', 'Completed', 0, true],
    ['i2', 'Completed', 0, true],
  ]);
  const t = (d: Date | undefined) => new Date(d!).getTime();
  assert.ok(t(inits[0]!.state!.terminated!.finishedAt) <= t(inits[1]!.state!.terminated!.startedAt), 'i2 starts after i1 finished');
  assert.ok(t(inits[1]!.state!.terminated!.finishedAt) <= t(pod.status!.containerStatuses![0]!.state!.running!.startedAt), 'app starts after i2 finished');
  assert.equal(pod.status!.conditions!.find((c) => c.type === 'Initialized')?.status, 'True');
});

test('a failing init container: Never makes the pod Failed; Always retries it with back-off', async () => {
  const never = await createPod(node, 'init-never', { restartPolicy: 'Never', initContainers: [container('i', 'exit 3')], containers: [container('app', loop)] });
  const always = await createPod(node, 'init-always', { restartPolicy: 'Always', initContainers: [container('i', 'exit 3')], containers: [container('app', loop)] });
  const failed = await waitPod(never, 'Failed', 30_000, (p) => (p.status?.phase === 'Failed' ? p : undefined));
  assert.equal(failed.status!.initContainerStatuses![0]!.state?.terminated?.exitCode, 3);
  assert.equal(failed.status!.containerStatuses![0]!.state?.waiting?.reason, 'PodInitializing');
  const retried = await waitPod(always, 'init container restarted and backing off', 40_000, (p) => {
    const s = p.status?.initContainerStatuses?.[0];
    return s && s.restartCount >= 1 && s.state?.waiting?.reason === 'CrashLoopBackOff' ? p : undefined;
  });
  assert.equal(retried.status!.phase, 'Pending');
  assert.equal(retried.status!.initContainerStatuses![0]!.lastState?.terminated?.exitCode, 3);
  assert.equal(retried.status!.conditions!.find((c) => c.type === 'Initialized')?.reason, 'ContainersNotInitialized');
  assert.ok((await eventCount(retried, 'BackOff', 'spec.initContainers{i}')) >= 1);
});

test('OnFailure with exit 0 is not restarted and Succeeds; Never with exit 1 Fails', async () => {
  const ok = await createPod(node, 'onfailure', { restartPolicy: 'OnFailure', containers: [container('c', 'exit 0')] });
  const bad = await createPod(node, 'never', { restartPolicy: 'Never', containers: [container('c', 'exit 1')] });
  const succeeded = await waitPod(ok, 'Succeeded', 30_000, (p) => (p.status?.phase === 'Succeeded' ? p : undefined));
  assert.equal(succeeded.status!.containerStatuses![0]!.restartCount, 0);
  assert.equal(succeeded.status!.containerStatuses![0]!.state?.terminated?.reason, 'Completed');
  assert.equal(succeeded.status!.conditions!.find((c) => c.type === 'Ready')?.reason, 'PodCompleted');
  const failed = await waitPod(bad, 'Failed', 30_000, (p) => (p.status?.phase === 'Failed' ? p : undefined));
  assert.equal(failed.status!.containerStatuses![0]!.state?.terminated?.exitCode, 1);
  // Finished pods stay finished: nothing restarts them over several resyncs of the PLEG.
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal((await getPod(ok)).status!.containerStatuses![0]!.restartCount, 0);
  assert.equal((await getPod(bad)).status!.containerStatuses![0]!.restartCount, 0);
  assert.equal((await getPod(bad)).status!.phase, 'Failed');
});

test('kubectl delete: SIGTERM first, SIGKILL after the grace period, sandbox stopped, Pod object gone', async () => {
  const created = await createPod(node, 'delete', {
    terminationGracePeriodSeconds: 3,
    containers: [
      container('polite', "trap 'echo got-TERM; exit 0' TERM; while true; do sleep 0.2; done"),
      container('stubborn', "trap '' TERM; while true; do sleep 0.2; done"),
    ],
  });
  const pod = await waitPod(created, 'Running', 30_000, running);
  const uid = pod.metadata!.uid!;
  const { deleted } = await watchDeletion(pod, 30_000);
  const started = Date.now();
  await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: NS });
  const last = await deleted;
  const took = (Date.now() - started) / 1000;
  assert.ok(took >= 3, `the stubborn container held the deletion for its grace period (${took.toFixed(1)} s)`);
  // The containers themselves are gone from the runtime by now (a deleted pod's dead containers
  // are removed at once, as the kubelet's container deletor does): their end is in the last status.
  const ended = Object.fromEntries(last.status!.containerStatuses!.map((c) => [c.name, c.state?.terminated]));
  assert.equal(ended.polite?.exitCode, 0, 'the polite container exited on SIGTERM');
  assert.equal(ended.stubborn?.exitCode, 137, 'the stubborn one was SIGKILLed');
  // finishedAt has whole seconds: 3 s apart reads 2 to 4.
  const stopDelay = (new Date(ended.stubborn!.finishedAt!).getTime() - new Date(ended.polite!.finishedAt!).getTime()) / 1000;
  assert.ok(stopDelay >= 2, `SIGKILL came about the grace period after SIGTERM (${stopDelay.toFixed(1)} s)`);
  const sandboxes = await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } });
  assert.ok(sandboxes.every((s) => s.state === 'SANDBOX_NOTREADY'), 'no sandbox of the pod is left ready (stopped, or already removed)');
  const killing = (await core.listNamespacedEvent({ namespace: NS, fieldSelector: `involvedObject.uid=${uid},reason=Killing` })).items;
  assert.deepEqual(killing.map((e) => e.message).sort(), ['Stopping container polite', 'Stopping container stubborn']);
});

test('a shorter grace period during a kill (kubectl delete --grace-period=1 after a 120 s delete) cuts the kill short', async () => {
  const created = await createPod(node, 'regrace', { terminationGracePeriodSeconds: 120, containers: [container('stubborn', "trap '' TERM; while true; do sleep 0.2; done")] });
  const pod = await waitPod(created, 'Running', 30_000, running);
  const { deleted } = await watchDeletion(pod, 60_000);
  await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: NS });
  await eventually('the kill to begin (Killing)', 20_000, async () => ((await eventCount(pod, 'Killing')) > 0 ? true : undefined));
  const shortened = Date.now();
  await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: NS, gracePeriodSeconds: 1 });
  const last = await deleted;
  const took = (Date.now() - shortened) / 1000;
  assert.ok(took < 20, `gone ${took.toFixed(1)} s after the 1 s grace period was given, not after 120 s`);
  assert.equal(last.status!.containerStatuses![0]!.state?.terminated?.exitCode, 137, 'SIGKILLed');
});

test('the environment reaches the container intact: values, $(VAR) expansion, downward API fields', async () => {
  const created = await createPod(node, 'env', {
    containers: [
      container('c', 'echo "A=$A B=$B NAME=$POD_NAME NS=$POD_NS IP=$POD_IP"; while true; do sleep 1; done', {
        env: [
          { name: 'A', value: 'héllo wörld' },
          { name: 'B', value: '$(A)!' },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'POD_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
        ],
      }),
    ],
  });
  const pod = await waitPod(created, 'Running', 30_000, running);
  const log = join(agent.podLogRoot, `${NS}_${pod.metadata!.name}_${pod.metadata!.uid}`, 'c', '0.log');
  const line = await eventually('the container\'s first line in its CRI log', 10_000, async () => (existsSync(log) ? /stdout F (A=.*)$/m.exec(readFileSync(log, 'utf8'))?.[1] : undefined));
  assert.equal(line, `A=héllo wörld B=héllo wörld! NAME=${pod.metadata!.name} NS=${NS} IP=${pod.status!.podIP}`);
});

test('a variable from an env file an init container wrote (fileKeyRef), and the legacy log link of the container, gone with its pod', async () => {
  const created = await createPod(node, 'envfile', {
    volumes: [{ name: 'config', emptyDir: {} }],
    initContainers: [container('setup', "printf \"# written at start\\nCONFIG_1='value 1'\\n\" > /data/config.env", { volumeMounts: [{ name: 'config', mountPath: '/data' }] })],
    containers: [container('c', 'echo "CONFIG_1=$CONFIG_1"; while true; do sleep 1; done', { env: [{ name: 'CONFIG_1', valueFrom: { fileKeyRef: { volumeName: 'config', path: 'config.env', key: 'CONFIG_1' } } }] })],
  });
  const pod = await waitPod(created, 'Running', 30_000, running);
  const id = pod.status!.containerStatuses![0]!.containerID!.replace(/^[a-z-]+:\/\//, '');
  const link = join(dirname(agent.podLogRoot), 'containers', `${pod.metadata!.name}_${NS}_c-${id}.log`);
  const line = await eventually('the container\'s first line through its legacy log link', 10_000, async () => (existsSync(link) ? /stdout F (CONFIG_1=.*)$/m.exec(readFileSync(link, 'utf8'))?.[1] : undefined));
  assert.equal(line, 'CONFIG_1=value 1');
  assert.equal(readlinkSync(link), join(agent.podLogRoot, `${NS}_${pod.metadata!.name}_${pod.metadata!.uid}`, 'c', '0.log'));
  await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: NS, gracePeriodSeconds: 0 });
  await podGone(pod, 30_000);
  await eventually('the link to be removed with its container', 30_000, async () => (lstatOrUndefined(link) ? undefined : true));
});

test('runAsNonRoot with an image that runs as root: CreateContainerConfigError in the kubelet\'s words, nothing started', async () => {
  const created = await createPod(node, 'nonroot', { securityContext: { runAsNonRoot: true }, containers: [container('c', loop)] });
  const pod = await waitPod(created, 'refused', 30_000, (p) => (p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError' ? p : undefined));
  assert.equal(pod.status!.containerStatuses![0]!.state!.waiting!.message, `container has runAsNonRoot and image will run as root (pod: "${pod.metadata!.name}_${NS}(${pod.metadata!.uid})", container: c)`);
  const events = await podEvents(pod);
  assert.ok(events.some((e) => e.reason === 'Failed' && e.type === 'Warning' && /image will run as root/.test(e.message ?? '')), JSON.stringify(events.map((e) => e.message)));
});

test('a hostNetwork pod\'s status.podIP env var is the node\'s IP, as its status says', async () => {
  const created = await createPod(node, 'hostnet-env', {
    hostNetwork: true,
    containers: [container('c', 'echo "IP=$POD_IP HOST=$HOST_IP"; while true; do sleep 1; done', { env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }, { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } }] })],
  });
  const pod = await waitPod(created, 'Running', 30_000, running);
  const log = join(agent.podLogRoot, `${NS}_${pod.metadata!.name}_${pod.metadata!.uid}`, 'c', '0.log');
  const line = await eventually('the container\'s first line in its CRI log', 10_000, async () => (existsSync(log) ? /stdout F (IP=.*)$/m.exec(readFileSync(log, 'utf8'))?.[1] : undefined));
  assert.equal(line, `IP=${pod.status!.hostIP} HOST=${pod.status!.hostIP}`);
  assert.equal(pod.status!.podIP, pod.status!.hostIP);
});

test('changing a container image in place: killed as "definition changed" and started with the new image', async () => {
  const created = await createPod(node, 'patch', { containers: [container('c', loop)] });
  const pod = await waitPod(created, 'Running', 30_000, running);
  await core.patchNamespacedPod(
    { name: pod.metadata!.name!, namespace: NS, body: { spec: { containers: [{ name: 'c', image: env.testImage2 }] } } },
    (await import('@kubernetes/client-node')).setHeaderOptions('Content-Type', 'application/strategic-merge-patch+json'),
  );
  const patched = await waitPod(pod, 'running the new image', 30_000, (p) => {
    const cs = p.status?.containerStatuses?.[0];
    return cs?.image === env.testImage2 && cs.state?.running && cs.restartCount === 1 ? p : undefined;
  });
  assert.ok(patched);
  const killing = (await podEvents(pod)).find((e) => e.reason === 'Killing');
  assert.equal(killing?.message, 'Container c definition changed, will be restarted');
  assert.equal(killing?.involvedObject.fieldPath, 'spec.containers{c}');
});

test('an ephemeral container added to a running pod runs (once), beside the others, in the target\'s PID namespace', async () => {
  const created = await createPod(node, 'debug', { containers: [container('app', loop)] });
  const pod = await waitPod(created, 'Running', 30_000, running);
  await core.patchNamespacedPodEphemeralcontainers(
    {
      name: pod.metadata!.name!,
      namespace: NS,
      body: { spec: { ephemeralContainers: [{ name: 'debugger', image: env.testImage, command: ['sh', '-c', 'echo polo; exec sleep 3600'], targetContainerName: 'app' }] } },
    },
    (await import('@kubernetes/client-node')).setHeaderOptions('Content-Type', 'application/strategic-merge-patch+json'),
  );
  const debugged = await waitPod(pod, 'the ephemeral container running', 30_000, (p) => (p.status?.ephemeralContainerStatuses?.[0]?.state?.running ? p : undefined));
  const es = debugged.status!.ephemeralContainerStatuses![0]!;
  assert.equal(es.name, 'debugger');
  assert.equal(es.ready, false, 'never ready');
  assert.equal(debugged.status!.containerStatuses![0]!.restartCount, 0, 'the app is not touched');
  const id = es.containerID!.replace(`${rt.idScheme}://`, '');
  const out = await cri.execSync(id, ['echo', 'marco'], 10);
  assert.equal(Buffer.from(out.stdout).toString().trim(), 'marco');
  // In the target's PID namespace: the app's loop is among its processes.
  const ps = await cri.execSync(id, ['ps', '-o', 'args'], 10);
  assert.match(Buffer.from(ps.stdout).toString(), /while true; do sleep 0\.2; done/);
  const log = join(agent.podLogRoot, `${NS}_${pod.metadata!.name}_${pod.metadata!.uid}`, 'debugger', '0.log');
  await eventually('its output in its log', 10_000, async () => (existsSync(log) && readFileSync(log, 'utf8').includes('polo') ? true : undefined));
  assert.ok((await podEvents(pod)).some((e) => e.reason === 'Started' && e.involvedObject.fieldPath === 'spec.ephemeralContainers{debugger}'));
});

test('runtimeClassName: the sandbox runs with the RuntimeClass\'s handler; a RuntimeClass gone before the pod reaches the node fails its sandbox in the kubelet\'s words', async () => {
  const rc = `nodelet-${rt.name}-${Date.now().toString(36)}`;
  await nodeV1.createRuntimeClass({ body: { metadata: { name: rc }, handler: rt.handler } });
  try {
    const created = await createPod(node, 'rc', { runtimeClassName: rc, containers: [container('c', loop)] });
    const pod = await waitPod(created, 'Running with its RuntimeClass', 30_000, running);
    const [sb] = await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': pod.metadata!.uid! } });
    assert.ok(sb, 'its sandbox');
    if (rt.name === 'containerd') assert.equal(sb.runtime_handler, rt.handler);
    // Admission refuses a pod naming a RuntimeClass that does not exist, so it goes away between
    // the pod's creation and its binding to this node.
    const gone = `${rc}-gone`;
    await nodeV1.createRuntimeClass({ body: { metadata: { name: gone }, handler: rt.handler } });
    const unbound = await core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name: `rc-gone-${Date.now().toString(36)}` }, spec: { schedulerName: 'nobody', runtimeClassName: gone, terminationGracePeriodSeconds: 1, containers: [container('c', loop)] } },
    });
    await nodeV1.deleteRuntimeClass({ name: gone });
    await core.createNamespacedPodBinding({ name: unbound.metadata!.name!, namespace: NS, body: { metadata: { name: unbound.metadata!.name! }, target: { kind: 'Node', name: node } } });
    const message = `Failed to create pod sandbox: runtimeclass.node.k8s.io "${gone}" not found`;
    await eventually('FailedCreatePodSandBox for the missing RuntimeClass', 30_000, async () =>
      (await podEvents(unbound)).some((e) => e.type === 'Warning' && e.reason === 'FailedCreatePodSandBox' && e.message === message) ? true : undefined,
    );
    const st = (await getPod(unbound)).status!;
    assert.equal(st.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    assert.equal((await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': unbound.metadata!.uid! } })).length, 0, 'no sandbox made');
  } finally {
    await nodeV1.deleteRuntimeClass({ name: rc }).catch(() => undefined);
  }
});

test('in-place resize (pods/resize): applied to the running container with no restart, reported as the kubelet reports it; a RestartContainer policy restarts; no room defers', async () => {
  const resources = (cpu: number, memory: string) => ({ requests: { cpu: `${cpu}m`, memory }, limits: { cpu: `${cpu * 2}m`, memory } });
  const created = await createPod(node, 'resize', {
    containers: [container('c', loop, { resources: resources(100, '64Mi'), resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] })],
  });
  const pod = await waitPod(created, 'Running', 30_000, running);
  const id = pod.status!.containerStatuses![0]!.containerID!;
  const resize = (body: object) =>
    execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, '-n', NS, 'patch', 'pod', pod.metadata!.name!, '--subresource', 'resize', '--type', 'strategic', '-p', JSON.stringify(body)], { stdio: 'pipe' });
  resize({ spec: { containers: [{ name: 'c', resources: resources(150, '64Mi') }] } });
  const resized = await waitPod(pod, 'the new CPU in the status', 30_000, (p) => {
    const cs = p.status?.containerStatuses?.[0];
    return cs?.resources?.limits?.cpu === '300m' && !p.status?.conditions?.some((c) => c.type === 'PodResizeInProgress') ? p : undefined;
  });
  const cs = resized.status!.containerStatuses![0]!;
  assert.equal(cs.containerID, id, 'the same container');
  assert.equal(cs.restartCount, 0);
  assert.deepEqual(cs.allocatedResources, { cpu: '150m', memory: '64Mi' });
  const st = (await cri.containerStatus(id.replace(`${rt.idScheme}://`, ''))).status!;
  if (st.resources?.linux) assert.equal(st.resources.linux.cpu_quota, '30000', 'the runtime runs it with the new CFS quota');
  const events = await podEvents(pod);
  assert.ok(events.some((e) => e.reason === 'ResizeStarted' && /^Pod resize started: \{"containers":\[\{"name":"c","resources":\{"limits":\{"cpu":"300m"/.test(e.message ?? '')), JSON.stringify(events.map((e) => e.message)));
  await eventually('ResizeCompleted', 20_000, async () => ((await podEvents(pod)).some((e) => e.reason === 'ResizeCompleted' && /^Pod resize completed: /.test(e.message ?? '')) ? true : undefined));

  // Memory has RestartContainer: the container is restarted with it.
  resize({ spec: { containers: [{ name: 'c', resources: resources(150, '96Mi') }] } });
  const restarted = await waitPod(pod, 'restarted for the memory resize', 30_000, (p) => {
    const s = p.status?.containerStatuses?.[0];
    return s?.restartCount === 1 && s.state?.running && s.resources?.limits?.memory === '96Mi' ? p : undefined;
  });
  assert.notEqual(restarted.status!.containerStatuses![0]!.containerID, id);
  assert.ok((await podEvents(pod)).some((e) => e.reason === 'Killing' && e.message === 'Container c resize requires restart'));

  // More CPU than is left beside another pod (the API refuses more than the node has): Deferred,
  // the container keeps what it has; once the other pod goes, the resize is allocated. The other
  // pod leaves half a CPU of the node's (two here, one on a lab node).
  const cpus = (await core.readNode({ name: node })).status!.capacity!.cpu!;
  const otherMilli = (cpus.endsWith('m') ? Number(cpus.slice(0, -1)) : Number(cpus) * 1000) - 500;
  const other = await createPod(node, 'resize-other', { containers: [container('c', loop, { resources: { requests: { cpu: `${otherMilli}m` } } })] });
  await waitPod(other, 'the other pod Running', 30_000, running);
  resize({ spec: { containers: [{ name: 'c', resources: resources(1000, '96Mi') }] } });
  const deferred = await waitPod(pod, 'PodResizePending', 30_000, (p) => (p.status?.conditions?.some((c) => c.type === 'PodResizePending') ? p : undefined));
  const pending = deferred.status!.conditions!.find((c) => c.type === 'PodResizePending')!;
  assert.equal(pending.reason, 'Deferred');
  assert.match(pending.message ?? '', new RegExp(`^Node didn't have enough resource: cpu, requested: 1000, used: ${otherMilli}, capacity: \\d+$`));
  assert.equal(deferred.status!.containerStatuses![0]!.resources?.limits?.cpu, '300m');
  assert.ok((await podEvents(pod)).some((e) => e.type === 'Warning' && e.reason === 'ResizeDeferred' && /^Pod resize OutOfcpu: /.test(e.message ?? '')));
  await core.deleteNamespacedPod({ name: other.metadata!.name!, namespace: NS, gracePeriodSeconds: 0 });
  await waitPod(pod, 'the deferred resize applied once there is room', 30_000, (p) =>
    p.status?.containerStatuses?.[0]?.resources?.limits?.cpu === '2' && !p.status.conditions?.some((c) => c.type === 'PodResizePending') ? p : undefined,
  );
});

test('at rest, a resync reads the pod from the pod cache, not the runtime; a container stopped behind the agent\'s back is still restarted', async () => {
  // An agent of its own, resyncing every second, so that resyncs happen within the test.
  // Where the agent's place reads it too (a lab node sees the lab's directory, not this /tmp).
  const dir = mkdtempSync(join(env.clusterDir, 'nodelet-cache-'));
  const config = join(dir, 'nodelet.yaml');
  writeFileSync(config, 'apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\nsyncFrequency: 1s\n');
  const quick = await startAgent(uniqueNodeName(`it-cache-${rt.name}`), ['--runtime-endpoint', rt.endpoint, '--config', config], { place: rt.place });
  try {
    const created = await createPod(quick.nodeName, 'cached', { containers: [container('c', loop)] });
    const pod = await waitPod(created, 'Running', 30_000, running);
    const calls = async () => {
      const text = await (await fetch(`http://127.0.0.1:${quick.localPort}/metrics`)).text();
      const count = (op: string) => Number(new RegExp(`^kubelet_runtime_operations_duration_seconds_count\\{operation_type="${op}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
      return { container: count('container_status'), sandbox: count('pod_sandbox_status'), syncs: Number(/^kubelet_pod_worker_duration_seconds_count\{operation="sync"\} (\d+)/m.exec(text)?.[1] ?? 0) };
    };
    // The first resync reads the pod (the start's sync acted); the ones after it are served from the cache.
    await new Promise((r) => setTimeout(r, 4000));
    const a = await calls();
    await new Promise((r) => setTimeout(r, 6000));
    const b = await calls();
    assert.ok(b.syncs - a.syncs >= 3, `resyncs happened (${b.syncs - a.syncs})`);
    // Each resync without the cache reads the sandbox and the container; the log manager asks once
    // for a container's log path when it first sees the container (its pass every 10 s may fall here).
    assert.equal(b.sandbox - a.sandbox, 0, 'no sandbox status read from the runtime at rest');
    assert.ok(b.container - a.container <= 1, `no container status read at rest but the log manager's first look (${b.container - a.container})`);
    // A change the agent did not make reaches it as a PLEG event, which drops the cached status.
    const [c] = await cri.listContainers({ label_selector: { 'io.kubernetes.pod.uid': pod.metadata!.uid! } });
    await cri.stopContainer(c!.id, 0);
    await waitPod(pod, 'Running again, restarted once', 30_000, (p) => (running(p) && p.status!.containerStatuses![0]!.restartCount === 1 ? p : undefined));
  } finally {
    await cleanupAgent(quick, rt.endpoint);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a pod of this node that no worker has (started behind the agent\'s back) is killed by housekeeping, as the kubelet\'s HandlePodCleanups does', async () => {
  const uid = randomUUID();
  const logDir = join(agent.podLogRoot, `${NS}_unwanted_${uid}`);
  mkdirSync(logDir, { recursive: true });
  const config = {
    metadata: { name: 'unwanted', uid, namespace: NS, attempt: 0 },
    hostname: 'unwanted',
    log_directory: logDir,
    labels: { 'nodelet.io/node-name': node, 'io.kubernetes.pod.uid': uid },
    linux: { security_context: { namespace_options: { network: 'POD' as const, pid: 'CONTAINER' as const, ipc: 'POD' as const } } },
  };
  const sb = await cri.runPodSandbox(config);
  const c = await cri.createContainer(sb, { metadata: { name: 'c', attempt: 0 }, image: { image: env.testImage }, command: ['sleep', '3600'], labels: { 'nodelet.io/node-name': node, 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'c', 'io.kubernetes.pod.name': 'unwanted', 'io.kubernetes.pod.namespace': NS }, log_path: 'c/0.log' }, config);
  await cri.startContainer(c);
  try {
    await eventually('the unwanted pod stopped', 30_000, async () => {
      const [s] = await cri.listPodSandbox({ id: sb });
      const [k] = await cri.listContainers({ id: c });
      return s?.state === 'SANDBOX_NOTREADY' && k?.state === 'CONTAINER_EXITED' ? true : undefined;
    });
  } finally {
    await cri.stopPodSandbox(sb).catch(() => undefined);
    await cri.removePodSandbox(sb).catch(() => undefined);
  }
});

test('/metrics serves the kubelet\'s metric names with real observations, /healthz answers ok', async () => {
  const health = await fetch(`http://127.0.0.1:${agent.localPort}/healthz`);
  assert.equal(await health.text(), 'ok');
  const text = await (await fetch(`http://127.0.0.1:${agent.localPort}/metrics`)).text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  assert.ok(value(/^kubelet_started_pods_total (\d+)/m) >= 5, 'started pods counted');
  assert.ok(value(/^kubelet_started_containers_total\{container_type="container"\} (\d+)/m) >= 5);
  assert.ok(value(/^kubelet_started_containers_total\{container_type="init_container"\} (\d+)/m) >= 2);
  // Where the runtime streams container events (the process runtime) the relist is only a safety
  // net every 5 min: the events are what is measured there.
  if (value(/^kubelet_evented_pleg_connection_success_count (\d+)/m) >= 1) assert.ok(value(/^kubelet_evented_pleg_connection_latency_seconds_count (\d+)/m) > 10, 'container events measured');
  else assert.ok(value(/^kubelet_pleg_relist_duration_seconds_count (\d+)/m) > 10, 'PLEG relists measured');
  assert.ok(value(/^kubelet_runtime_operations_duration_seconds_count\{operation_type="run_pod_sandbox"\} (\d+)/m) >= 5);
  assert.ok(value(/^kubelet_pod_worker_duration_seconds_count\{operation="create"\} (\d+)/m) >= 5);
  assert.ok(value(/^kubelet_pod_start_duration_seconds_count (\d+)/m) >= 1);
  assert.match(text, /^process_resident_memory_bytes \d+/m);
});
}
