// The API PodStatus: phase by the kubelet's rules, conditions, waiting reasons from the last sync.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { PodSyncResult, SyncResult } from '../../../src/runtime/sync-result.js';
import { generateAPIPodStatus, podPhase } from '../../../src/status/generate.js';
import { containerStatus, initializedStatus, makePod, runningStatus, sandbox } from '../runtime/fixtures.js';

const run = (): V1ContainerStatus => ({ name: 'c', image: '', imageID: '', ready: true, restartCount: 0, state: { running: {} } });
const term = (exitCode: number): V1ContainerStatus => ({ name: 'c', image: '', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode } } });
const wait = (lastExit?: number): V1ContainerStatus => ({
  name: 'c', image: '', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'X' } },
  lastState: lastExit === undefined ? {} : { terminated: { exitCode: lastExit } },
});
const withPolicy = (restartPolicy: string): V1Pod => ({ spec: { restartPolicy, containers: [] } });

test('phase: the kubelet\'s rules over regular and init container states', () => {
  const cases: Array<[string, string, V1ContainerStatus[], V1ContainerStatus[], string]> = [
    ['all running', 'Always', [], [run(), run()], 'Running'],
    ['one waiting for its first start', 'Always', [], [run(), wait()], 'Pending'],
    ['waiting after an exit counts as stopped: Always keeps Running', 'Always', [], [wait(1)], 'Running'],
    ['all exited 0 under Never', 'Never', [], [term(0), term(0)], 'Succeeded'],
    ['one exited 1 under Never', 'Never', [], [term(0), term(1)], 'Failed'],
    ['all exited 0 under OnFailure', 'OnFailure', [], [term(0)], 'Succeeded'],
    ['exited 1 under OnFailure (to be restarted)', 'OnFailure', [], [term(1)], 'Running'],
    ['all exited under Always (restarting)', 'Always', [], [term(0)], 'Running'],
    ['init still running', 'Always', [run()], [wait()], 'Pending'],
    ['init failed under Never', 'Never', [term(2)], [wait()], 'Failed'],
    ['init failed under Always (retried)', 'Always', [wait(2)], [wait()], 'Pending'],
    ['init done, app running', 'Always', [term(0)], [run()], 'Running'],
  ];
  for (const [name, policy, init, regular, expected] of cases) {
    // Each status gets a container of its own in the spec.
    const inits = init.map((st, i) => ({ ...st, name: `i${i}` }));
    const regs = regular.map((st, i) => ({ ...st, name: `c${i}` }));
    const pod: V1Pod = { spec: { restartPolicy: policy, initContainers: inits.map((x) => ({ name: x.name })), containers: regs.map((x) => ({ name: x.name })) } };
    assert.equal(podPhase(pod, inits, regs), expected, name);
  }
});

test('phase with sidecars, and of a pod stopped for good', () => {
  const sidecar = (st: V1ContainerStatus, started?: boolean): V1ContainerStatus => ({ ...st, name: 's', started });
  const pod = (policy: string): V1Pod => ({ spec: { restartPolicy: policy, initContainers: [{ name: 's', restartPolicy: 'Always' }], containers: [{ name: 'c' }] } });
  const app = (st: V1ContainerStatus) => [{ ...st, name: 'c' }];
  assert.equal(podPhase(pod('Never'), [sidecar(run(), false)], app(wait())), 'Pending', 'a sidecar not started yet holds the pod in Pending');
  assert.equal(podPhase(pod('Never'), [sidecar(run(), true)], app(run())), 'Running');
  assert.equal(podPhase(pod('Never'), [sidecar(run(), true)], app(term(0))), 'Running', 'the app is done but the sidecar still runs');
  assert.equal(podPhase(pod('Never'), [sidecar(term(137))], app(term(0))), 'Succeeded', 'a stopped sidecar does not count');
  assert.equal(podPhase(pod('Never'), [sidecar(term(0))], app(term(1))), 'Failed');
  assert.equal(podPhase(withPolicy('Always'), [], []), 'Pending');
  const always: V1Pod = { spec: { restartPolicy: 'Always', containers: [{ name: 'c' }] } };
  assert.equal(podPhase(always, [], app(term(0))), 'Running', 'under Always a stopped container restarts');
  assert.equal(podPhase(always, [], app(term(0)), true), 'Succeeded', 'deleted and stopped for good: Succeeded by its exit codes');
  assert.equal(podPhase(always, [], app(term(143)), true), 'Failed');
});

