// computePodActions, case by case: the kubelet's own regular-container and init-container cases,
// plus the seed's sandbox branches (multiple ready sandboxes, network namespace changed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { computePodActions, type ProbeResults } from '../../../src/runtime/pod-actions.js';
import type { PodStatus } from '../../../src/runtime/types.js';
import { containerStatus, initializedStatus, makePod, runningStatus, sandbox } from './fixtures.js';

interface Expected {
  killPod: boolean;
  createSandbox: boolean;
  sandboxID: string;
  attempt: number;
  containersToStart: number[];
  /** Container ID -> the whole kill: which container, why (the kill reason), and the Killing message. */
  containersToKill?: Record<string, { name: string; reason: string; message: string }>;
  nextInit?: string;
}

interface Case {
  name: string;
  pod?: V1Pod;
  status?: (pod: V1Pod) => PodStatus;
  mutate?: (pod: V1Pod, status: PodStatus) => void;
  liveness?: Record<string, 'Failure' | 'Success'>;
  startup?: Record<string, 'Failure' | 'Success'>;
  expected: Expected;
}

const noAction: Expected = { killPod: false, createSandbox: false, sandboxID: 'sandbox-0', attempt: 0, containersToStart: [] };
const results = (m: Record<string, 'Failure' | 'Success'> = {}): ProbeResults => ({ get: (id) => m[id] });

function run(c: Case): void {
  const pod = c.pod ?? makePod();
  const status = (c.status ?? runningStatus)(pod);
  c.mutate?.(pod, status);
  const actions = computePodActions(pod, status, { liveness: results(c.liveness), startup: results(c.startup) });
  const kills: Record<string, { name: string; reason: string; message: string }> = {};
  for (const [id, k] of actions.containersToKill) {
    assert.equal(k.container.name, k.name, 'the kill carries the spec of the container it names');
    kills[id] = { name: k.name, reason: k.reason, message: k.message };
  }
  assert.deepEqual(
    {
      killPod: actions.killPod,
      createSandbox: actions.createSandbox,
      sandboxID: actions.sandboxID,
      attempt: actions.attempt,
      containersToStart: actions.containersToStart,
      containersToKill: kills,
      nextInit: actions.initContainersToStart.length ? pod.spec!.initContainers![actions.initContainersToStart[0]!]!.name : undefined,
    },
    { containersToKill: {}, nextInit: undefined, ...c.expected },
  );
}

const exited = (pod: V1Pod, status: PodStatus, i: number, exitCode: number) => {
  status.containerStatuses[i] = containerStatus(pod.spec!.containers[i]!, 'exited', { exitCode });
};

