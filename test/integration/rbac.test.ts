// Least privilege proven, not assumed: deploy/rbac.yaml gives the ServiceAccount the bootstrap
// rights only (ask for the node's client certificate), and nodelet bootstrapping with its token
// drives a pod's whole life as system:node:<name> without one 403, under the API server's Node
// authorizer and NodeRestriction admission plugin. Without the nodeclient binding the CSR is never
// approved, and nodelet says so, and why. On nodelet's own process runtime (the cluster's
// containerd may have a real kubelet on it, which kills sandboxes it did not start).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';
import { container, core, createPod, podEvents, podGone, running, waitPod } from '../support/kube.js';
import { processRuntimeAgentConfig, resetProcessRuntime } from '../support/runtimes.js';

const env = clusterEnv();
const tmp = mkdtempSync(join(tmpdir(), 'nodelet-rbac-'));
const kubectl = (...args: string[]) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'ignore'] });
const started: Array<{ agent: RunningAgent; root: string }> = [];
const applied: string[] = [];

/** deploy/rbac.yaml's documents, with `mutate` applied. */
function rbacDocs(mutate: (docs: Array<Record<string, any>>) => void = () => undefined): string {
  const docs = parseAllDocuments(readFileSync(join(projectRoot, 'deploy/rbac.yaml'), 'utf8')).map((d) => d.toJSON() as Record<string, any>);
  mutate(docs);
  return docs.map((d) => stringify(d)).join('---\n');
}

function apply(yamlText: string): void {
  const file = join(tmp, `apply-${randomBytes(3).toString('hex')}.yaml`);
  writeFileSync(file, yamlText);
  kubectl('apply', '-f', file);
  applied.push(file);
}

/** A kubeconfig holding the ServiceAccount's token (TokenRequest), against the same API server. */
function bootstrapKubeconfigFor(sa: string): string {
  const token = kubectl('create', 'token', sa, '-n', 'kube-system', '--duration', '1h').trim();
  const file = join(tmp, `${sa}.kubeconfig`);
  writeFileSync(file, readFileSync(env.kubeconfig, 'utf8').replace(/token: .*/, `token: ${token}`));
  return file;
}

/** nodelet bootstrapping with the ServiceAccount's token, on a process runtime of its own. */
async function startBootstrapping(node: string, sa: string, opts: { waitForStart?: boolean } = {}): Promise<RunningAgent> {
  const { config, root } = processRuntimeAgentConfig(join(env.clusterDir, 'test-agents', `${node}-runtime`), `${node}.sock`);
  const agent = await startAgent(node, ['--config', config, '--bootstrap-kubeconfig', bootstrapKubeconfigFor(sa), '--kubeconfig', join(tmp, `${node}.kubeconfig`), '--cert-dir', join(tmp, `${node}-pki`), '--rotate-certificates', 'true'], opts);
  started.push({ agent, root });
  return agent;
}

const csrsBy = (user: string) =>
  (JSON.parse(kubectl('get', 'csr', '-o', 'json')) as { items: Array<{ metadata: { name: string }; spec: { username: string; signerName: string }; status?: { conditions?: unknown[] } }> }).items.filter(
    (c) => c.spec.username === user,
  );

before(() => {
  apply(readFileSync(join(projectRoot, 'deploy/rbac.yaml'), 'utf8'));
});
after(async () => {
  for (const { agent, root } of started) {
    const pods = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${agent.nodeName}` });
    await Promise.all(pods.items.map((p) => core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: p.metadata!.namespace!, gracePeriodSeconds: 1 }).catch(() => undefined)));
    await eventually('the node\'s pods to be gone', 30_000, async () => ((await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${agent.nodeName}` })).items.length === 0 ? true : undefined)).catch(() => undefined);
    await agent.stop();
    resetProcessRuntime(root);
    await core.deleteNode({ name: agent.nodeName }).catch(() => undefined);
    // The CSRs it made (named in its log), and no one else's.
    const ours = [...new Set(agent.lines.map((l) => l.csr).filter((c): c is string => typeof c === 'string'))];
    if (ours.length) kubectl('delete', 'csr', ...ours, '--ignore-not-found');
  }
  // The deploy/ objects stay (another suite may use them); what this file made under other names goes.
  for (const f of applied.slice(1)) kubectl('delete', '-f', f, '--ignore-not-found');
});

const forbidden = (a: RunningAgent) => a.lines.filter((l) => /\b403\b|forbidden/i.test(JSON.stringify(l)));