test('a running pod: Running, all conditions True, IPs from the newest ready sandbox, container IDs', () => {
  const pod = makePod({ containers: ['a', 'b'] });
  const st = generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: '192.0.2.1', now: 1000 });
  assert.equal(st.phase, 'Running');
  assert.equal(st.podIP, '10.0.0.1');
  assert.equal(st.hostIP, '192.0.2.1');
  assert.equal(st.qosClass, 'BestEffort');
  // PodScheduled too, though nothing scheduled it (its creator named the node), as the kubelet reports it.
  assert.deepEqual(st.conditions!.map((c) => `${c.type}=${c.status}`), ['PodReadyToStartContainers=True', 'Initialized=True', 'Ready=True', 'ContainersReady=True', 'PodScheduled=True']);
  assert.match(st.containerStatuses![0]!.containerID!, /^containerd:\/\//);
  assert.equal(st.containerStatuses![0]!.ready, true);
  // The scheduler's own condition is kept as it set it.
  const bound: V1Pod = { ...pod, status: { conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(5) }] } };
  const kept = generateAPIPodStatus({ pod: bound, runtime: runningStatus(bound), nodeIP: '192.0.2.1', now: 1000 }).conditions!.find((c) => c.type === 'PodScheduled');
  assert.deepEqual(kept, { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(5) });
});

test('a container that failed to start waits with the sync\'s reason, its last exit kept as lastState', () => {
  const pod = makePod({ containers: ['c'] });
  const runtime = runningStatus(pod);
  runtime.containerStatuses = [containerStatus(pod.spec!.containers[0]!, 'exited', { exitCode: 1, restartCount: 3 })];
  const sync = new PodSyncResult();
  sync.add(new SyncResult('StartContainer', 'c')).fail('CrashLoopBackOff', 'back-off 40s restarting failed container=c pod=foo_new(12345678)');
  const st = generateAPIPodStatus({ pod, runtime, lastSync: sync, nodeIP: '192.0.2.1', now: 1000 });
  const cs = st.containerStatuses![0]!;
  assert.deepEqual(cs.state, { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container=c pod=foo_new(12345678)' } });
  assert.equal(cs.lastState?.terminated?.exitCode, 1);
  assert.equal(cs.lastState?.terminated?.reason, 'Error');
  assert.equal(cs.restartCount, 3);
  assert.equal(st.phase, 'Running');
  const ready = st.conditions!.find((c) => c.type === 'Ready')!;
  assert.equal(ready.status, 'False');
  assert.equal(ready.reason, 'ContainersNotReady');
  assert.equal(ready.message, 'containers with unready status: [c]');
});

test('before any container runs: ContainerCreating, or PodInitializing when init containers come first', () => {
  const plain = makePod({ containers: ['c'] });
  const rt = { ...runningStatus(plain), containerStatuses: [] };
  assert.equal(generateAPIPodStatus({ pod: plain, runtime: rt, nodeIP: 'x', now: 0 }).containerStatuses![0]!.state?.waiting?.reason, 'ContainerCreating');
  const withInit = makePod({ containers: ['c'], initContainers: ['i'] });
  const st = generateAPIPodStatus({ pod: withInit, runtime: { ...runningStatus(withInit), containerStatuses: [] }, nodeIP: 'x', now: 0 });
  assert.equal(st.containerStatuses![0]!.state?.waiting?.reason, 'PodInitializing');
  assert.equal(st.initContainerStatuses![0]!.state?.waiting?.reason, 'PodInitializing');
  assert.equal(st.conditions!.find((c) => c.type === 'Initialized')?.message, 'containers with incomplete status: [i]');
  assert.equal(st.phase, 'Pending');
});

test('no ready sandbox: PodReadyToStartContainers False; lastTransitionTime moves only on change', () => {
  const pod = makePod({ containers: ['c'] });
  const first = generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: 'x', now: 1000 });
  pod.status = first;
  const same = generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: 'x', now: 5000 });
  assert.deepEqual(same.conditions![0]!.lastTransitionTime, first.conditions![0]!.lastTransitionTime);
  const rt = { ...initializedStatus(pod), sandboxStatuses: [sandbox({ ready: false })], containerStatuses: [] };
  const changed = generateAPIPodStatus({ pod, runtime: rt, nodeIP: 'x', now: 9000 });
  assert.equal(changed.conditions![0]!.status, 'False');
  assert.equal(new Date(changed.conditions![0]!.lastTransitionTime!).getTime(), 9000);
});