const regular: Case[] = [
  { name: 'all containers running: nothing to do', expected: noAction },
  {
    name: 'a new pod: create the sandbox and start every container',
    status: (pod) => ({ ...runningStatus(pod), sandboxStatuses: [], containerStatuses: [], ips: [] }),
    expected: { killPod: true, createSandbox: true, sandboxID: '', attempt: 0, containersToStart: [0, 1, 2] },
  },
  {
    name: 'restartPolicy Always: exited containers are restarted, whatever their exit code',
    mutate: (pod, s) => {
      exited(pod, s, 1, 0);
      exited(pod, s, 2, 1);
    },
    expected: { ...noAction, containersToStart: [1, 2] },
  },
  {
    name: 'restartPolicy OnFailure: only the failed container is restarted',
    pod: makePod({ restartPolicy: 'OnFailure' }),
    mutate: (pod, s) => {
      exited(pod, s, 1, 0);
      exited(pod, s, 2, 1);
    },
    expected: { ...noAction, containersToStart: [2] },
  },
  {
    name: 'restartPolicy Never: exited containers stay exited',
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (pod, s) => {
      exited(pod, s, 1, 0);
      exited(pod, s, 2, 1);
    },
    expected: noAction,
  },
  {
    name: 'sandbox dead under Always: kill the pod and recreate everything',
    mutate: (_pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
    },
    expected: { killPod: true, createSandbox: true, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [0, 1, 2] },
  },
  {
    name: 'sandbox dead under OnFailure: recreate everything but the succeeded container',
    pod: makePod({ restartPolicy: 'OnFailure' }),
    mutate: (pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
      exited(pod, s, 1, 0);
    },
    expected: { killPod: true, createSandbox: true, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [0, 2] },
  },
  {
    name: 'sandbox without an IP: kill the pod and recreate everything',
    mutate: (_pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ip: '' });
    },
    expected: { killPod: true, createSandbox: true, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [0, 1, 2] },
  },
  {
    name: "container spec changed: kill it and start it again, whatever the restart policy",
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'running', { id: 'c1', hash: 'stale' });
    },
    expected: { ...noAction, containersToStart: [1], containersToKill: { c1: { name: 'foo2', reason: '', message: 'Container foo2 definition changed, will be restarted' } } },
  },
  {
    name: 'liveness probe failed: kill and restart under Always',
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'running', { id: 'c1' });
    },
    liveness: { c1: 'Failure' },
    expected: { ...noAction, containersToStart: [1], containersToKill: { c1: { name: 'foo2', reason: 'LivenessProbe', message: 'Container foo2 failed liveness probe, will be restarted' } } },
  },
  {
    name: 'startup probe failed: kill and restart under Always',
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'running', { id: 'c1' });
    },
    startup: { c1: 'Failure' },
    expected: { ...noAction, containersToStart: [1], containersToKill: { c1: { name: 'foo2', reason: 'StartupProbe', message: 'Container foo2 failed startup probe, will be restarted' } } },
  },
  {
    name: 'liveness probe failed under Never: kill without restart',
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'running', { id: 'c1' });
    },
    liveness: { c1: 'Failure' },
    expected: { ...noAction, containersToKill: { c1: { name: 'foo2', reason: 'LivenessProbe', message: 'Container foo2 failed liveness probe' } } },
  },
  {
    name: 'liveness probe succeeded: keep the container',
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'running', { id: 'c1' });
    },
    liveness: { c1: 'Success' },
    expected: noAction,
  },
  {
    name: 'no ready sandbox, Never, all containers exited: do not create a sandbox, just kill',
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
      pod.spec!.containers.forEach((_c, i) => exited(pod, s, i, i));
    },
    expected: { killPod: true, createSandbox: false, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [] },
  },
  {
    name: 'no ready sandbox, OnFailure, all containers succeeded: do not create a sandbox, just kill',
    pod: makePod({ restartPolicy: 'OnFailure' }),
    mutate: (pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
      pod.spec!.containers.forEach((_c, i) => exited(pod, s, i, 0));
    },
    expected: { killPod: true, createSandbox: false, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [] },
  },
  {
    name: 'no ready sandbox, Never, no container ever created: create the sandbox (it may have failed before)',
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (_pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
      s.containerStatuses = [];
    },
    expected: { killPod: true, createSandbox: true, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [0, 1, 2] },
  },
  {
    name: 'a container in unknown state: kill it before starting it again',
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'unknown', { id: 'c1' });
    },
    expected: { ...noAction, containersToStart: [1], containersToKill: { c1: { name: 'foo2', reason: 'Unknown', message: 'Container is in "unknown" state, try killing it before restart' } } },
  },
  {
    name: 'a container left in created state is started (even under Never)',
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'created');
    },
    expected: { ...noAction, containersToStart: [1] },
  },
  {
    name: 'Never with every container exited: kill the pod, nothing left to keep',
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (pod, s) => pod.spec!.containers.forEach((_c, i) => exited(pod, s, i, 0)),
    expected: { ...noAction, killPod: true },
  },
  {
    name: 'a pod being deleted does not restart exited containers; with none running it is killed',
    mutate: (pod, s) => {
      pod.metadata!.deletionTimestamp = new Date();
      pod.spec!.containers.forEach((_c, i) => exited(pod, s, i, 1));
    },
    expected: { ...noAction, killPod: true },
  },
  {
    name: 'two ready sandboxes: reconcile by recreating, with attempt + 1',
    mutate: (_pod, s) => {
      s.sandboxStatuses = [sandbox({ id: 'sandbox-1', attempt: 1, createdAt: 2 }), sandbox({ id: 'sandbox-0', createdAt: 1 })];
    },
    expected: { killPod: true, createSandbox: true, sandboxID: 'sandbox-1', attempt: 2, containersToStart: [0, 1, 2] },
  },
  {
    name: 'network namespace changed (pod now hostNetwork): new sandbox, old ID not carried',
    pod: makePod({ hostNetwork: true }),
    expected: { killPod: true, createSandbox: true, sandboxID: '', attempt: 1, containersToStart: [0, 1, 2] },
  },
  {
    name: 'startup probe failed under Never: kill without restart',
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'running', { id: 'c1' });
    },
    startup: { c1: 'Failure' },
    expected: { ...noAction, containersToKill: { c1: { name: 'foo2', reason: 'StartupProbe', message: 'Container foo2 failed startup probe' } } },
  },
  {
    name: 'liveness and startup both failing: one kill, for liveness (checked first), and a restart',
    mutate: (pod, s) => {
      s.containerStatuses[1] = containerStatus(pod.spec!.containers[1]!, 'running', { id: 'c1' });
    },
    liveness: { c1: 'Failure' },
    startup: { c1: 'Failure' },
    expected: { ...noAction, containersToStart: [1], containersToKill: { c1: { name: 'foo2', reason: 'LivenessProbe', message: 'Container foo2 failed liveness probe, will be restarted' } } },
  },
  {
    // The kubelet's quirk, kept: with no sandbox left (attempt 0), "Never" cannot tell it ran before.
    name: 'no sandbox at all under Never, with container statuses present: a first sandbox, every container started',
    pod: makePod({ restartPolicy: 'Never' }),
    mutate: (pod, s) => {
      s.sandboxStatuses = [];
      pod.spec!.containers.forEach((_c, i) => exited(pod, s, i, 0));
    },
    expected: { killPod: true, createSandbox: true, sandboxID: '', attempt: 0, containersToStart: [0, 1, 2] },
  },
  {
    name: 'a new sandbox under OnFailure with every app container succeeded and the init containers gone: kill, no sandbox',
    pod: makePod({ restartPolicy: 'OnFailure', initContainers: ['init1'] }),
    mutate: (pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
      pod.spec!.containers.forEach((_c, i) => exited(pod, s, i, 0));
    },
    expected: { killPod: true, createSandbox: false, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [] },
  },
  {
    name: 'a host-network pod needs no sandbox IP',
    pod: makePod({ hostNetwork: true }),
    mutate: (_pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ip: '', network: 'NODE' });
    },
    expected: noAction,
  },
];

