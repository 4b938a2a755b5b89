// syncPod, killContainer and GC against the in-memory runtime, on a fake clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { calculatePrivileged, killContainer, killGracePeriod } from '../../../src/runtime/container.js';
import { RuntimeClassNotFoundError } from '../../../src/kube/runtime-class.js';
import { getPodStatus } from '../../../src/runtime/pod-status.js';
import { killPodWithSyncResult } from '../../../src/runtime/kill.js';
import { syncPod } from '../../../src/runtime/sync-pod.js';
import { runningPodFromStatus } from '../../../src/runtime/types.js';
import { fakeDeps } from './deps.js';

function pod(extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'ns', uid: 'uid-1' },
    spec: { restartPolicy: 'Always', containers: [{ name: 'c', image: 'nodelet.test/busybox:1', command: ['sh'] }], ...extra },
  };
}

const status = (deps: ReturnType<typeof fakeDeps>['deps'], p: V1Pod) => getPodStatus(deps, p.metadata!.uid!, p.metadata!.name!, p.metadata!.namespace!);

test('fsGroup is the first supplemental group of the sandbox and of each container, then supplementalGroups, as the kubelet passes them', async () => {
  const { deps, runtime } = fakeDeps();
  const p = pod({ securityContext: { fsGroup: 1001, supplementalGroups: [3000], runAsUser: 1000, runAsGroup: 2000 } });
  const result = await syncPod(deps, p, await status(deps, p));
  assert.equal(result.error(), undefined);
  const c = [...runtime.containers.values()][0]!;
  assert.deepEqual(c.config.linux!.security_context!.supplemental_groups, ['1001', '3000']);
  const sb = [...runtime.sandboxes.values()][0]!;
  assert.deepEqual(sb.config.linux!.security_context!.supplemental_groups, ['1001', '3000']);
  assert.equal(sb.config.linux!.security_context!.run_as_group?.value, '2000');
});