test('kubectl apply --dry-run=server -k deploy/ is accepted by the real API server', () => {
  const out = kubectl('apply', '--dry-run=server', '-k', join(projectRoot, 'deploy'));
  for (const kind of [
    'serviceaccount/nodelet',
    'clusterrolebinding.rbac.authorization.k8s.io/nodelet:node-bootstrapper',
    'clusterrolebinding.rbac.authorization.k8s.io/nodelet:nodeclient',
    'clusterrolebinding.rbac.authorization.k8s.io/nodelet:selfnodeclient',
    'configmap/nodelet-config',
    'daemonset.apps/nodelet',
  ]) {
    assert.match(out, new RegExp(`${kind.replace(/\./g, '\\.')} (created|configured|unchanged) \\(server dry run\\)`));
  }
  assert.doesNotMatch(out, /clusterrole\.rbac\.authorization\.k8s\.io\//, 'no ClusterRole of its own: the built-in ones only');
});

test('the ServiceAccount may ask for certificates and nothing a node does', () => {
  const can = (verb: string, resource: string, ...extra: string[]) =>
    spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'auth', 'can-i', verb, resource, '--as', 'system:serviceaccount:kube-system:nodelet', ...extra], { encoding: 'utf8' }).stdout.trim();
  assert.equal(can('create', 'certificatesigningrequests.certificates.k8s.io'), 'yes');
  assert.equal(can('watch', 'certificatesigningrequests.certificates.k8s.io'), 'yes');
  assert.equal(can('create', 'certificatesigningrequests.certificates.k8s.io/nodeclient'), 'yes');
  for (const [verb, resource] of [
    ['get', 'nodes'],
    ['patch', 'nodes/status'],
    ['list', 'pods'],
    ['patch', 'pods/status'],
    ['get', 'secrets'],
    ['create', 'events'],
    ['update', 'leases.coordination.k8s.io'],
  ] as const) {
    assert.equal(can(verb, resource, '-A'), 'no', `${verb} ${resource}`);
  }
});

test('bootstrapping with the deploy ServiceAccount\'s token: nodelet drives a pod\'s whole life as system:node:<name>, and nothing is forbidden', async () => {
  const node = uniqueNodeName('it-rbac');
  const agent = await startBootstrapping(node, 'nodelet');
  const n = await eventually('the node registered', 10_000, () => core.readNode({ name: node }).catch(() => undefined));
  assert.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
  assert.equal(csrsBy('system:serviceaccount:kube-system:nodelet').filter((c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet' && JSON.stringify(c).includes('Approved')).length >= 1, true);
  const created = await createPod(node, 'rbac', {
    containers: [container('c', 'while true; do sleep 1; done', { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'kube-root-ca.crt', key: 'ca.crt' } } }] })],
  });
  const pod = await waitPod(created, 'Running', 60_000, running);
  const events = await podEvents(pod);
  assert.ok(events.some((e) => e.reason === 'Started' && e.source?.host === node), 'events recorded');
  // The node API asks the API server about its callers (SubjectAccessReview) as the node too.
  const logs = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'logs', pod.metadata!.name!], { encoding: 'utf8' });
  assert.equal(logs.status, 0, logs.stderr);
  const exec = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'exec', pod.metadata!.name!, '--', 'sh', '-c', 'echo $KUBERNETES_SERVICE_HOST; head -1 /var/run/secrets/kubernetes.io/serviceaccount/ca.crt'], { encoding: 'utf8' });
  assert.match(exec.stdout, /^\d+\.\d+\.\d+\.\d+\n-----BEGIN CERTIFICATE-----\n$/, `exec, the kubernetes Service and the projected token volume: ${exec.stderr}`);
  await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: 'default', gracePeriodSeconds: 1 });
  await podGone(pod, 30_000);
  await new Promise((r) => setTimeout(r, 11_000)); // one lease renewal and status period more
  assert.deepEqual(forbidden(agent), [], 'no 403 in the agent\'s log');
});

test('without the nodeclient binding the CSR is never approved: no node, and nodelet says why', async () => {
  const sa = `nodelet-noapprove-${randomBytes(3).toString('hex')}`;
  apply(
    rbacDocs((docs) => {
      for (const d of docs) {
        if (d.kind === 'ServiceAccount') d.metadata.name = sa;
        if (d.kind === 'ClusterRoleBinding') {
          d.metadata.name = `${d.metadata.name}-${sa}`;
          for (const s of d.subjects) if (s.kind === 'ServiceAccount') s.name = sa;
        }
      }
      docs.splice(docs.findIndex((d) => d.roleRef?.name === 'system:certificates.k8s.io:certificatesigningrequests:nodeclient'), 1);
    }),
  );
  const node = uniqueNodeName('it-rbac-noapprove');
  const agent = await startBootstrapping(node, sa, { waitForStart: false });
  const line = await eventually('nodelet to say the CSR is not approved', 45_000, async () => agent.lines.find((l) => /not approved after 30s/.test(String(l.message))), 500);
  assert.equal(line.level, 'warn');
  assert.match(
    String(line.message),
    new RegExp(
      `^client certificate: certificate signing request node-csr-\\S+ not approved after 30s: the controller-manager's approver approves it only if its requester system:serviceaccount:kube-system:${sa} may create certificatesigningrequests/nodeclient \\(a binding to the ClusterRole system:certificates\\.k8s\\.io:certificatesigningrequests:nodeclient, as in deploy/rbac\\.yaml\\); else a cluster admin must: kubectl certificate approve node-csr-\\S+$`,
    ),
  );
  const pending = csrsBy(`system:serviceaccount:kube-system:${sa}`);
  assert.equal(pending.length, 1, 'one CSR, made by the ServiceAccount');
  assert.deepEqual(pending[0]!.status?.conditions ?? [], [], 'never approved');
  assert.equal(await core.readNode({ name: node }).catch((e: { code?: number }) => e.code), 404, 'no node without its certificate');
  assert.ok(!agent.lines.some((l) => l.message === 'nodelet started'));
  assert.equal(await agent.stop(), 0, 'a SIGTERM while it waits ends it cleanly');
});
