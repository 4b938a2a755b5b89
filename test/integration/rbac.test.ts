// Least privilege proven, not assumed: deploy/rbac.yaml gives the ServiceAccount the bootstrap
// rights only (ask for the node's client certificate), deploy/approver.yaml's approver (`nodelet
// approve-csrs`, run here with its own ServiceAccount's token) approves a CSR only for the node
// the asking pod's token is bound to and only before that node registers, and nodelet
// bootstrapping with such a token drives a pod's whole life as system:node:<name> without one 403,
// under the API server's Node authorizer and NodeRestriction admission plugin. A token of one node
// asking for another node, a token bound to no node, and a second bootstrap of a registered node
// are each refused or left to a person, and nodelet says so. On nodelet's own process runtime (the
// cluster's containerd may have a real kubelet on it, which kills sandboxes it did not start).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonLines, startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';
import { container, core, createPod, podEvents, podGone, running, waitPod } from '../support/kube.js';
import { processRuntimeAgentConfig, resetProcessRuntime } from '../support/runtimes.js';

const env = clusterEnv();
const tmp = mkdtempSync(join(tmpdir(), 'nodelet-rbac-'));
const kubectl = (...args: string[]) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'ignore'] });
const started: Array<{ agent: RunningAgent; root: string }> = [];
const hostPods: string[] = [];
let approver: { child: ChildProcess; lines: Array<Record<string, unknown>> } | undefined;

/** A kubeconfig holding `token`, against the same API server. */
function kubeconfigWithToken(token: string, name: string): string {
  const file = join(tmp, `${name}-${randomBytes(3).toString('hex')}.kubeconfig`);
  writeFileSync(file, readFileSync(env.kubeconfig, 'utf8').replace(/token: .*/, `token: ${token}`));
  return file;
}

/**
 * The ServiceAccount token a nodelet pod on `host` has: bound to a pod of the ServiceAccount that
 * is bound to that node (the API server then names the node in the token's user info).
 */
function hostPodToken(host: string): string {
  const pod = `nodelet-${host}`;
  const manifest = join(tmp, `${pod}.json`);
  writeFileSync(
    manifest,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: pod, namespace: 'kube-system' },
      spec: { serviceAccountName: 'nodelet', nodeName: host, containers: [{ name: 'nodelet', image: 'nodelet.test/nodelet:0.1.0' }] },
    }),
  );
  kubectl('apply', '-f', manifest);
  hostPods.push(pod);
  return kubectl('create', 'token', 'nodelet', '-n', 'kube-system', '--bound-object-kind', 'Pod', '--bound-object-name', pod, '--duration', '1h').trim();
}

/** nodelet bootstrapping with `token`, on a process runtime of its own. */
async function startBootstrapping(node: string, token: string, opts: { waitForStart?: boolean; keep?: string } = {}): Promise<RunningAgent> {
  const { config, root } = processRuntimeAgentConfig(join(env.clusterDir, 'test-agents', `${node}-runtime`), `${node}.sock`);
  const agent = await startAgent(node, ['--config', config, '--bootstrap-kubeconfig', kubeconfigWithToken(token, node), '--kubeconfig', join(tmp, `${node}.kubeconfig`), '--cert-dir', join(tmp, `${node}-pki`), '--rotate-certificates', 'true'], opts);
  started.push({ agent, root });
  return agent;
}

type Csr = { metadata: { name: string }; spec: { username: string; signerName: string; extra?: Record<string, string[]> }; status?: { conditions?: Array<{ type: string; reason?: string; message?: string }> } };
const csrsBy = (user: string) => (JSON.parse(kubectl('get', 'csr', '-o', 'json')) as { items: Csr[] }).items.filter((c) => c.spec.username === user);
const SA = 'system:serviceaccount:kube-system:nodelet';
const agentCsrs = (a: RunningAgent) => [...new Set(a.lines.map((l) => l.csr).filter((c): c is string => typeof c === 'string'))];
const csrNamed = (name: string) => JSON.parse(kubectl('get', 'csr', name, '-o', 'json')) as Csr;