test('runAsNonRoot as the kubelet checks it: a root runAsUser, an image running as root or by name is CreateContainerConfigError in its words', async () => {
  const cases: Array<[object, { uid?: { value: string }; username?: string } | undefined, RegExp | undefined]> = [
    [{ runAsNonRoot: true, runAsUser: 0 }, undefined, /^container's runAsUser breaks non-root policy \(pod: "web_ns\(uid-1\)", container: c\)$/],
    [{ runAsNonRoot: true }, undefined, /^container has runAsNonRoot and image will run as root \(pod: "web_ns\(uid-1\)", container: c\)$/],
    [{ runAsNonRoot: true }, { uid: { value: '0' } }, /image will run as root/],
    [{ runAsNonRoot: true }, { username: 'app' }, /^container has runAsNonRoot and image has non-numeric user \(app\), cannot verify user is non-root/],
    [{ runAsNonRoot: true }, { uid: { value: '1000' } }, undefined],
    [{ runAsNonRoot: true, runAsUser: 1000 }, undefined, undefined],
  ];
  for (const [securityContext, user, refused] of cases) {
    const { deps, runtime } = fakeDeps();
    if (user) runtime.imageUsers.set('nodelet.test/busybox:1', user);
    const p = pod({ securityContext });
    const result = await syncPod(deps, p, await status(deps, p));
    const failed = result.results.find((r) => r.failed);
    if (refused) {
      assert.equal(failed?.reason, 'CreateContainerConfigError', JSON.stringify(securityContext));
      assert.match(failed!.message, refused);
      assert.equal(runtime.containers.size, 0, 'no container is made');
    } else assert.equal(result.error(), undefined, JSON.stringify([securityContext, user]));
  }
});

test('a new pod: sandbox, then image check, create and start, with Pulled/Created/Started events', async () => {
  const { deps, runtime, recorder } = fakeDeps();
  const p = pod();
  const result = await syncPod(deps, p, await status(deps, p));
  assert.equal(result.error(), undefined);
  assert.deepEqual(runtime.calls, ['RunPodSandbox web attempt=0', 'CreateContainer c attempt=0', 'StartContainer c']);
  assert.deepEqual(recorder.reasons(), ['Pulled', 'Created', 'Started']);
  assert.equal(recorder.events[1]!.ref.fieldPath, 'spec.containers{c}');
  const c = [...runtime.containers.values()][0]!;
  assert.equal(c.config.log_path, 'c/0.log');
  assert.equal(c.config.labels!['io.kubernetes.pod.uid'], 'uid-1');
  assert.equal(c.config.annotations!['io.kubernetes.container.restartCount'], '0');
  // The kubelet's default masked and read-only paths (procMount Default).
  assert.ok(c.config.linux!.security_context!.masked_paths!.includes('/proc/kcore'));
  assert.ok(c.config.linux!.security_context!.readonly_paths!.includes('/proc/sys'));
  const sb = [...runtime.sandboxes.values()][0]!;
  assert.equal(sb.config.log_directory, join(deps.podLogRoot, 'ns_web_uid-1'));
  assert.ok(existsSync(sb.config.log_directory!), 'the pod log directory is created');
});

test('crash-loop back-off: immediate first restart, then 10 s, 20 s, 40 s, with BackOff events', async () => {
  const { deps, runtime, clock, recorder } = fakeDeps();
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  const waits: number[] = [];
  for (let restart = 1; restart <= 4; restart++) {
    runtime.exit(runtime.running()[0]!.id, 1);
    const exitedAt = clock.now();
    // Sync every second until the container runs again.
    for (;;) {
      const result = await syncPod(deps, p, await status(deps, p));
      const start = result.results.find((r) => r.action === 'StartContainer');
      if (!start?.failed) break;
      assert.equal(start.reason, 'CrashLoopBackOff');
      assert.match(start.message, /^back-off \d+s restarting failed container=c pod=web_ns\(uid-1\)$/);
      clock.step(1000);
    }
    waits.push((clock.now() - exitedAt) / 1000);
    const latest = (await status(deps, p)).containerStatuses[0]!;
    assert.equal(latest.restartCount, restart);
    assert.equal(latest.state, 'running');
  }
  assert.deepEqual(waits, [0, 10, 20, 40]);
  assert.ok(recorder.reasons().filter((r) => r === 'BackOff').length >= 3);
});

test('killContainer grace period: override > deletionGracePeriodSeconds > a failed probe\'s own > terminationGracePeriodSeconds; the stop gets at least 2 s', async () => {
  const withGrace = (termination?: number, deletion?: number, probeGrace?: number): V1Pod => ({
    metadata: { deletionGracePeriodSeconds: deletion },
    spec: { containers: [{ name: 'c', livenessProbe: { exec: { command: ['x'] }, terminationGracePeriodSeconds: probeGrace } }], terminationGracePeriodSeconds: termination },
  });
  assert.equal(killGracePeriod(withGrace(30), {}), 30);
  assert.equal(killGracePeriod(withGrace(30, 5), {}), 5);
  assert.equal(killGracePeriod(withGrace(30, 5), {}, 1), 1, 'an override wins');
  assert.equal(killGracePeriod(withGrace(0), {}), 0, 'no time for a preStop hook');
  assert.equal(killGracePeriod(withGrace(), {}), 2);
  const p = withGrace(30, undefined, 7);
  assert.equal(killGracePeriod(p, {}, undefined, p.spec!.containers[0], 'LivenessProbe'), 7, 'the liveness probe\'s own grace period');
  assert.equal(killGracePeriod(p, {}, undefined, p.spec!.containers[0], ''), 30);
  assert.equal(killGracePeriod(undefined, { podTerminationGracePeriod: 12 }), 12, 'a pod the agent lost is read from annotations');
  assert.equal(killGracePeriod(undefined, { podTerminationGracePeriod: 12, podDeletionGracePeriod: 3 }), 3);
  // And what the runtime is told: never less than 2 s.
  const { deps, runtime } = fakeDeps();
  const zero = pod({ terminationGracePeriodSeconds: 0 });
  await syncPod(deps, zero, await status(deps, zero));
  const id = runtime.running()[0]!.id;
  await killContainer(deps, zero, id, 'c', '', 'Unknown');
  assert.equal(runtime.stopTimeouts.get(id), 2);
});

test('killContainer of a container whose pod is unknown reads its grace period from the annotations', async () => {
  const { deps, runtime, recorder } = fakeDeps();
  const p = pod({ terminationGracePeriodSeconds: 17 });
  await syncPod(deps, p, await status(deps, p));
  const id = runtime.running()[0]!.id;
  await killContainer(deps, undefined, id, 'c', '', 'Unknown');
  assert.equal(runtime.stopTimeouts.get(id), 17);
  const killing = recorder.events.find((e) => e.reason === 'Killing')!;
  assert.equal(killing.message, 'Stopping container c');
  assert.equal(killing.ref.name, 'web');
});

test('a changed image (the spec a running pod may change, beside resources) is killed with "definition changed" and restarted', async () => {
  const { deps, runtime, recorder } = fakeDeps();
  runtime.images.add('nodelet.test/busybox:2');
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  p.spec!.containers[0]!.image = 'nodelet.test/busybox:2';
  const result = await syncPod(deps, p, await status(deps, p));
  assert.equal(result.error(), undefined);
  assert.equal(recorder.events.find((e) => e.reason === 'Killing')?.message, 'Container c definition changed, will be restarted');
  assert.equal(runtime.running().length, 1);
  assert.equal(runtime.running()[0]!.config.annotations!['io.kubernetes.container.restartCount'], '1');
});

test('privileged only where the node allows it', () => {
  assert.equal(calculatePrivileged(false, true), false);
  assert.equal(calculatePrivileged(true, true), true);
  assert.equal(calculatePrivileged(true, undefined), false);
});

test('CPU and memory become CRI Linux resources (shares, CFS quota when enabled, memory limit)', async () => {
  for (const cpuCFSQuota of [true, false]) {
    const { deps, runtime } = fakeDeps({ cpuCFSQuota });
    const p = pod();
    p.spec!.containers[0]!.resources = { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '128Mi' } };
    await syncPod(deps, p, await status(deps, p));
    const r = [...runtime.containers.values()][0]!.config.linux!.resources!;
    assert.equal(r.cpu_shares, '256');
    assert.equal(r.memory_limit_in_bytes, String(128 * 2 ** 20));
    assert.equal(r.cpu_quota, cpuCFSQuota ? '50000' : undefined);
    assert.equal(r.cpu_period, cpuCFSQuota ? '100000' : undefined);
    assert.ok(Number(r.oom_score_adj) > 2 && Number(r.oom_score_adj) < 1000, 'Burstable score');
  }
});