test('an init container that completed with exit 0 is ready, as the kubelet reports it; a failed one is not', () => {
  const pod = makePod({ containers: ['c'], initContainers: ['i1', 'i2'] });
  const rt = runningStatus(pod);
  rt.containerStatuses = [containerStatus(pod.spec!.initContainers![0]!, 'exited', { exitCode: 0 }), containerStatus(pod.spec!.initContainers![1]!, 'exited', { exitCode: 1 })];
  const st = generateAPIPodStatus({ pod, runtime: rt, nodeIP: 'x', now: 0 });
  assert.deepEqual(st.initContainerStatuses!.map((s) => [s.name, s.ready]), [['i1', true], ['i2', false]]);
  const done = generateAPIPodStatus({ pod, runtime: initializedStatus(pod), nodeIP: 'x', now: 0 });
  assert.ok(done.initContainerStatuses!.every((s) => s.ready));
});

test('readiness gates: Ready waits for every gate\'s condition, in the kubelet\'s words; conditions of others are kept', () => {
  const pod = makePod({ containers: ['a'] });
  pod.spec!.readinessGates = [{ conditionType: 'example.com/lb' }, { conditionType: 'example.com/dns' }];
  pod.status = { conditions: [{ type: 'example.com/lb', status: 'False' }, { type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }] };
  const st = generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: '192.0.2.1', now: 1000 });
  const ready = st.conditions!.find((c) => c.type === 'Ready')!;
  assert.equal(ready.status, 'False');
  assert.equal(ready.reason, 'ReadinessGatesNotReady');
  assert.equal(ready.message, 'the status of pod readiness gate "example.com/lb" is not "True", but False, corresponding condition of pod readiness gate "example.com/dns" does not exist.');
  assert.equal(st.conditions!.find((c) => c.type === 'ContainersReady')!.status, 'True');
  assert.deepEqual(st.conditions!.find((c) => c.type === 'DisruptionTarget'), { type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }, 'kept as it was');
  pod.status.conditions = [{ type: 'example.com/lb', status: 'True' }, { type: 'example.com/dns', status: 'True' }];
  const ok = generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: '192.0.2.1', now: 2000 });
  assert.equal(ok.conditions!.find((c) => c.type === 'Ready')!.status, 'True');
});

test('an active deadline that passed: Failed, DeadlineExceeded, and no way back from a terminal phase', () => {
  const pod = makePod({ containers: ['a'] });
  const evict = { reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' };
  const st = generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: '192.0.2.1', now: 1000, evict });
  assert.equal(st.phase, 'Failed');
  assert.equal(st.reason, 'DeadlineExceeded');
  assert.equal(st.message, evict.message);
  pod.status = { phase: 'Succeeded' };
  assert.equal(generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: '192.0.2.1', now: 1000, evict }).phase, 'Succeeded');
});

test('container states as the kubelet maps them: created is Waiting with no reason; unknown after running is Terminated ContainerStatusUnknown (137) with a restart; unknown otherwise Waiting', () => {
  const pod = makePod({ containers: ['c'] });
  const spec = pod.spec!.containers[0]!;
  const gen = (state: 'created' | 'unknown', old?: V1ContainerStatus) => {
    const runtime = { ...runningStatus(pod), containerStatuses: [containerStatus(spec, state, { restartCount: 2 })] };
    const p: V1Pod = old ? { ...pod, status: { containerStatuses: [old] } } : pod;
    return generateAPIPodStatus({ pod: p, runtime, nodeIP: 'x', now: 0 }).containerStatuses![0]!;
  };
  assert.deepEqual(gen('created').state, { waiting: {} });
  const wasRunning: V1ContainerStatus = { name: 'c', image: '', imageID: '', ready: true, restartCount: 2, state: { running: { startedAt: new Date(0) } } };
  const lost = gen('unknown', wasRunning);
  assert.equal(lost.state?.terminated?.reason, 'ContainerStatusUnknown');
  assert.equal(lost.state?.terminated?.exitCode, 137);
  assert.equal(lost.state?.terminated?.message, 'The container could not be located when the pod was terminated');
  assert.equal(lost.restartCount, 3);
  assert.deepEqual(gen('unknown').state, { waiting: {} });
});

