// The test cluster's real kube-apiserver (+ etcd), through @kubernetes/client-node and kubectl.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { StatusManager } from '../../src/status/status-manager.js';
import { realClock } from '../../src/util/clock.js';
import { clusterEnv } from '../support/cluster.js';

const env = clusterEnv();
const kc = new k8s.KubeConfig();
kc.loadFromFile(env.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const aborts: AbortController[] = [];
after(() => aborts.forEach((a) => a.abort()));

test('kubectl reaches the API server and /readyz answers ok', () => {
  const out = execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'get', '--raw', '/readyz'], { encoding: 'utf8' });
  assert.equal(out.trim(), 'ok');
});

test('RBAC authorization is on: an unknown identity is forbidden', () => {
  const can = (...as: string[]) =>
    spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'auth', 'can-i', 'list', 'pods', ...as], { encoding: 'utf8' });
  const nobody = can('--as', 'system:serviceaccount:default:nobody');
  assert.equal(nobody.stdout.trim(), 'no');
  assert.equal(nobody.status, 1);
  assert.equal(can().stdout.trim(), 'yes', 'the admin kubeconfig (system:masters) may');
});

test('a Pod is created, read, watched and deleted with client-node', async () => {
  const name = `apitest-${randomUUID().slice(0, 8)}`;
  const namespace = 'default';
  const seen: string[] = [];
  let resolveDeleted!: () => void;
  const deleted = new Promise<void>((r) => (resolveDeleted = r));
  let resolveAdded!: () => void;
  const added = new Promise<void>((r) => (resolveAdded = r));

  const watch = new k8s.Watch(kc);
  const abort = await watch.watch(
    `/api/v1/namespaces/${namespace}/pods`,
    { fieldSelector: `metadata.name=${name}` },
    (type: string, obj: k8s.V1Pod) => {
      seen.push(`${type} ${obj.metadata?.name}`);
      if (type === 'ADDED') resolveAdded();
      if (type === 'DELETED') resolveDeleted();
    },
    () => undefined,
  );
  aborts.push(abort);

  const created = await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { app: 'apitest' } },
      // No scheduler runs here: the pod names its node, which no agent serves.
      spec: { nodeName: 'no-such-node', containers: [{ name: 'c', image: env.testImage }] },
    },
  });
  assert.ok(created.metadata?.uid);
  await added;

  const got = await core.readNamespacedPod({ name, namespace });
  assert.equal(got.metadata?.uid, created.metadata?.uid);
  assert.equal(got.spec?.nodeName, 'no-such-node');
  assert.equal(got.status?.phase, 'Pending');

  const listed = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=no-such-node' });
  assert.ok(listed.items.some((p) => p.metadata?.name === name));

  await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
  await deleted;
  assert.deepEqual(seen.filter((s) => !s.startsWith('MODIFIED')), [`ADDED ${name}`, `DELETED ${name}`]);
  await assert.rejects(core.readNamespacedPod({ name, namespace }), (e: unknown) => (e as { code?: number }).code === 404);
});

test('pod status goes as the kubelet sends it: conditions others wrote meanwhile survive, old IPs and dropped conditions go', async () => {
  const name = `statuspatch-${randomUUID().slice(0, 8)}`;
  const namespace = 'default';
  const created = await core.createNamespacedPod({ namespace, body: { metadata: { name }, spec: { nodeName: 'no-such-node', containers: [{ name: 'c', image: env.testImage }] } } });
  const uid = created.metadata!.uid!;
  try {
    const client = KubeClient.fromFile(env.kubeconfig);
    const manager = new StatusManager(client, realClock, silentLogger());
    // A controller writes its conditions after the agent last read the pod (the agent's copy is stale).
    const theirs = [
      { type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler', message: 'preempted' },
      { type: 'example.com/gate', status: 'True' },
    ];
    await client.rest.request('PATCH', `/api/v1/namespaces/${namespace}/pods/${name}/status`, { body: { status: { conditions: theirs } }, contentType: 'application/strategic-merge-patch+json' });
    const now = new Date();
    const cond = (type: string, status: string) => ({ type, status, lastTransitionTime: now });
    manager.setPodStatus(created, {
      phase: 'Running',
      message: 'resizing',
      conditions: [{ ...cond('Ready', 'False'), reason: 'ContainersNotReady', message: 'containers with unready status: [c]' }, cond('ContainersReady', 'True'), cond('PodResizePending', 'True')],
      podIP: '10.0.0.1',
      podIPs: [{ ip: '10.0.0.1' }],
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
    });
    await manager.flush();
    let got = (await core.readNamespacedPod({ name, namespace })).status!;
    const types = () => (got.conditions ?? []).map((c) => c.type).sort();
    assert.deepEqual(types(), ['ContainersReady', 'DisruptionTarget', 'PodResizePending', 'Ready', 'example.com/gate']);
    assert.ok(types().includes('DisruptionTarget') && types().includes('example.com/gate'), 'the controller\'s conditions are kept');
    // A new sandbox (new IP), the resize done, no message: the API forgets the old ones.
    manager.setPodStatus(created, {
      phase: 'Running',
      conditions: [cond('Ready', 'True'), cond('ContainersReady', 'True')],
      podIP: '10.0.0.2',
      podIPs: [{ ip: '10.0.0.2' }],
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
    });
    await manager.flush();
    got = (await core.readNamespacedPod({ name, namespace })).status!;
    assert.deepEqual(got.podIPs?.map((p) => p.ip), ['10.0.0.2']);
    assert.equal(got.podIP, '10.0.0.2');
    assert.equal(got.message, undefined);
    assert.ok(!types().includes('PodResizePending'), `PodResizePending removed: ${types()}`);
    const readyNow = got.conditions!.find((c) => c.type === 'Ready')!;
    assert.equal(readyNow.status, 'True');
    assert.equal(readyNow.reason, undefined, 'a Ready turned True keeps no old reason');
    assert.equal(readyNow.message, undefined);
    assert.ok(types().includes('DisruptionTarget') && types().includes('example.com/gate'), 'and still kept');
  } finally {
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
  }
});