test('procMount Unmasked leaves /proc and /sys unmasked', async () => {
  const { deps, runtime } = fakeDeps();
  const p = pod({ containers: [{ name: 'c', image: 'nodelet.test/busybox:1', command: ['sh'], securityContext: { procMount: 'Unmasked' } }] });
  await syncPod(deps, p, await status(deps, p));
  const c = [...runtime.containers.values()][0]!;
  assert.deepEqual([c.config.linux!.security_context!.masked_paths, c.config.linux!.security_context!.readonly_paths], [[], []]);
});

test('restartCount is recovered from the container log directory when the runtime has no earlier instance, and no log file is reused', async () => {
  const { deps, runtime } = fakeDeps();
  const p = pod();
  // Earlier instances, since forgotten by the runtime (lost state, a purge): their logs remain, one rotated.
  const dir = join(deps.podLogRoot, 'ns_web_uid-1', 'c');
  mkdirSync(dir, { recursive: true });
  for (const f of ['0.log', '1.log', '4.log.20261201-101010', '2.log', 'notes.txt', '99999999999999999999.log']) writeFileSync(join(dir, f), 'x\n');
  mkdirSync(join(dir, '7.log'));
  const result = await syncPod(deps, p, await status(deps, p));
  assert.equal(result.error(), undefined);
  const c = [...runtime.containers.values()][0]!;
  assert.equal(c.config.annotations!['io.kubernetes.container.restartCount'], '5');
  assert.equal(c.config.metadata!.attempt, 5);
  assert.equal(c.config.log_path, 'c/5.log');
  const st = await status(deps, p);
  assert.equal(st.containerStatuses[0]!.restartCount, 5);
});

test('runtimeClassName: the sandbox gets the RuntimeClass\'s handler; a missing RuntimeClass is FailedCreatePodSandBox with the API\'s message', async () => {
  const classes = new Map([['gvisor', 'runsc']]);
  const runtimeClasses = {
    async lookupRuntimeHandler(name: string | undefined) {
      if (!name) return '';
      const h = classes.get(name);
      if (h === undefined) throw new RuntimeClassNotFoundError(name);
      return h;
    },
  };
  const { deps, runtime, recorder } = fakeDeps({ runtimeClasses });
  const p = pod({ runtimeClassName: 'gvisor' });
  assert.equal((await syncPod(deps, p, await status(deps, p))).error(), undefined);
  assert.deepEqual(runtime.handlers, ['runsc']);
  const q = { ...pod({ runtimeClassName: 'gone' }), metadata: { name: 'q', namespace: 'ns', uid: 'uid-2' } };
  const result = await syncPod(deps, q, await status(deps, q));
  assert.equal(result.results.find((r) => r.action === 'CreatePodSandbox')?.reason, 'CreatePodSandboxError');
  assert.equal(runtime.handlers.length, 1, 'no sandbox asked for');
  const e = recorder.events.at(-1)!;
  assert.equal(e.reason, 'FailedCreatePodSandBox');
  assert.equal(e.message, 'Failed to create pod sandbox: runtimeclass.node.k8s.io "gone" not found');
});

