// In-place resize: the kubelet's decisions (update in place, or restart by resizePolicy; decreases
// first), the allocation (allocated, or deferred while the node has no room), and the status.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Container, V1Node, V1Pod } from '@kubernetes/client-node';
import { AllocationManager } from '../../../src/pods/allocation.js';
import { computePodActions } from '../../../src/runtime/pod-actions.js';
import { ActuatedResources, computePodResizeAction } from '../../../src/runtime/resize.js';
import { getPodStatus } from '../../../src/runtime/pod-status.js';
import { syncPod } from '../../../src/runtime/sync-pod.js';
import { generateAPIPodStatus } from '../../../src/status/generate.js';
import { fakeDeps } from './deps.js';

const res = (cpu: string, mem: string) => ({ requests: { cpu, memory: mem }, limits: { cpu: String(parseInt(cpu) * 2) + 'm', memory: mem } });
function pod(containers: V1Container[], generation = 1): V1Pod {
  return { metadata: { name: 'web', namespace: 'ns', uid: 'uid-1', generation }, spec: { restartPolicy: 'Always', containers } };
}
const c = (name: string, cpu: string, mem = '64Mi', extra: Partial<V1Container> = {}): V1Container => ({ name, image: 'nodelet.test/busybox:1', command: ['sh'], resources: res(cpu, mem), ...extra });

test('resize: a running container gets UpdateContainerResources, decreases first; a RestartContainer policy restarts it instead; nothing changes otherwise', async () => {
  const actuated = new ActuatedResources();
  const { deps, runtime, recorder } = fakeDeps({ actuated });
  const before = pod([c('a', '100m'), c('b', '100m'), c('r', '100m', '64Mi', { resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] })]);
  const status = () => getPodStatus(deps, 'uid-1', 'web', 'ns');
  await syncPod(deps, before, await status());
  assert.equal(actuated.size(), 3, 'what each container was started with is kept');
  // Nothing resized: no action at all.
  assert.deepEqual(computePodResizeAction(before, await status(), computePodActions(before, await status(), deps.probes), actuated), []);
  // a grows, b shrinks, r's memory changes (restart).
  const after = pod([c('a', '200m'), c('b', '50m'), c('r', '100m', '128Mi', { resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] })], 2);
  const st = await status();
  const actions = computePodActions(after, st, deps.probes);
  const updates = computePodResizeAction(after, st, actions, actuated);
  assert.deepEqual(updates.map((u) => `${u.container.name}:${u.decrease ? 'down' : 'up'}`), ['b:down', 'a:up']);
  assert.deepEqual([...actions.containersToKill.values()].map((k) => k.message), ['Container r resize requires restart']);
  assert.deepEqual(actions.containersToStart, [2]);
  runtime.calls = [];
  const updated: Array<[string, string | undefined]> = [];
  runtime.updateContainerResources = async (id, r) => {
    updated.push([id, r.cpu_quota as string | undefined]);
  };
  const result = await syncPod(deps, after, st);
  assert.equal(result.error(), undefined);
  const id = (name: string) => st.containerStatuses.find((s) => s.name === name)!.id.id;
  assert.deepEqual(updated, [[id('b'), '10000'], [id('a'), '40000']], 'decrease first, with the CFS quota of the new limits');
  assert.ok(runtime.calls.includes('CreateContainer r attempt=1'), 'r restarted');
  assert.ok(recorder.events.some((e) => e.reason === 'Killing' && e.message === 'Container r resize requires restart'));
  assert.deepEqual(computePodResizeAction(after, await status(), computePodActions(after, await status(), deps.probes), actuated), [], 'applied: nothing more to do');
  assert.equal(actuated.get(id('a'))!.values.cpuRequest, 200);
});

test('resize: a failed update is ResizePodInPlaceError, and later updates of the sync wait', async () => {
  const actuated = new ActuatedResources();
  const { deps, runtime } = fakeDeps({ actuated });
  const p = pod([c('a', '100m'), c('b', '100m')]);
  await syncPod(deps, p, await getPodStatus(deps, 'uid-1', 'web', 'ns'));
  runtime.updateContainerResources = async () => {
    throw new Error('failed to update resources: cgroup busy');
  };
  const result = await syncPod(deps, pod([c('a', '200m'), c('b', '200m')], 2), await getPodStatus(deps, 'uid-1', 'web', 'ns'));
  const resizes = result.results.filter((r) => r.action === 'ResizePodInPlace');
  assert.deepEqual(resizes.map((r) => `${r.target}:${r.reason}`), ['a:ResizePodInPlaceError']);
});

