// RBAC proven, not assumed: nodelet runs with the token of deploy/'s ServiceAccount and drives a
// pod's whole life without one 403; the same test with one verb removed from the ClusterRole fails
// with a clear error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';
import { container, core, createPod, getPod, podEvents, podGone, running, waitPod } from '../support/kube.js';

const env = clusterEnv();
const tmp = mkdtempSync(join(tmpdir(), 'nodelet-rbac-'));
const kubectl = (...args: string[]) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'ignore'] });
const agents: RunningAgent[] = [];

/** deploy/rbac.yaml, with `mutate` applied to its documents, under other names. */
function rbacDocs(suffix: string, mutate: (docs: Array<Record<string, any>>) => void = () => undefined): string {
  const docs = parseAllDocuments(readFileSync(join(projectRoot, 'deploy/rbac.yaml'), 'utf8')).map((d) => d.toJSON() as Record<string, any>);
  for (const d of docs) {
    d.metadata.name = `nodelet${suffix}`;
    if (d.kind === 'ClusterRoleBinding') {
      d.roleRef.name = `nodelet${suffix}`;
      d.subjects[0].name = `nodelet${suffix}`;
    }
  }
  mutate(docs);
  return docs.map((d) => stringify(d)).join('---\n');
}

/** A kubeconfig for the ServiceAccount's token (TokenRequest), against the same API server. */
function kubeconfigFor(sa: string): string {
  const token = kubectl('create', 'token', sa, '-n', 'kube-system', '--duration', '1h').trim();
  const admin = readFileSync(env.kubeconfig, 'utf8');
  const file = join(tmp, `${sa}.kubeconfig`);
  writeFileSync(file, admin.replace(/token: .*/, `token: ${token}`));
  return file;
}

function apply(yamlText: string): void {
  const file = join(tmp, `apply-${Date.now()}.yaml`);
  writeFileSync(file, yamlText);
  kubectl('apply', '-f', file);
}

before(() => {
  apply(readFileSync(join(projectRoot, 'deploy/rbac.yaml'), 'utf8'));
});
after(async () => {
  for (const a of agents) await cleanupAgent(a);
});

const forbidden = (a: RunningAgent) => a.lines.filter((l) => /\b403\b|forbidden/i.test(JSON.stringify(l)));

test('kubectl apply --dry-run=server -k deploy/ is accepted by the real API server', () => {
  const out = kubectl('apply', '--dry-run=server', '-k', join(projectRoot, 'deploy'));
  for (const kind of ['serviceaccount/nodelet', 'clusterrole.rbac.authorization.k8s.io/nodelet', 'clusterrolebinding.rbac.authorization.k8s.io/nodelet', 'configmap/nodelet-config', 'daemonset.apps/nodelet']) {
    assert.match(out, new RegExp(`${kind.replace(/\./g, '\\.')} (created|configured|unchanged) \\(server dry run\\)`));
  }
});

test('with the deploy ServiceAccount\'s token: node, pod status, events and deletion work, and nothing is forbidden', async () => {
  const node = uniqueNodeName('it-rbac');
  const agent = await startAgent(node, ['--kubeconfig', kubeconfigFor('nodelet')]);
  agents.push(agent);
  const n = await eventually('the node registered', 10_000, () => core.readNode({ name: node }).catch(() => undefined));
  assert.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
  const created = await createPod(node, 'rbac', {
    containers: [container('c', 'while true; do sleep 1; done', { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'nodelet-config', key: 'config.yaml', optional: true } } }] })],
  });
  const pod = await waitPod(created, 'Running', 30_000, running);
  const events = await podEvents(pod);
  assert.ok(events.some((e) => e.reason === 'Started' && e.source?.host === node), 'events recorded');
  // The node API asks the API server about its callers (SubjectAccessReview) with this token too.
  const logs = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'logs', pod.metadata!.name!], { encoding: 'utf8' });
  assert.equal(logs.status, 0, logs.stderr);
  const exec = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'exec', pod.metadata!.name!, '--', 'sh', '-c', 'echo $KUBERNETES_SERVICE_HOST'], { encoding: 'utf8' });
  assert.match(exec.stdout, /^\d+\.\d+\.\d+\.\d+\n$/, `exec, and the kubernetes Service in the environment: ${exec.stderr}`);
  await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: 'default', gracePeriodSeconds: 1 });
  await podGone(pod, 30_000);
  await new Promise((r) => setTimeout(r, 11_000)); // one lease renewal and status period more
  assert.deepEqual(forbidden(agent), [], 'no 403 in the agent\'s log');
});

test('the same life cycle with "patch pods/status" removed from the ClusterRole fails, with a clear 403 naming it', async () => {
  apply(
    rbacDocs('-broken', (docs) => {
      const role = docs.find((d) => d.kind === 'ClusterRole')!;
      role.rules = role.rules.filter((r: { resources: string[] }) => !r.resources.includes('pods/status'));
    }),
  );
  const node = uniqueNodeName('it-rbac-broken');
  const agent = await startAgent(node, ['--kubeconfig', kubeconfigFor('nodelet-broken')]);
  agents.push(agent);
  const pod = await createPod(node, 'rbac-broken', { containers: [container('c', 'while true; do sleep 1; done')] });
  const line = await eventually('a 403 in the agent log', 20_000, async () => forbidden(agent)[0]);
  assert.match(
    String(line.error),
    /^403 pods "rbac-broken-\w+" is forbidden: User "system:serviceaccount:kube-system:nodelet-broken" cannot patch resource "pods\/status" in API group "" in the namespace "default"$/,
  );
  assert.notEqual((await getPod(pod)).status?.phase, 'Running', 'without the verb, the pod never shows Running');
});