test('setHostnameAsFQDN: the kernel hostname is the pod\'s FQDN; one over 64 bytes leaves it without a sandbox, FailedCreatePodSandBox in the kubelet\'s words', async () => {
  const { deps, runtime, recorder } = fakeDeps();
  const p = { ...pod({ subdomain: 't', setHostnameAsFQDN: true }), metadata: { name: 'web-0', namespace: 'ns', uid: 'uid-f' } };
  assert.equal((await syncPod(deps, p, await status(deps, p))).error(), undefined);
  assert.equal(runtime.sandboxConfigs.at(-1)!.hostname, `web-0.t.ns.svc.${deps.dns.clusterDomain}`);
  const long = { ...pod({ subdomain: 't', setHostnameAsFQDN: true }), metadata: { name: 'hostfqdnveryveryveryverylongforfqdntobemorethan64bytes-1', namespace: 'ns', uid: 'uid-g' } };
  const made = runtime.sandboxConfigs.length;
  const result = await syncPod(deps, long, await status(deps, long));
  const r = result.results.find((x) => x.action === 'CreatePodSandbox')!;
  assert.equal(r.reason, 'CreatePodSandboxError');
  assert.match(r.message!, /^Failed to generate sandbox config for pod "ns\/hostfqdn.*": failed to construct FQDN from pod hostname and cluster domain, FQDN hostfqdn\S+ is too long \(64 characters is the max, \d+ characters requested\)$/);
  assert.equal(runtime.sandboxConfigs.length, made, 'no sandbox asked for');
  const e = recorder.events.at(-1)!;
  assert.equal(e.reason, 'FailedCreatePodSandBox');
  assert.match(e.message, /^Failed to create pod sandbox: failed to construct FQDN/);
  // Without a subdomain there is no FQDN: the hostname stays the pod's.
  const plain = { ...pod({ setHostnameAsFQDN: true }), metadata: { name: 'solo', namespace: 'ns', uid: 'uid-h' } };
  await syncPod(deps, plain, await status(deps, plain));
  assert.equal(runtime.sandboxConfigs.at(-1)!.hostname, 'solo');
});

test('seccomp and AppArmor reach the runtime as the kubelet sends them: the container\'s own, else the pod\'s; none is Unconfined (or RuntimeDefault with seccompDefault)', async () => {
  const cases: Array<[Partial<V1Pod['spec']>, object | undefined, object, object | undefined]> = [
    [{}, undefined, { profile_type: 'Unconfined' }, undefined],
    [{ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }, undefined, { profile_type: 'RuntimeDefault' }, undefined],
    [{ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }, { seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/audit.json' } }, { profile_type: 'Localhost', localhost_ref: '/var/lib/nodelet/seccomp/profiles/audit.json' }, undefined],
    [{ securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'k8s-deny-write' } } }, { appArmorProfile: undefined }, { profile_type: 'Unconfined' }, { profile_type: 'Localhost', localhost_ref: 'k8s-deny-write' }],
    [{}, { appArmorProfile: { type: 'RuntimeDefault' } }, { profile_type: 'Unconfined' }, { profile_type: 'RuntimeDefault' }],
  ];
  for (const [spec, sc, seccomp, apparmor] of cases) {
    const { deps, runtime } = fakeDeps({ seccomp: { profileRoot: '/var/lib/nodelet/seccomp', defaultToRuntimeDefault: false } });
    const p = pod({ ...spec, containers: [{ name: 'c', image: 'nodelet.test/busybox:1', command: ['sh'], securityContext: sc as never }] });
    assert.equal((await syncPod(deps, p, await status(deps, p))).error(), undefined);
    const c = [...runtime.containers.values()][0]!.config.linux!.security_context!;
    assert.deepEqual(c.seccomp, seccomp, JSON.stringify([spec, sc]));
    assert.deepEqual(c.apparmor, apparmor);
    const sb = [...runtime.sandboxes.values()][0]!.config.linux!.security_context!;
    assert.deepEqual(sb.seccomp, spec?.securityContext?.seccompProfile ? { profile_type: 'RuntimeDefault' } : { profile_type: 'Unconfined' }, 'the sandbox: the pod\'s profile');
  }
  const { deps, runtime } = fakeDeps({ seccomp: { profileRoot: '/x', defaultToRuntimeDefault: true } });
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  assert.deepEqual([...runtime.containers.values()][0]!.config.linux!.security_context!.seccomp, { profile_type: 'RuntimeDefault' }, 'seccompDefault');
  // A Localhost profile with no name is the pod's error, and nothing starts.
  const bad = pod({ containers: [{ name: 'c', image: 'nodelet.test/busybox:1', securityContext: { seccompProfile: { type: 'Localhost' } } }] });
  const { deps: d2, runtime: r2 } = fakeDeps();
  const res = await syncPod(d2, bad, await status(d2, bad));
  const start = res.results.find((r) => r.action === 'StartContainer')!;
  assert.equal(start.reason, 'CreateContainerConfigError');
  assert.equal(start.message, 'localhostProfile must be set if seccompProfile type is Localhost.');
  assert.equal(r2.containers.size, 0);
});