before(() => {
  // An older deploy/ bound nodeclient to the ServiceAccount; left on a reused cluster, the
  // controller-manager would approve any node name first.
  kubectl('delete', 'clusterrolebinding', 'nodelet:nodeclient', '--ignore-not-found');
  kubectl('apply', '-f', join(projectRoot, 'deploy/rbac.yaml'));
  // The approver's objects but its Deployment: it runs here as a process, with its ServiceAccount's token.
  const docs = readFileSync(join(projectRoot, 'deploy/approver.yaml'), 'utf8').split(/^---$/m).filter((d) => !/^kind: Deployment$/m.test(d));
  writeFileSync(join(tmp, 'approver.yaml'), docs.join('---\n'));
  kubectl('apply', '-f', join(tmp, 'approver.yaml'));
  const token = kubectl('create', 'token', 'nodelet-csr-approver', '-n', 'kube-system', '--duration', '1h').trim();
  const child = spawn(process.execPath, [join(projectRoot, 'dist/src/cli/main.js'), 'approve-csrs', '--kubeconfig', kubeconfigWithToken(token, 'approver'), '--log-format', 'json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  approver = { child, lines: jsonLines(child) };
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
    const ours = agentCsrs(agent);
    if (ours.length) kubectl('delete', 'csr', ...ours, '--ignore-not-found');
  }
  for (const pod of hostPods) kubectl('delete', 'pod', '-n', 'kube-system', pod, '--ignore-not-found', '--grace-period', '0', '--force');
  approver?.child.kill('SIGTERM');
  // The deploy/ objects stay (another suite may use them).
});

const forbidden = (a: RunningAgent) => a.lines.filter((l) => /\b403\b|forbidden/i.test(JSON.stringify(l)));

test('kubectl apply --dry-run=server -k deploy/ is accepted by the real API server', () => {
  const out = kubectl('apply', '--dry-run=server', '-k', join(projectRoot, 'deploy'));
  for (const kind of [
    'serviceaccount/nodelet',
    'serviceaccount/nodelet-csr-approver',
    'clusterrole.rbac.authorization.k8s.io/nodelet:csr-approver',
    'clusterrolebinding.rbac.authorization.k8s.io/nodelet:node-bootstrapper',
    'clusterrolebinding.rbac.authorization.k8s.io/nodelet:selfnodeclient',
    'clusterrolebinding.rbac.authorization.k8s.io/nodelet:csr-approver',
    'configmap/nodelet-config',
    'daemonset.apps/nodelet',
    'deployment.apps/nodelet-csr-approver',
  ]) {
    assert.match(out, new RegExp(`${kind.replace(/\./g, '\\.')} (created|configured|unchanged) \\(server dry run\\)`));
  }
  assert.doesNotMatch(out, /nodelet:nodeclient/, 'no nodeclient right for the ServiceAccount: the controller-manager would approve any node name');
  assert.deepEqual(out.match(/clusterrole\.rbac\.authorization\.k8s\.io\/\S+/g), ['clusterrole.rbac.authorization.k8s.io/nodelet:csr-approver'], 'one ClusterRole of its own, the approver\'s');
});

test('the ServiceAccount may ask for certificates and nothing a node does; the approver may approve node client certificates only', () => {
  const can = (as: string, verb: string, resource: string, ...extra: string[]) =>
    spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'auth', 'can-i', verb, resource, '--as', as, ...extra], { encoding: 'utf8' }).stdout.trim();
  assert.equal(can(SA, 'create', 'certificatesigningrequests.certificates.k8s.io'), 'yes');
  assert.equal(can(SA, 'watch', 'certificatesigningrequests.certificates.k8s.io'), 'yes');
  // (TYPE/NAME would name a CSR called nodeclient: the subresource is asked for as such.)
  assert.equal(can(SA, 'create', 'certificatesigningrequests.certificates.k8s.io', '--subresource', 'nodeclient'), 'no');
  for (const [verb, resource] of [
    ['get', 'nodes'],
    ['patch', 'nodes/status'],
    ['list', 'pods'],
    ['patch', 'pods/status'],
    ['get', 'secrets'],
    ['create', 'events'],
    ['update', 'leases.coordination.k8s.io'],
  ] as const) {
    assert.equal(can(SA, verb, resource, '-A'), 'no', `${verb} ${resource}`);
  }
  const approverSA = 'system:serviceaccount:kube-system:nodelet-csr-approver';
  assert.equal(can(approverSA, 'update', 'certificatesigningrequests.certificates.k8s.io', '--subresource', 'approval'), 'yes');
  assert.equal(can(approverSA, 'get', 'nodes'), 'yes');
  for (const [verb, resource] of [
    ['create', 'certificatesigningrequests.certificates.k8s.io'],
    ['delete', 'certificatesigningrequests.certificates.k8s.io'],
    ['update', 'certificatesigningrequests.certificates.k8s.io'],
    ['list', 'nodes'],
    ['get', 'secrets'],
    ['list', 'pods'],
  ] as const) {
    assert.equal(can(approverSA, verb, resource, '-A'), 'no', `approver: ${verb} ${resource}`);
  }
  assert.equal(can(approverSA, 'update', 'certificatesigningrequests.certificates.k8s.io', '--subresource', 'status'), 'no', 'approver: update CSR status (issue certificates)');
});