test('allocation: a resize that fits is allocated (ResizeStarted message); one that does not waits as Deferred with the fit check\'s message', () => {
  const node: V1Node = { metadata: { name: 'n', labels: { 'kubernetes.io/os': 'linux' } }, status: { allocatable: { cpu: '2', memory: '4Gi', pods: '110' } } };
  const m = new AllocationManager();
  const p1 = pod([c('a', '100m')]);
  m.admitted(p1);
  const other: V1Pod = { metadata: { uid: 'other' }, spec: { containers: [c('x', '1500m')] } };
  const grown = pod([c('a', '400m')], 2);
  assert.ok(m.resizeRequested(grown));
  const ok = m.handleResize(grown, node, [other], new Date(0));
  assert.equal(ok.kind, 'allocated');
  assert.equal(ok.kind === 'allocated' && ok.message, 'Pod resize started: {"containers":[{"name":"a","resources":{"requests":{"cpu":"400m","memory":"64Mi"},"limits":{"cpu":"800m","memory":"64Mi"}}}],"generation":2}');
  assert.deepEqual(m.conditions('uid-1').map((x) => `${x.type}=${x.status}/${x.observedGeneration}`), ['PodResizeInProgress=True/2']);
  assert.equal((m.allocatedPod(pod([c('a', '100m')])).spec!.containers[0]!.resources!.requests as Record<string, string>).cpu, '400m', 'the pod as allocated');
  const tooBig = pod([c('a', '1000m')], 3);
  const deferred = m.handleResize(tooBig, node, [other], new Date(1000));
  assert.deepEqual(deferred, { kind: 'deferred', reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000", changed: true });
  const pending = m.pendingCondition('uid-1')!;
  assert.deepEqual([pending.type, pending.status, pending.reason, pending.observedGeneration], ['PodResizePending', 'True', 'Deferred', 3]);
  assert.equal((m.allocatedPod(tooBig).spec!.containers[0]!.resources!.requests as Record<string, string>).cpu, '400m', 'still the last allocation');
  assert.equal(m.handleResize(tooBig, node, [other], new Date(2000)).kind === 'deferred' && (m.handleResize(tooBig, node, [other], new Date(2000)) as { changed: boolean }).changed, false, 'the same wait again: no new event');
  // The other pod leaves: the waiting resize is allocated.
  assert.equal(m.handleResize(tooBig, node, [], new Date(3000)).kind, 'allocated');
  assert.equal(m.pendingCondition('uid-1'), undefined);
});

test('status with a resize: allocatedResources and resources per container, and the resize conditions on a running pod', async () => {
  const actuated = new ActuatedResources();
  const { deps } = fakeDeps({ actuated });
  const p = pod([c('a', '100m')]);
  await syncPod(deps, p, await getPodStatus(deps, 'uid-1', 'web', 'ns'));
  const allocated = pod([c('a', '300m')], 2);
  const runtime = await getPodStatus(deps, 'uid-1', 'web', 'ns');
  const st = generateAPIPodStatus({
    pod: allocated,
    runtime,
    nodeIP: 'x',
    now: 0,
    resize: { allocatedPod: allocated, actuated: (id) => actuated.get(id)?.resources, conditions: [{ type: 'PodResizeInProgress', status: 'True' }] },
  });
  const cs = st.containerStatuses![0]!;
  assert.deepEqual(cs.allocatedResources, { cpu: '300m', memory: '64Mi' });
  assert.deepEqual(cs.resources, res('100m', '64Mi'), 'what it runs with until the resize is applied');
  assert.ok(st.conditions!.some((x) => x.type === 'PodResizeInProgress'));
});

test('after an agent restart (nothing recorded): the runtime\'s own figures decide; a container that runs with other resources is updated', async () => {
  const { deps } = fakeDeps({ actuated: new ActuatedResources() });
  const p = pod([c('a', '100m')]);
  await syncPod(deps, p, await getPodStatus(deps, 'uid-1', 'web', 'ns'));
  // A new agent: nothing recorded; the runtime reports the 100m it runs with.
  const fresh = new ActuatedResources();
  const st = await getPodStatus(deps, 'uid-1', 'web', 'ns');
  st.containerStatuses[0]!.resources = { cpuShares: 102, cpuQuota: 20000, memoryLimit: 64 * 2 ** 20 };
  assert.deepEqual(computePodResizeAction(p, st, computePodActions(p, st, deps.probes), fresh), [], 'it runs with its spec: nothing to do');
  assert.equal(fresh.get(st.containerStatuses[0]!.id.id)?.values.cpuRequest, 100, 'and that is now known');
  const resized = pod([c('a', '300m')], 2);
  const again = new ActuatedResources();
  const updates = computePodResizeAction(resized, st, computePodActions(resized, st, deps.probes), again);
  assert.deepEqual(updates.map((u) => u.container.name), ['a'], 'resized while the agent was away: updated');
});

test('allocation of a pod that ran before the agent restarted: what its status says it runs with, so a pending resize is checked again', () => {
  const m = new AllocationManager();
  const p = pod([c('a', '900m')], 3);
  p.status = { containerStatuses: [{ name: 'a', image: '', imageID: '', ready: true, restartCount: 0, resources: res('100m', '64Mi') }] };
  m.admitted(p);
  assert.equal((m.allocatedPod(p).spec!.containers[0]!.resources!.requests as Record<string, string>).cpu, '100m');
  assert.ok(m.resizeRequested(p));
});

test('retain forgets containers no longer running, but not those recorded after the view was taken', () => {
  let now = 1000;
  const actuated = new ActuatedResources(() => now);
  const c = { name: 'c', resources: { limits: { cpu: '100m' } } };
  actuated.set('old', c);
  actuated.set('running', c);
  now = 20_000;
  actuated.set('new', c); // started after the view below was taken
  actuated.retain(new Set(['running']), 10_000);
  assert.deepEqual(['old', 'running', 'new'].map((id) => actuated.get(id) !== undefined), [false, true, true]);
  actuated.retain(new Set(['running']));
  assert.equal(actuated.get('new'), undefined, 'a fresh list of the runtime judges every entry');
});