test('SyncPod: a sandbox that cannot be made is CreatePodSandboxError with FailedCreatePodSandBox, and nothing else is tried', async () => {
  const { deps, runtime, recorder } = fakeDeps();
  runtime.runPodSandbox = async () => {
    throw new Error('failed to setup network for sandbox: no IP addresses available');
  };
  const p = pod();
  const result = await syncPod(deps, p, await status(deps, p));
  // A new pod: the (empty) kill of what it had, then the sandbox that failed.
  assert.deepEqual(result.results.map((r) => `${r.action}:${r.reason ?? 'ok'}`), ['KillPodSandbox:ok', 'CreatePodSandbox:CreatePodSandboxError']);
  assert.equal(result.results[1]!.message, 'failed to setup network for sandbox: no IP addresses available');
  assert.deepEqual(recorder.events.map((e) => `${e.type} ${e.reason}: ${e.message}`), [
    'Warning FailedCreatePodSandBox: Failed to create pod sandbox: failed to setup network for sandbox: no IP addresses available',
  ]);
  assert.equal(runtime.containers.size, 0);
});

test('SyncPod: a sandbox failing while the pod is being deleted is no error and no event', async () => {
  const { deps, runtime, recorder } = fakeDeps({ podState: { isPodTerminationRequested: () => true, shouldPodContentBeRemoved: () => false, shouldPodRuntimeBeRemoved: () => false } });
  runtime.runPodSandbox = async () => {
    throw new Error('context canceled');
  };
  const p = pod();
  const result = await syncPod(deps, p, await status(deps, p));
  assert.equal(result.error(), undefined);
  assert.deepEqual(recorder.reasons(), []);
});

test('SyncPod: a new sandbox whose status cannot be read: FailedStatusPodSandBox, no container started', async () => {
  const { deps, runtime, recorder } = fakeDeps();
  runtime.podSandboxStatus = async () => {
    throw new Error('rpc error: code = Unavailable');
  };
  const p = pod();
  const result = await syncPod(deps, p, await status(deps, p));
  assert.match(result.error()?.message ?? '', /Unavailable/);
  assert.deepEqual(recorder.events.map((e) => `${e.reason}: ${e.message}`), ['FailedStatusPodSandBox: Unable to get pod sandbox status: rpc error: code = Unavailable']);
  assert.equal(runtime.containers.size, 0);
});

test('SyncPod: a kill that fails stops the sync there: no new sandbox, nothing started', async () => {
  const { deps, runtime } = fakeDeps();
  const p = pod();
  await syncPod(deps, p, await status(deps, p));
  // The sandbox dies behind the agent's back; its container cannot be stopped.
  for (const sb of runtime.sandboxes.values()) sb.state = 'SANDBOX_NOTREADY';
  runtime.stopContainer = async () => {
    throw new Error('rpc error: code = DeadlineExceeded desc = context deadline exceeded');
  };
  runtime.calls = [];
  const result = await syncPod(deps, p, await status(deps, p));
  assert.equal(result.results.find((r) => r.action === 'KillContainer')?.reason, 'KillContainerError');
  assert.ok(!runtime.calls.some((c) => c.startsWith('RunPodSandbox') || c.startsWith('CreateContainer')), runtime.calls.join(', '));
});