test('bootstrapping with the token of a nodelet pod on its host: approved by nodelet-csr-approver for its own node; nodelet drives a pod\'s whole life as system:node:<name>, and nothing is forbidden', async () => {
  const host = uniqueNodeName('it-rbac-host');
  const node = `${host}-nodelet`;
  const agent = await startBootstrapping(node, hostPodToken(host));
  const n = await eventually('the node registered', 10_000, () => core.readNode({ name: node }).catch(() => undefined));
  assert.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
  const [csrName] = agentCsrs(agent);
  const csr = csrNamed(csrName!);
  assert.deepEqual(csr.spec.extra?.['authentication.kubernetes.io/node-name'], [host], 'the API server recorded the token\'s node');
  const approved = csr.status?.conditions?.find((c) => c.type === 'Approved');
  assert.equal(approved?.reason, 'AutoApproved');
  assert.match(approved?.message ?? '', new RegExp(`bootstrap client certificate of node ${node}: asked for by the nodelet pod on ${host}`));
  assert.ok(approver!.lines.some((l) => l.message === 'certificate signing request approved' && l.csr === csrName && l.node === node));
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

  // The certificate lost (or expired): a second bootstrap of the registered node waits for a person.
  await agent.stop();
  rmSync(join(tmp, `${node}-pki`), { recursive: true, force: true });
  rmSync(join(tmp, `${node}.kubeconfig`), { force: true });
  const again = await startBootstrapping(node, hostPodToken(`${host}`), { waitForStart: false });
  const second = await eventually('the second bootstrap CSR', 20_000, async () => agentCsrs(again).find((c) => c !== csrName), 500);
  const left = await eventually('the approver to leave it to a person', 20_000, async () => approver!.lines.find((l) => l.message === 'certificate signing request left for a person' && l.csr === second), 500);
  assert.match(String(left.reason), new RegExp(`node ${node} is registered already: .* kubectl certificate approve ${second}$`));
  assert.deepEqual(csrNamed(second).status?.conditions ?? [], [], 'neither approved nor denied');
  kubectl('certificate', 'approve', second);
  await eventually('nodelet to start with the certificate a person approved', 30_000, async () => again.lines.find((l) => l.message === 'nodelet started'), 500);
});