test('lastState is the previous instance, whatever its state, and a running container that vanished leaves a ContainerStatusUnknown lastState', () => {
  const pod = makePod({ containers: ['c'] });
  const spec = pod.spec!.containers[0]!;
  // The newest instance was created but never started; the one before it exited 0.
  const runtime = { ...runningStatus(pod), containerStatuses: [containerStatus(spec, 'created', { restartCount: 1 }), containerStatus(spec, 'exited', { exitCode: 0 })] };
  const cs = generateAPIPodStatus({ pod, runtime, nodeIP: 'x', now: 0 }).containerStatuses![0]!;
  assert.equal(cs.lastState?.terminated?.reason, 'Completed');
  const twoCreated = { ...runningStatus(pod), containerStatuses: [containerStatus(spec, 'created', { restartCount: 2 }), containerStatus(spec, 'created', { restartCount: 1 })] };
  assert.deepEqual(generateAPIPodStatus({ pod, runtime: twoCreated, nodeIP: 'x', now: 0 }).containerStatuses![0]!.lastState, { waiting: {} });
  // No instance left in the runtime, but the API last saw it running.
  const gone = { ...runningStatus(pod), containerStatuses: [] };
  const was: V1ContainerStatus = { name: 'c', image: '', imageID: '', ready: true, restartCount: 4, state: { running: { startedAt: new Date(0) } } };
  const vanished = generateAPIPodStatus({ pod: { ...pod, status: { containerStatuses: [was] } }, runtime: gone, nodeIP: 'x', now: 0 }).containerStatuses![0]!;
  assert.equal(vanished.state?.waiting?.reason, 'ContainerCreating');
  assert.deepEqual(vanished.lastState, {
    terminated: { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was deleted.  The container used to be Running', exitCode: 137 },
  });
  assert.equal(vanished.restartCount, 5);
});

test('a pod that ended before the API saw its IP keeps the IP the agent last computed, and others\' conditions come from the API', () => {
  const pod = makePod({ containers: ['a'] });
  const running = generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: '192.0.2.1', now: 1000 });
  // The sandbox is gone; the API still shows the pod as first seen, with a controller's condition.
  pod.status = { phase: 'Pending', conditions: [{ type: 'DisruptionTarget', status: 'True' }] };
  const gone = { ...runningStatus(pod), ips: [], sandboxStatuses: [sandbox({ ready: false })], containerStatuses: pod.spec!.containers.map((c) => ({ ...containerStatus(c, 'exited'), exitCode: 3 })) };
  const ended = generateAPIPodStatus({ pod, runtime: gone, nodeIP: '192.0.2.1', now: 2000, podIsTerminal: true, oldStatus: running });
  assert.equal(ended.phase, 'Failed');
  assert.equal(ended.podIP, '10.0.0.1');
  assert.equal(ended.startTime?.getTime(), running.startTime?.getTime());
  assert.ok(ended.conditions!.some((c) => c.type === 'DisruptionTarget'));
  // Without the agent's own status the API's copy is all there is: no IP to keep.
  assert.equal(generateAPIPodStatus({ pod, runtime: gone, nodeIP: '192.0.2.1', now: 2000, podIsTerminal: true }).podIP, undefined);
});

test('a pod stopped for good before its container ever ran: Failed, the container ContainerStatusUnknown (137), as the kubelet\'s TerminatePod', () => {
  const pod = makePod({ containers: ['c'] });
  const runtime = runningStatus(pod);
  runtime.containerStatuses = [];
  const st = generateAPIPodStatus({ pod: { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(0) } }, runtime, nodeIP: '192.0.2.1', now: 1000, podIsTerminal: true });
  assert.equal(st.phase, 'Failed');
  assert.deepEqual(st.containerStatuses![0]!.state, { terminated: { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated', exitCode: 137 } });
  // Not yet stopped for good: still Pending, still waiting.
  const live = generateAPIPodStatus({ pod, runtime, nodeIP: '192.0.2.1', now: 1000 });
  assert.equal(live.phase, 'Pending');
  assert.ok(live.containerStatuses![0]!.state?.waiting);
  // With init containers never started: the first one is the one that "ran"; the app container, never reached, stays waiting.
  const withInit = makePod({ containers: ['c'], initContainers: ['i1', 'i2'] });
  const r2 = runningStatus(withInit);
  r2.containerStatuses = [];
  const st2 = generateAPIPodStatus({ pod: withInit, runtime: r2, nodeIP: '192.0.2.1', now: 1000, podIsTerminal: true });
  assert.equal(st2.phase, 'Failed');
  assert.deepEqual(st2.initContainerStatuses!.map((s) => s.state?.terminated?.reason ?? 'waiting'), ['ContainerStatusUnknown', 'waiting']);
  assert.ok(st2.containerStatuses![0]!.state?.waiting);
});