test('SyncPod: a failed init container start stops the sync: no later init container or app container starts', async () => {
  const { deps, runtime } = fakeDeps();
  const p = pod({ initContainers: [{ name: 'i1', image: 'nodelet.test/busybox:1' }, { name: 'i2', image: 'nodelet.test/busybox:1' }] });
  runtime.startContainer = async (id) => {
    throw new Error(`exec: "sh": executable file not found in $PATH (${id})`);
  };
  const result = await syncPod(deps, p, await status(deps, p));
  assert.deepEqual(result.results.filter((r) => r.action === 'StartContainer').map((r) => `${r.target}:${r.reason}`), ['i1:RunContainerError']);
  assert.deepEqual([...runtime.containers.values()].map((c) => c.config.metadata!.name), ['i1']);
});

test('SyncPod: dead init containers are pruned to their newest instance before a start, and purged with a new sandbox', async () => {
  const { deps, runtime, clock } = fakeDeps();
  const p = pod({ restartPolicy: 'Always', initContainers: [{ name: 'i1', image: 'nodelet.test/busybox:1' }] });
  await syncPod(deps, p, await status(deps, p));
  // i1 fails three times (each restart after its back-off).
  for (let i = 0; i < 3; i++) {
    const running = runtime.running().find((c) => c.config.metadata!.name === 'i1')!;
    runtime.exit(running.id, 1);
    clock.step(400_000);
    await syncPod(deps, p, await status(deps, p));
  }
  const i1 = () => [...runtime.containers.values()].filter((c) => c.config.metadata!.name === 'i1');
  assert.deepEqual(i1().map((c) => c.state).sort(), ['CONTAINER_EXITED', 'CONTAINER_RUNNING'], 'pruned to the newest dead one beside the running one');
  // The sandbox goes: the new one starts from the first init container, with no old instance left.
  for (const c of runtime.running()) runtime.exit(c.id, 1);
  for (const sb of runtime.sandboxes.values()) sb.state = 'SANDBOX_NOTREADY';
  clock.step(400_000);
  await syncPod(deps, p, await status(deps, p));
  assert.equal(i1().length, 1, 'purged: only the new instance');
  assert.equal(i1()[0]!.state, 'CONTAINER_RUNNING');
});

test('a kill under an abort signal leaves no listener on it, however many containers and hooks (one signal serves the whole pod)', async () => {
  const { deps, runtime } = fakeDeps();
  const containers = Array.from({ length: 12 }, (_, i) => ({ name: `c${i}`, image: 'nodelet.test/busybox:1', lifecycle: { preStop: { exec: { command: ['true'] } } } }));
  const p = pod({ containers, terminationGracePeriodSeconds: 5 });
  await syncPod(deps, p, await status(deps, p));
  assert.equal(runtime.running().length, 12);
  const abort = new AbortController();
  const result = await killPodWithSyncResult(deps, p, runningPodFromStatus('fake', await status(deps, p)), undefined, abort.signal);
  assert.equal(result.error(), undefined);
  assert.equal(getEventListeners(abort.signal, 'abort').length, 0);
  // Already aborted: nothing is started, nothing stopped, and it is no failure.
  const { deps: d2, runtime: r2 } = fakeDeps();
  await syncPod(d2, p, await status(d2, p));
  r2.calls = [];
  abort.abort();
  const cut = await killPodWithSyncResult(d2, p, runningPodFromStatus('fake', await status(d2, p)), undefined, abort.signal);
  assert.equal(cut.error(), undefined);
  assert.deepEqual(r2.calls.filter((c) => c.startsWith('StopContainer')), []);
});

test('SyncPod: a start the runtime refuses is RunContainerError with the runtime\'s own message; its event names the container, not its ID', async () => {
  const { deps, runtime, recorder } = fakeDeps();
  const { fromGrpcError } = await import('../../../src/cri/errors.js');
  runtime.startContainer = async (id: string) => {
    throw fromGrpcError({ code: 9, details: `failed to start container ${id}: exec /no/such/binary: No such file or directory` }, 'StartContainer', 'fake', 2000);
  };
  const p = pod();
  const result = await syncPod(deps, p, await status(deps, p));
  const start = result.results.find((r) => r.action === 'StartContainer')!;
  assert.equal(start.reason, 'RunContainerError');
  assert.match(start.message ?? '', /^failed to start container [0-9a-z-]+: exec \/no\/such\/binary: No such file or directory$/);
  // As the kubelet's recordContainerEvent: the ID replaced by the name, so that attempts aggregate (bad-pods/command-not-found.yaml on the process runtime).
  assert.equal(recorder.events.find((e) => e.reason === 'Failed')?.message, 'Error: failed to start container c: exec /no/such/binary: No such file or directory');
});