const initPod = (policy = 'Always') => makePod({ restartPolicy: policy, initContainers: ['init1', 'init2', 'init3'] });
const initStatus = (pod: V1Pod, i: number, state: 'running' | 'exited' | 'unknown' | 'created', exitCode = 0, id?: string) =>
  containerStatus(pod.spec!.initContainers![i]!, state, { exitCode, id });
/** Status with a ready sandbox and the given init container statuses, no app container yet. */
const onlyInits = (pod: V1Pod, statuses: ReturnType<typeof initStatus>[]): PodStatus => ({ ...runningStatus(pod), containerStatuses: statuses });

const initCases: Case[] = [
  {
    name: 'init: initialisation completed, start every app container',
    pod: initPod(),
    status: initializedStatus,
    expected: { ...noAction, containersToStart: [0, 1, 2] },
  },
  {
    name: 'init: no init container started yet, start the first',
    pod: initPod(),
    status: (pod) => onlyInits(pod, []),
    expected: { ...noAction, nextInit: 'init1' },
  },
  {
    name: 'init: an init container is running, wait',
    pod: initPod(),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited'), initStatus(pod, 1, 'running')]),
    expected: noAction,
  },
  {
    name: 'init: the first completed, start the second',
    pod: initPod(),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited')]),
    expected: { ...noAction, nextInit: 'init2' },
  },
  {
    name: 'init: sandbox dead, kill the pod and restart from the first init container',
    pod: initPod(),
    status: initializedStatus,
    mutate: (_pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
    },
    expected: { killPod: true, createSandbox: true, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [], nextInit: 'init1' },
  },
  {
    name: 'init: the last init container failed under Always, restart it',
    pod: initPod('Always'),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited'), initStatus(pod, 1, 'exited'), initStatus(pod, 2, 'exited', 1)]),
    expected: { ...noAction, nextInit: 'init3' },
  },
  {
    name: 'init: the last init container failed under OnFailure, restart it',
    pod: initPod('OnFailure'),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited'), initStatus(pod, 1, 'exited'), initStatus(pod, 2, 'exited', 1)]),
    expected: { ...noAction, nextInit: 'init3' },
  },
  {
    name: 'init: an init container failed under Never, kill the pod',
    pod: initPod('Never'),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited'), initStatus(pod, 1, 'exited', 1)]),
    expected: { ...noAction, killPod: true },
  },
  {
    name: 'init: unknown state under Always, kill it and start it again',
    pod: initPod('Always'),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited'), initStatus(pod, 1, 'unknown', 0, 'i1')]),
    expected: { ...noAction, nextInit: 'init2', containersToKill: { i1: { name: 'init2', reason: 'Unknown', message: 'Init container is in "unknown" state, try killing it before restart' } } },
  },
  {
    name: 'init: unknown state under OnFailure, kill it and start it again',
    pod: initPod('OnFailure'),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited'), initStatus(pod, 1, 'unknown', 0, 'i1')]),
    expected: { ...noAction, nextInit: 'init2', containersToKill: { i1: { name: 'init2', reason: 'Unknown', message: 'Init container is in "unknown" state, try killing it before restart' } } },
  },
  {
    name: 'init: unknown state under Never, kill the pod',
    pod: initPod('Never'),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited'), initStatus(pod, 1, 'unknown', 0, 'i1')]),
    expected: { ...noAction, killPod: true },
  },
  {
    name: 'init: sandbox not ready and an init container failed under Never: kill only, no new sandbox',
    pod: initPod('Never'),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited', 1)]),
    mutate: (_pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
    },
    expected: { killPod: true, createSandbox: false, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [] },
  },
  {
    name: 'init: sandbox not ready under Never with no container seen: create a new sandbox',
    pod: initPod('Never'),
    status: (pod) => onlyInits(pod, []),
    mutate: (_pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
    },
    expected: { killPod: true, createSandbox: true, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [], nextInit: 'init1' },
  },
  {
    name: 'init: sandbox not ready and an init container failed under OnFailure: new sandbox from the first',
    pod: initPod('OnFailure'),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited', 1)]),
    mutate: (_pod, s) => {
      s.sandboxStatuses[0] = sandbox({ ready: false });
    },
    expected: { killPod: true, createSandbox: true, sandboxID: 'sandbox-0', attempt: 1, containersToStart: [], nextInit: 'init1' },
  },
  {
    name: 'init: earlier statuses gone (GC) but the last runs: do not restart the earlier ones',
    pod: initPod(),
    status: (pod) => onlyInits(pod, [initStatus(pod, 2, 'running')]),
    expected: noAction,
  },
  {
    name: 'init: an init container left in created state after a start error is started again',
    pod: initPod(),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'exited'), initStatus(pod, 1, 'created')]),
    expected: { ...noAction, nextInit: 'init2' },
  },
  {
    name: 'init: app containers already running means initialisation is done, even without init statuses',
    pod: initPod(),
    status: runningStatus,
    expected: noAction,
  },
];

