// The test cluster's real kube-apiserver (+ etcd), through @kubernetes/client-node and kubectl.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
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