test('the token of a pod on one host asking for another node: denied by the approver, and nodelet says why', async () => {
  const host = uniqueNodeName('it-rbac-host');
  const other = `${uniqueNodeName('it-rbac-other')}-nodelet`;
  const agent = await startBootstrapping(other, hostPodToken(host), { waitForStart: false });
  const line = await eventually('nodelet to say its CSR was denied', 30_000, async () => agent.lines.find((l) => /was denied \(reason NotOwnNode\)/.test(JSON.stringify(l))), 500);
  assert.match(JSON.stringify(line), new RegExp(`asked for system:node:${other} with the token of a pod on node ${host}: a nodelet there may ask only for system:node:${host}-nodelet`));
  const [csrName] = agentCsrs(agent);
  assert.equal(csrNamed(csrName!).status?.conditions?.find((c) => c.type === 'Denied')?.reason, 'NotOwnNode');
  assert.equal(await core.readNode({ name: other }).catch((e: { code?: number }) => e.code), 404, 'no node without its certificate');
  assert.equal(await agent.stop(), 0, 'a SIGTERM while it waits ends it cleanly');
});

test('a ServiceAccount token bound to no node (kubectl create token): denied, and nodelet says why', async () => {
  const node = `${uniqueNodeName('it-rbac-unbound')}-nodelet`;
  const agent = await startBootstrapping(node, kubectl('create', 'token', 'nodelet', '-n', 'kube-system', '--duration', '1h').trim(), { waitForStart: false });
  const line = await eventually('nodelet to say its CSR was denied', 30_000, async () => agent.lines.find((l) => /was denied \(reason NotBoundToNode\)/.test(JSON.stringify(l))), 500);
  assert.match(JSON.stringify(line), /asked with a token not bound to a pod on a node/);
  assert.equal(await core.readNode({ name: node }).catch((e: { code?: number }) => e.code), 404);
  assert.ok(!agent.lines.some((l) => l.message === 'nodelet started'));
  assert.equal(await agent.stop(), 0);
});

test('with no approver for its requester the CSR waits, and nodelet says what would approve it', async () => {
  // A ServiceAccount of the same rights under another name: neither approver is for it.
  const sa = `nodelet-noapprove-${randomBytes(3).toString('hex')}`;
  kubectl('create', 'serviceaccount', sa, '-n', 'kube-system');
  kubectl('create', 'clusterrolebinding', `${sa}-bootstrapper`, '--clusterrole', 'system:node-bootstrapper', '--serviceaccount', `kube-system:${sa}`);
  try {
    const node = uniqueNodeName('it-rbac-noapprove');
    const agent = await startBootstrapping(node, kubectl('create', 'token', sa, '-n', 'kube-system', '--duration', '1h').trim(), { waitForStart: false });
    const line = await eventually('nodelet to say the CSR is not approved', 45_000, async () => agent.lines.find((l) => /not approved after 30s/.test(String(l.message))), 500);
    assert.equal(line.level, 'warn');
    assert.match(
      String(line.message),
      new RegExp(
        `^client certificate: certificate signing request node-csr-\\S+ not approved after 30s: nodelet-csr-approver \\(deploy/approver\\.yaml\\) approves it if its requester system:serviceaccount:kube-system:${sa} asked with the token of a pod on this node's host and the node is not registered yet, or the controller-manager's approver if the requester may create certificatesigningrequests/nodeclient; else a cluster admin must: kubectl certificate approve node-csr-\\S+$`,
      ),
    );
    const pending = csrsBy(`system:serviceaccount:kube-system:${sa}`);
    assert.equal(pending.length, 1, 'one CSR, made by the ServiceAccount');
    assert.deepEqual(pending[0]!.status?.conditions ?? [], [], 'never approved');
    assert.equal(await core.readNode({ name: node }).catch((e: { code?: number }) => e.code), 404, 'no node without its certificate');
    assert.ok(!agent.lines.some((l) => l.message === 'nodelet started'));
    assert.equal(await agent.stop(), 0, 'a SIGTERM while it waits ends it cleanly');
  } finally {
    kubectl('delete', 'clusterrolebinding', `${sa}-bootstrapper`, '--ignore-not-found');
    kubectl('delete', 'serviceaccount', sa, '-n', 'kube-system', '--ignore-not-found');
  }
});