// Sidecars: init1 has restartPolicy Always (with a startup probe where the case says so), init2 is an ordinary init container.
const sidecarPod = (opts: { startupProbe?: boolean; policy?: string } = {}) => {
  const pod = makePod({ restartPolicy: opts.policy ?? 'Always', initContainers: ['side', 'init2'] });
  const side = pod.spec!.initContainers![0]!;
  side.restartPolicy = 'Always';
  if (opts.startupProbe) side.startupProbe = { exec: { command: ['true'] } };
  return pod;
};
const sidecarCases: Case[] = [
  {
    name: 'sidecar: not started yet, start it first',
    pod: sidecarPod(),
    status: (pod) => onlyInits(pod, []),
    expected: { ...noAction, nextInit: 'side' },
  },
  {
    name: 'sidecar: running (no startup probe), so the next init container starts',
    pod: sidecarPod(),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'running')]),
    expected: { ...noAction, nextInit: 'init2' },
  },
  {
    name: 'sidecar: running but its startup probe has not passed, the next one waits',
    pod: sidecarPod({ startupProbe: true }),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'running', 0, 'side-1')]),
    expected: noAction,
  },
  {
    name: 'sidecar: its startup probe passed, the next init container starts',
    pod: sidecarPod({ startupProbe: true }),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'running', 0, 'side-1')]),
    startup: { 'side-1': 'Success' },
    expected: { ...noAction, nextInit: 'init2' },
  },
  {
    name: 'sidecar: its startup probe failed, kill it and start it again',
    pod: sidecarPod({ startupProbe: true }),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'running', 0, 'side-1')]),
    startup: { 'side-1': 'Failure' },
    expected: { ...noAction, nextInit: 'side', containersToKill: { 'side-1': { name: 'side', reason: 'StartupProbe', message: 'Init container side failed startup probe' } } },
  },
  {
    name: 'sidecar: initialised and running beside the app: app containers start',
    pod: sidecarPod(),
    status: (pod) => onlyInits(pod, [initStatus(pod, 0, 'running'), initStatus(pod, 1, 'exited')]),
    expected: { ...noAction, containersToStart: [0, 1, 2] },
  },
  {
    name: 'sidecar: exited while the app runs (even under Never): start it again, the app keeps running',
    pod: sidecarPod({ policy: 'Never' }),
    status: (pod) => ({ ...runningStatus(pod), containerStatuses: [...runningStatus(pod).containerStatuses, initStatus(pod, 0, 'exited', 1)] }),
    expected: { ...noAction, nextInit: 'side' },
  },
  {
    name: 'sidecar: its liveness probe failed: kill it and start it again',
    pod: (() => {
      const p = sidecarPod();
      p.spec!.initContainers![0]!.livenessProbe = { exec: { command: ['true'] } };
      return p;
    })(),
    status: (pod) => ({ ...runningStatus(pod), containerStatuses: [...runningStatus(pod).containerStatuses, initStatus(pod, 0, 'running', 0, 'side-1')] }),
    liveness: { 'side-1': 'Failure' },
    expected: { ...noAction, nextInit: 'side', containersToKill: { 'side-1': { name: 'side', reason: 'LivenessProbe', message: 'Init container side failed liveness probe' } } },
  },
];

for (const c of [...regular, ...initCases, ...sidecarCases]) {
  test(c.name, () => run(c));
}

test('ephemeral containers: started once when they have no status, even while init containers run; never restarted', () => {
  const pod = initPod();
  pod.spec!.ephemeralContainers = [{ name: 'dbg', image: 'i' }];
  const status = onlyInits(pod, [initStatus(pod, 0, 'running')]);
  assert.deepEqual(computePodActions(pod, status).ephemeralContainersToStart, [0]);
  status.containerStatuses.push(containerStatus({ name: 'dbg' }, 'exited', { exitCode: 1 }));
  assert.deepEqual(computePodActions(pod, status).ephemeralContainersToStart, [], 'an exited ephemeral container stays exited');
});
