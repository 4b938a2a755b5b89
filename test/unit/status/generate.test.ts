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
  for (const [name, policy, init, regular, expected] of cases) assert.equal(podPhase(withPolicy(policy), init, regular), expected, name);
});

test('a running pod: Running, all conditions True, IPs from the newest ready sandbox, container IDs', () => {
  const pod = makePod({ containers: ['a', 'b'] });
  const st = generateAPIPodStatus({ pod, runtime: runningStatus(pod), nodeIP: '192.0.2.1', now: 1000 });
  assert.equal(st.phase, 'Running');
  assert.equal(st.podIP, '10.0.0.1');
  assert.equal(st.hostIP, '192.0.2.1');
  assert.equal(st.qosClass, 'BestEffort');
  assert.deepEqual(st.conditions!.map((c) => `${c.type}=${c.status}`), ['PodReadyToStartContainers=True', 'Initialized=True', 'Ready=True', 'ContainersReady=True']);
  assert.match(st.containerStatuses![0]!.containerID!, /^containerd:\/\//);
  assert.equal(st.containerStatuses![0]!.ready, true);
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
