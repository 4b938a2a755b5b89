// How pods end, on the real cluster, once per runtime: a Job-style pod with a sidecar completes
// (the sidecar stopped after the app), activeDeadlineSeconds fails the pod with DeadlineExceeded,
// a deleted pod's last status before it goes has a terminal phase, and readiness gates hold Ready
// until the gate's condition (written by someone else) is True, that condition kept.
import { test, before, after } from 'node:test';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { clusterEnv, eventually } from '../cluster.js';
import { container, core, createPod, deletePod, getPod, NS, podEvents, running, waitPod } from '../kube.js';
import type { TestRuntime } from '../runtimes.js';

export function podEndSuite(makeRuntime: () => Promise<TestRuntime>): void {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(clusterEnv().kubeconfig);
  let rt: TestRuntime;
  let agent: RunningAgent;
  let node: string;

  before(async () => {
    rt = await makeRuntime();
    node = uniqueNodeName(`it-end-${rt.name}`);
    agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint]);
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    await rt.stop();
  });

  const loop = "trap 'exit 0' TERM; while true; do sleep 0.2; done";
  const done = (p: V1Pod) => (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined);
  const cond = (p: V1Pod, type: string) => p.status?.conditions?.find((c) => c.type === type);

  /**
   * An agent of the test's own, with these config file fields and flags, for what the suite's agent
   * must not be given; its pods (those the test pushes to `pods`) and the agent removed after.
   */
  async function withOwnAgent(prefix: string, config: string, run: (node: string, pods: V1Pod[], agent: RunningAgent) => Promise<void>, setup: (dir: string) => string[] = () => []): Promise<void> {
    const dir = mkdtempSync(join(clusterEnv().clusterDir, `${prefix}-`));
    const flags = setup(dir);
    const cfg = join(dir, 'config.yaml');
    writeFileSync(cfg, `apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\n${config}`);
    const node = uniqueNodeName(`it-${prefix}-${rt.name}`);
    const pods: V1Pod[] = [];
    let a: RunningAgent | undefined;
    try {
      a = await startAgent(node, ['--runtime-endpoint', rt.endpoint, '--config', cfg, ...flags]);
      await run(node, pods, a);
    } finally {
      await Promise.all(pods.map((p) => deletePod(p, 0)));
      if (a) await cleanupAgent(a, rt.endpoint);
      spawnSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  test('a pod with a sidecar and an app container that exits 0 under Never ends Succeeded, the sidecar stopped after the app', async () => {
    const created = await createPod(node, 'sidecar', {
      restartPolicy: 'Never',
      initContainers: [container('side', loop, { restartPolicy: 'Always' }), container('init', 'echo init')],
      containers: [container('app', 'sleep 2; echo app done')],
    });
    const runningPod = await waitPod(created, 'app running beside its sidecar', 60_000, (p) => (p.status?.containerStatuses?.[0]?.state?.running ? p : undefined));
    const side = runningPod.status!.initContainerStatuses!.find((s) => s.name === 'side')!;
    assert.ok(side.state?.running && side.started, 'the sidecar runs and has started');
    assert.equal(cond(runningPod, 'Initialized')?.status, 'True', 'initialised with the sidecar running');
    const pod = await waitPod(created, 'done', 60_000, done);
    assert.equal(pod.status!.phase, 'Succeeded', JSON.stringify(pod.status));
    const app = pod.status!.containerStatuses![0]!.state!.terminated!;
    const sideEnd = pod.status!.initContainerStatuses!.find((s) => s.name === 'side')!.state!.terminated!;
    assert.equal(app.exitCode, 0);
    assert.ok(new Date(sideEnd.finishedAt!).getTime() >= new Date(app.finishedAt!).getTime(), `the sidecar stopped (${sideEnd.finishedAt}) after the app (${app.finishedAt})`);
    assert.equal(pod.status!.initContainerStatuses!.find((s) => s.name === 'side')!.restartCount, 0);
  });

  test('a sidecar that exits is started again while the app runs, and a sidecar\'s startup probe holds the app back', async () => {
    const created = await createPod(node, 'sidecar-restart', {
      initContainers: [
        container('side', 'sleep 1; exit 1', { restartPolicy: 'Always' }),
        container('gate', "trap 'exit 0' TERM; sleep 3; touch /tmp/up; while true; do sleep 0.2; done", {
          restartPolicy: 'Always',
          startupProbe: { exec: { command: ['test', '-f', '/tmp/up'] }, periodSeconds: 1, failureThreshold: 30 },
        }),
      ],
      containers: [container('app', loop)],
    });
    const early = await waitPod(created, 'the gate sidecar running', 60_000, (p) => (p.status?.initContainerStatuses?.find((s) => s.name === 'gate')?.state?.running ? p : undefined));
    assert.ok(!early.status!.containerStatuses![0]!.state?.running, 'the app waits for the sidecar\'s startup probe');
    await waitPod(created, 'the app running', 60_000, (p) => (p.status?.containerStatuses?.[0]?.state?.running ? p : undefined));
    await waitPod(created, 'the exiting sidecar restarted', 60_000, (p) => ((p.status?.initContainerStatuses?.find((s) => s.name === 'side')?.restartCount ?? 0) >= 1 ? p : undefined));
    const pod = await getPod(created);
    assert.equal(pod.status!.containerStatuses![0]!.restartCount, 0, 'the app is not touched');
  });

  test('activeDeadlineSeconds: 5 ends the pod Failed/DeadlineExceeded within a few seconds of the deadline', async () => {
    const created = await createPod(node, 'deadline', { activeDeadlineSeconds: 5, containers: [container('c', loop)] });
    const started = await waitPod(created, 'Running', 60_000, running);
    const start = new Date(started.status!.startTime!).getTime();
    const pod = await waitPod(created, 'Failed', 30_000, done);
    assert.equal(pod.status!.phase, 'Failed');
    assert.equal(pod.status!.reason, 'DeadlineExceeded');
    assert.equal(pod.status!.message, 'Pod was active on the node longer than the specified deadline');
    assert.ok(Date.now() - start < 15_000, `ended ${(Date.now() - start) / 1000} s after its start`);
    await eventually('the DeadlineExceeded event', 10_000, async () => ((await podEvents(pod)).some((e) => e.reason === 'DeadlineExceeded' && e.type === 'Normal') ? true : undefined));
    await waitPod(pod, 'its container stopped', 30_000, (p) => (p.status?.containerStatuses?.[0]?.state?.terminated ? p : undefined));
  });

  test('local storage limits evict as the kubelet\'s eviction manager: an emptyDir over its sizeLimit, a container over its ephemeral-storage limit (writable layer and logs); Failed/Evicted, the Warning event, in the kubelet\'s words', async () => {
    // 3 MiB written once: past the 1Mi and 2Mi limits, nothing more (the node's disk is not at stake).
    const write = (path: string) => `dd if=/dev/zero of=${path} bs=1024 count=3072 2>/dev/null; ${loop}`;
    const emptyDir = await createPod(node, 'evict-emptydir', {
      terminationGracePeriodSeconds: 30,
      volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }],
      containers: [container('c', write('/scratch/fill'), { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] })],
    });
    // Its own limit passed, the pod's total (2Mi + 8Mi) not: the container's message.
    const rootfs = await createPod(node, 'evict-rootfs', {
      terminationGracePeriodSeconds: 30,
      containers: [container('c', write('/fill'), { resources: { limits: { 'ephemeral-storage': '2Mi' } } }), container('idle', loop, { resources: { limits: { 'ephemeral-storage': '8Mi' } } })],
    });
    // One container: the pod's total is its limit, and the pod's message comes first (the kubelet's order).
    const total = await createPod(node, 'evict-total', {
      terminationGracePeriodSeconds: 30,
      containers: [container('c', write('/fill'), { resources: { limits: { 'ephemeral-storage': '2Mi' } } })],
    });
    const within = await createPod(node, 'evict-within', {
      volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '8Mi' } }],
      containers: [container('c', write('/scratch/fill'), { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }], resources: { limits: { 'ephemeral-storage': '8Mi' } } })],
    });
    for (const [p, message] of [
      [emptyDir, 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". '],
      [rootfs, 'Container c exceeded its local ephemeral storage limit "2Mi". '],
      [total, 'Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. '],
    ] as const) {
      // Failed with the message at once; its containers stopped within the 1 s grace period (not its 30 s).
      const evicted = await waitPod(p, 'Failed, its containers stopped', 90_000, (x) => (done(x) && x.status?.containerStatuses?.every((c) => c.state?.terminated) ? x : undefined));
      assert.deepEqual([evicted.status!.phase, evicted.status!.reason, evicted.status!.message], ['Failed', 'Evicted', message]);
      await eventually(`the Evicted event of ${p.metadata!.name}`, 20_000, async () => ((await podEvents(p)).some((e) => e.type === 'Warning' && e.reason === 'Evicted' && e.message === message) ? true : undefined), 500);
    }
    // Under its limits it runs on.
    assert.equal((await waitPod(within, 'running', 30_000, running)).status!.phase, 'Running');
    await Promise.all([emptyDir, rootfs, total, within].map((p) => deletePod(p, 0)));
  });

  test('node pressure, as the kubelet\'s eviction manager: a pod filling the node filesystem past evictionHard nodefs.available is evicted first (DiskPressure, EvictionThresholdMet on the Node, Failed/Evicted with DisruptionTarget and the kubelet\'s message); a pod within its request runs on', async () => {
    await withOwnAgent('nodefs', 'evictionHard: {nodefs.available: 40Mi}\ncontainerLogMaxSize: 100Mi\n', async (pressured, pods) => {
      const bystander = await createPod(pressured, 'bystander', { containers: [container('c', loop, { resources: { requests: { 'ephemeral-storage': '10Mi' } } })] });
      pods.push(bystander);
      await waitPod(bystander, 'running', 60_000, running);
      // 30 MiB in an emptyDir: 64 - 30 is under 40 MiB available.
      const filler = await createPod(pressured, 'filler', {
        terminationGracePeriodSeconds: 30,
        volumes: [{ name: 'scratch', emptyDir: {} }],
        containers: [container('c', `dd if=/dev/zero of=/scratch/fill bs=1048576 count=30 2>/dev/null; ${loop}`, { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] })],
      });
      const evicted = await waitPod(filler, 'Failed, its containers stopped', 90_000, (x) => (done(x) && x.status?.containerStatuses?.every((c) => c.state?.terminated) ? x : undefined));
      // Its space back at once, before the next pass could find the node still short.
      await deletePod(evicted, 0);
      assert.equal(evicted.status!.reason, 'Evicted');
      // (Its container's own writable layer and logs, if any, are named too: the emptyDir is not a container's.)
      assert.match(evicted.status!.message!, /^The node was low on resource: ephemeral-storage\. Threshold quantity: 40Mi, available: \d+(Ki|Mi)?\. (Container c was using \d+(Ki|Mi)?, request is 0, has larger consumption of ephemeral-storage\. )?$/);
      const target = cond(evicted, 'DisruptionTarget');
      assert.deepEqual([target?.status, target?.reason, target?.message], ['True', 'TerminationByKubelet', evicted.status!.message]);
      await eventually('the Evicted event', 20_000, async () => ((await podEvents(evicted)).some((e) => e.type === 'Warning' && e.reason === 'Evicted' && e.message === evicted.status!.message) ? true : undefined), 500);
      const nodeEvents = await core.listEventForAllNamespaces({ fieldSelector: `involvedObject.kind=Node,involvedObject.name=${pressured},reason=EvictionThresholdMet` });
      assert.ok(nodeEvents.items.some((e) => e.type === 'Warning' && e.message === 'Attempting to reclaim ephemeral-storage'), 'EvictionThresholdMet on the Node');
      await eventually('DiskPressure on the node', 30_000, async () => {
        const n = await core.readNode({ name: pressured });
        const c = n.status?.conditions?.find((x) => x.type === 'DiskPressure');
        return c?.status === 'True' && c.reason === 'KubeletHasDiskPressure' ? true : undefined;
      });
      // A pass later (they are 10 s apart) the bystander still runs: the space was freed, not taken from it.
      await new Promise((r) => setTimeout(r, 11_000));
      const still = await getPod(bystander);
      assert.equal(still.status?.phase, 'Running');
      assert.ok(!(await podEvents(bystander)).some((e) => e.reason === 'Evicted'));
    }, (dir) => {
      // The node filesystem (pod directories and logs) is a 64 MiB tmpfs of its own: the pressure
      // is made there, and the host's disk is never at stake.
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m,mode=0755', 'nodelet-test-nodefs', dir]);
      return ['--pod-log-root', join(dir, 'logs'), '--root-dir', join(dir, 'root')];
    });
  });

  test('graceful node shutdown on the agent\'s SIGTERM (shutdownOnSIGTERM): regular pods end first with their preStop hooks, then critical ones; Failed/Terminated with DisruptionTarget, the NodeShutdown event, Ready False; the agent exits 0', async () => {
    await withOwnAgent('shutdown', 'shutdownGracePeriod: 20s\nshutdownGracePeriodCriticalPods: 8s\nshutdownOnSIGTERM: true\n', async (going, pods, a) => {
      // Each stops 1 s after its TERM; web's preStop leaves a termination message.
      const stopping = "trap 'sleep 1; exit 0' TERM; while true; do sleep 0.2; done";
      const web = await createPod(going, 'web', {
        terminationGracePeriodSeconds: 30,
        containers: [container('c', stopping, { lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo bye > /dev/termination-log'] } } } })],
      });
      const crit = await createPod(going, 'crit', { priorityClassName: 'system-node-critical', terminationGracePeriodSeconds: 30, containers: [container('c', stopping)] });
      pods.push(web, crit);
      await Promise.all(pods.map((p) => waitPod(p, 'running', 60_000, running)));
      assert.equal(await a.stop(), 0, 'the agent exits 0 once its pods have ended');
      const message = 'Pod was terminated in response to imminent node shutdown.';
      const [w, c] = await Promise.all(pods.map((p) => waitPod(p, 'Failed/Terminated', 20_000, (x) => (x.status?.phase === 'Failed' && x.status.containerStatuses?.[0]?.state?.terminated ? x : undefined))));
      for (const p of [w!, c!]) {
        assert.deepEqual([p.status!.reason, p.status!.message], ['Terminated', message]);
        const target = cond(p, 'DisruptionTarget');
        assert.deepEqual([target?.status, target?.reason, target?.message], ['True', 'TerminationByKubelet', message]);
        assert.equal(p.status!.containerStatuses![0]!.state!.terminated!.exitCode, 0, 'ended by its TERM trap, not killed');
      }
      assert.equal(w!.status!.containerStatuses![0]!.state!.terminated!.message?.trim(), 'bye', 'its preStop hook ran');
      const finished = (p: V1Pod) => new Date(p.status!.containerStatuses![0]!.state!.terminated!.finishedAt!).getTime();
      assert.ok(finished(c!) >= finished(w!), 'the critical pod ended after the regular one');
      const events = await core.listEventForAllNamespaces({ fieldSelector: `involvedObject.kind=Node,involvedObject.name=${going},reason=NodeShutdown` });
      assert.ok(events.items.some((e) => e.type === 'Normal' && e.message === 'Shutdown manager detected shutdown event'));
      const ready = (await core.readNode({ name: going })).status?.conditions?.find((x) => x.type === 'Ready');
      assert.deepEqual([ready?.status, ready?.message], ['False', 'node is shutting down']);
    });
  });

  test('critical pod preemption: a critical pod that does not fit for cpu is admitted once a pod it may preempt has ended (Warning Preempting, Failed/Preempting with DisruptionTarget); a regular pod in its place is refused OutOfcpu', async () => {
    await withOwnAgent('preempt', 'capacity: {cpu: "1"}\nsystemReserved: {}\nkubeReserved: {}\n', async (small, pods) => {
      const cpu = { resources: { requests: { cpu: '600m' } } };
      const victim = await createPod(small, 'victim', { terminationGracePeriodSeconds: 5, containers: [container('c', loop, cpu)] });
      pods.push(victim);
      await waitPod(victim, 'running', 60_000, running);
      const plain = await createPod(small, 'plain', { containers: [container('c', loop, cpu)] });
      pods.push(plain);
      const refused = await waitPod(plain, 'refused', 30_000, done);
      assert.deepEqual([refused.status!.reason, refused.status!.message], ['OutOfcpu', "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000"]);
      const critical = await createPod(small, 'critical', { priorityClassName: 'system-node-critical', containers: [container('c', loop, cpu)] });
      pods.push(critical);
      const preempted = await waitPod(victim, 'Failed/Preempting, its container stopped', 60_000, (x) => (done(x) && x.status?.containerStatuses?.[0]?.state?.terminated ? x : undefined));
      assert.deepEqual([preempted.status!.phase, preempted.status!.reason, preempted.status!.message], ['Failed', 'Preempting', 'Preempted in order to admit critical pod']);
      const target = cond(preempted, 'DisruptionTarget');
      assert.deepEqual([target?.status, target?.reason, target?.message], ['True', 'TerminationByKubelet', 'Pod was preempted by Kubelet to accommodate a critical pod.']);
      assert.ok((await podEvents(victim)).some((e) => e.type === 'Warning' && e.reason === 'Preempting' && e.message === 'Preempted in order to admit critical pod'));
      const started = await waitPod(critical, 'running', 60_000, running);
      const victimEnd = new Date(preempted.status!.containerStatuses![0]!.state!.terminated!.finishedAt!).getTime();
      assert.ok(new Date(started.status!.containerStatuses![0]!.state!.running!.startedAt!).getTime() >= victimEnd - 1000, 'the critical pod started once the preempted one had stopped');
    });
  });

  test('a deleted pod gets a terminal phase (by its containers\' exits) before its API object goes', async () => {
    const last = new Map<string, V1Pod>();
    const watch = new k8s.Watch(kc);
    const deletedSeen = new Map<string, () => void>();
    const abort = await watch.watch(`/api/v1/namespaces/${NS}/pods`, {}, (type: string, obj: V1Pod) => {
      if (type === 'DELETED') {
        last.set(obj.metadata!.name!, obj);
        deletedSeen.get(obj.metadata!.name!)?.();
      }
    }, () => undefined);
    try {
      const clean = await createPod(node, 'del-ok', { containers: [container('c', loop)] });
      const killed = await createPod(node, 'del-fail', { containers: [container('c', 'while true; do sleep 0.2; done')] });
      for (const p of [clean, killed]) await waitPod(p, 'Running', 60_000, running);
      const gone = [clean, killed].map((p) => new Promise<void>((r) => deletedSeen.set(p.metadata!.name!, r)));
      await Promise.all([deletePod(clean), deletePod(killed)]);
      await Promise.race([Promise.all(gone), new Promise((_, j) => setTimeout(() => j(new Error('pods not deleted')), 40_000))]);
      assert.equal(last.get(clean.metadata!.name!)!.status!.phase, 'Succeeded', 'exited 0 on SIGTERM: Succeeded, although restartPolicy is Always');
      const failed = last.get(killed.metadata!.name!)!;
      assert.equal(failed.status!.phase, 'Failed', 'killed by a signal: Failed');
      assert.ok(failed.status!.containerStatuses![0]!.state?.terminated, 'its container reads Terminated');
    } finally {
      abort.abort();
    }
  });

  test('readiness gates hold Ready until their condition is True; that condition is kept by the agent', async () => {
    const created = await createPod(node, 'gate', { readinessGates: [{ conditionType: 'example.com/ready' }], containers: [container('c', loop)] });
    const pod = await waitPod(created, 'containers ready, pod not Ready', 60_000, (p) => (cond(p, 'ContainersReady')?.status === 'True' ? p : undefined));
    assert.equal(cond(pod, 'Ready')?.status, 'False');
    assert.equal(cond(pod, 'Ready')?.reason, 'ReadinessGatesNotReady');
    assert.equal(cond(pod, 'Ready')?.message, 'corresponding condition of pod readiness gate "example.com/ready" does not exist.');
    await core.patchNamespacedPodStatus(
      { name: pod.metadata!.name!, namespace: NS, body: { status: { conditions: [{ type: 'example.com/ready', status: 'True', lastTransitionTime: new Date() }] } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
    const ready = await waitPod(pod, 'Ready', 30_000, (p) => (cond(p, 'Ready')?.status === 'True' ? p : undefined));
    assert.equal(cond(ready, 'example.com/ready')?.status, 'True');
  });
}
