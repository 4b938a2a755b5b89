// nodelet joins the cluster as a kubelet does with TLS bootstrapping (issue 17): a ServiceAccount
// with deploy/rbac.yaml's bootstrap rights only asks for the node's client certificate, the
// controller-manager approves and signs it, and from then on nodelet is system:node:<name> in
// group system:nodes, which the API server's Node authorizer and NodeRestriction admission plugin
// hold to what is its own. On nodelet's own process runtime (the cluster's containerd may have a
// real kubelet on it, which kills sandboxes it did not start).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { CertificateStore } from '../../src/kube/certificate-store.js';
import { loadKubeconfig } from '../../src/kube/rest.js';
import { startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';
import { container, core, createPod, deleteNodePods, NS, running, waitPod } from '../support/kube.js';
import { processRuntimeAgentConfig, resetProcessRuntime } from '../support/runtimes.js';

const env = clusterEnv();
const tmp = mkdtempSync(join(tmpdir(), 'nodelet-identity-'));
const suffix = randomBytes(3).toString('hex');
const SA = `nodelet-id-${suffix}`;
const SA_USER = `system:serviceaccount:kube-system:${SA}`;
const node = uniqueNodeName('it-ident');
const NODE_USER = `system:node:${node}`;
// A Node no agent serves: the pods bound to it link their Secrets to it, not to ours.
const other = uniqueNodeName('it-ident-other');
const pki = join(tmp, 'pki');
const nodeKubeconfig = join(tmp, 'kubeconfig');
const current = join(pki, 'nodelet-client-current.pem');
const runtime = processRuntimeAgentConfig(join(env.clusterDir, 'test-agents', `${node}-runtime`), `ident-${suffix}.sock`);
let agent: RunningAgent | undefined;

const kubectl = (...args: string[]) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });

interface Csr {
  metadata: { name: string };
  spec: { signerName: string; username: string; usages: string[]; request: string };
  status?: { certificate?: string; conditions?: Array<{ type: string; reason?: string; message?: string }> };
}
const csrs = (): Csr[] => (JSON.parse(kubectl('get', 'csr', '-o', 'json')) as { items: Csr[] }).items;
const clientCsrs = (user: string) => csrs().filter((c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet' && c.spec.username === user);

/**
 * deploy/rbac.yaml for a ServiceAccount of this test's own, plus the right the kubelet's usual
 * bootstrap credentials have (kubeadm binds nodeclient to its bootstrap tokens' group): the
 * controller-manager's approver then approves, as it does for a kubelet. The DaemonSet's own path
 * (no nodeclient; nodelet-csr-approver) is rbac.test.ts's.
 */
function rbacFor(sa: string): string {
  const docs = parseAllDocuments(readFileSync(join(projectRoot, 'deploy/rbac.yaml'), 'utf8')).map((d) => d.toJSON() as Record<string, any>);
  docs.push({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'nodelet:nodeclient' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:certificates.k8s.io:certificatesigningrequests:nodeclient' },
    subjects: [{ kind: 'ServiceAccount', name: 'nodelet', namespace: 'kube-system' }],
  });
  for (const d of docs) {
    if (d.kind === 'ServiceAccount') d.metadata.name = sa;
    if (d.kind === 'ClusterRoleBinding') {
      d.metadata.name = `${d.metadata.name}-${sa}`;
      for (const s of d.subjects) if (s.kind === 'ServiceAccount') s.name = sa;
    }
  }
  return docs.map((d) => stringify(d)).join('---\n');
}

/** A kubeconfig holding the ServiceAccount's token (TokenRequest), against the same API server. */
function tokenKubeconfig(sa: string, file: string): string {
  const token = kubectl('create', 'token', sa, '-n', 'kube-system', '--duration', '1h').trim();
  writeFileSync(file, readFileSync(env.kubeconfig, 'utf8').replace(/token: .*/, `token: ${token}`));
  return token;
}

/** One call to the API server with the given credentials: the status and the parsed body. */
function call(method: string, path: string, auth: { cert: string; key: string } | { token: string }, body?: object): Promise<{ status: number; body: any }> {
  const u = new URL(path, env.apiserver);
  return new Promise((resolve, reject) => {
    const req = https.request(
      u,
      {
        method,
        ca: readFileSync(env.clientCA),
        ...('token' in auth ? { headers: { Authorization: `Bearer ${auth.token}` } } : { cert: auth.cert, key: auth.key }),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            /* text */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    if (body) req.setHeader('Content-Type', 'application/json');
    req.end(body ? JSON.stringify(body) : undefined);
  });
}
const stored = () => ({ cert: readFileSync(current, 'utf8'), key: readFileSync(current, 'utf8') });

const agentFlags = [
  '--config', runtime.config,
  '--bootstrap-kubeconfig', join(tmp, 'bootstrap.kubeconfig'),
  '--kubeconfig', nodeKubeconfig,
  '--rotate-certificates', 'true',
  '--cert-dir', pki,
  // The node API's serving certificate through a kubelet-serving CSR too, asked by the node.
  '--tls-cert-file', '', '--tls-private-key-file', '',
  '--rotate-server-certificates', 'true',
];

before(async () => {
  const file = join(tmp, 'rbac.yaml');
  writeFileSync(file, rbacFor(SA));
  kubectl('apply', '-f', file);
  tokenKubeconfig(SA, join(tmp, 'bootstrap.kubeconfig'));
  await core.createNode({ body: { metadata: { name: other, labels: { 'nodelet.io/test': 'fake' } } } });
  agent = await startAgent(node, agentFlags);
  // The serving certificate's CSR, made by the node: approved here, as an approver would.
  const serving = await eventually('the node\'s kubelet-serving CSR', 30_000, async () => csrs().find((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.spec.username === NODE_USER));
  kubectl('certificate', 'approve', serving.metadata.name);
});

after(async () => {
  await deleteNodePods(other);
  if (agent) {
    const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
    await Promise.all(list.items.map((p) => core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: p.metadata!.namespace!, gracePeriodSeconds: 1 }).catch(() => undefined)));
    await eventually('the node\'s pods to be gone', 30_000, async () => ((await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items.length === 0 ? true : undefined)).catch(() => undefined);
    await agent.stop();
  }
  resetProcessRuntime(runtime.root);
  for (const n of [node, other]) await core.deleteNode({ name: n }).catch(() => undefined);
  for (const kind of ['secret', 'configmap']) kubectl('delete', kind, '-l', `nodelet.io/test=${suffix}`, '--ignore-not-found');
  const ours = csrs().filter((c) => c.spec.username === SA_USER || c.spec.username === NODE_USER).map((c) => c.metadata.name);
  if (ours.length) kubectl('delete', 'csr', ...ours, '--ignore-not-found');
  kubectl('delete', '-f', join(tmp, 'rbac.yaml'), '--ignore-not-found');
});

test('bootstrap: one CSR by the ServiceAccount for CN=system:node:<node>, approved by the controller-manager, issued, kept in certDir; the kubeconfig is written to point at it', async () => {
  const mine = clientCsrs(SA_USER);
  assert.equal(mine.length, 1, 'one client CSR by the bootstrap ServiceAccount');
  const csr = mine[0]!;
  assert.match(csr.metadata.name, /^node-csr-/);
  assert.deepEqual(csr.spec.usages, ['digital signature', 'client auth']);
  const subject = spawnSync('openssl', ['req', '-noout', '-subject'], { input: Buffer.from(csr.spec.request, 'base64'), encoding: 'utf8' }).stdout;
  assert.match(subject, new RegExp(`O ?= ?system:nodes, CN ?= ?${NODE_USER}`));
  const approved = csr.status?.conditions?.find((c) => c.type === 'Approved');
  assert.equal(approved?.reason, 'AutoApproved', 'approved by the controller-manager, not by the test');
  assert.equal(approved?.message, 'Auto approving kubelet client certificate after SubjectAccessReview.');
  assert.ok(csr.status?.certificate, 'issued');

  assert.ok(lstatSync(current).isSymbolicLink());
  assert.match(readlinkSync(current), new RegExp(`${pki}/nodelet-client-\\d{4}-\\d\\d-\\d\\d-\\d\\d-\\d\\d-\\d\\d\\.pem$`));
  assert.equal(statSync(current).mode & 0o777, 0o600);
  const cert = new X509Certificate(readFileSync(current));
  assert.equal(cert.subject, `O=system:nodes\nCN=${NODE_USER}`);
  assert.match(cert.issuer, /nodelet-test-ca/, 'signed with the cluster CA by the controller-manager');
  assert.equal(cert.toString(), new X509Certificate(Buffer.from(csr.status!.certificate!, 'base64')).toString());

  const kc = loadKubeconfig(nodeKubeconfig);
  assert.equal(kc.server, env.apiserver);
  assert.equal(kc.token, undefined, 'no bootstrap token in the node\'s kubeconfig');
  assert.equal(kc.cert?.toString(), readFileSync(current, 'utf8'));
  assert.match(readFileSync(nodeKubeconfig, 'utf8'), new RegExp(`client-certificate: ${current}`));

  const n = await eventually('the node registered and Ready', 30_000, async () => {
    const x = await core.readNode({ name: node }).catch(() => undefined);
    return x?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? x : undefined;
  });
  assert.equal(n.metadata?.labels?.['kubernetes.io/hostname'], node);
});

test('the node\'s requests are made as system:node:<node> in group system:nodes (a SelfSubjectReview with the stored certificate); its serving CSR too', async () => {
  const review = await call('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', stored(), { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  assert.equal(review.status, 201, JSON.stringify(review.body));
  assert.equal(review.body.status.userInfo.username, NODE_USER);
  assert.ok(review.body.status.userInfo.groups.includes('system:nodes'), JSON.stringify(review.body.status.userInfo.groups));
  const serving = csrs().filter((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.spec.username === NODE_USER);
  assert.equal(serving.length, 1, 'the serving certificate asked by the node itself');
  assert.ok(agent!.lines.some((l) => l.message === 'API identity: the node\'s client certificate' && l.user === NODE_USER));
});

test('a pod bound to the node sees its Secret and ConfigMap; the node reads them (200) but not a Secret of another node\'s pod (403); the ServiceAccount token reads no Secret', async () => {
  const labels = { 'nodelet.io/test': suffix };
  await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: `mine-${suffix}`, labels }, stringData: { k: 'secret-of-mine' } } });
  await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: `mine-${suffix}`, labels }, data: { k: 'config-of-mine' } } });
  await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: `theirs-${suffix}`, labels }, stringData: { k: 'not-for-this-node' } } });
  const volumes = (secret: string) => [
    { name: 's', secret: { secretName: secret } },
    { name: 'c', configMap: { name: `mine-${suffix}` } },
  ];
  const mounts = [
    { name: 's', mountPath: '/s' },
    { name: 'c', mountPath: '/c' },
  ];
  const pod = await createPod(node, 'ident-secret', { containers: [container('c', 'cat /s/k; echo; cat /c/k; echo; sleep 3600', { volumeMounts: mounts })], volumes: volumes(`mine-${suffix}`) });
  await createPod(other, 'ident-theirs', { containers: [container('c', 'sleep 3600', { volumeMounts: [{ name: 's', mountPath: '/s' }] })], volumes: [volumes(`theirs-${suffix}`)[0]!] });
  await waitPod(pod, 'running', 60_000, running);
  // kubectl logs goes through the node API, whose serving certificate the node asked for and whose callers it checks with SubjectAccessReviews.
  const logs = await eventually('kubectl logs', 30_000, async () => {
    const r = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'logs', pod.metadata!.name!], { encoding: 'utf8' });
    return r.status === 0 && r.stdout.includes('config-of-mine') ? r.stdout : undefined;
  });
  assert.equal(logs, 'secret-of-mine\nconfig-of-mine\n');

  const asNode = stored();
  assert.equal((await call('GET', `/api/v1/namespaces/${NS}/secrets/mine-${suffix}`, asNode)).status, 200);
  assert.equal((await call('GET', `/api/v1/namespaces/${NS}/configmaps/mine-${suffix}`, asNode)).status, 200);
  // The form nodelet's watch by name takes: a list/watch with fieldSelector=metadata.name=<name>.
  const byName = await call('GET', `/api/v1/namespaces/${NS}/secrets?fieldSelector=metadata.name%3Dmine-${suffix}`, asNode);
  assert.equal(byName.status, 200);
  assert.equal(byName.body.items.length, 1);
  const theirs = await call('GET', `/api/v1/namespaces/${NS}/secrets/theirs-${suffix}`, asNode);
  assert.equal(theirs.status, 403);
  assert.match(theirs.body.message, new RegExp(`User "${NODE_USER}" cannot get resource "secrets".*no relationship found between node '${node}' and this object`));
  assert.equal((await call('GET', `/api/v1/namespaces/${NS}/secrets`, asNode)).status, 403, 'no list of a whole namespace');

  const token = kubectl('create', 'token', SA, '-n', 'kube-system', '--duration', '10m').trim();
  const bySa = await call('GET', `/api/v1/namespaces/${NS}/secrets/mine-${suffix}`, { token });
  assert.equal(bySa.status, 403);
  assert.match(bySa.body.message, new RegExp(`User "${SA_USER}" cannot get resource "secrets"`));
  assert.deepEqual(
    agent!.lines.filter((l) => /\b403\b|forbidden/i.test(JSON.stringify(l))),
    [],
    'nothing nodelet asked for was forbidden',
  );
});

test('a restart with the stored certificate still valid makes no new CSR', async () => {
  const before = csrs().filter((c) => c.spec.username === SA_USER || c.spec.username === NODE_USER).length;
  assert.equal(await agent!.stop(), 0);
  agent = await startAgent(node, agentFlags);
  assert.ok(agent.lines.some((l) => l.message === 'client certificate: using the one kept'), 'the kept certificate is used');
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(csrs().filter((c) => c.spec.username === SA_USER || c.spec.username === NODE_USER).length, before, 'no new CSR');
  const review = await call('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', stored(), { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  assert.equal(review.body.status.userInfo.username, NODE_USER);
});

/** A client certificate for the node from the cluster CA, valid from `fromMs` to `toMs` (openssl ca sets both ends). */
function agedCertificate(fromMs: number, toMs: number): { cert: Buffer; key: Buffer } {
  const dir = mkdtempSync(join(tmp, 'ca-'));
  const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z';
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), `${randomBytes(8).toString('hex')}\n`);
  writeFileSync(
    join(dir, 'ca.cnf'),
    `[ca]\ndefault_ca = d\n[d]\ndatabase = ${dir}/index.txt\nnew_certs_dir = ${dir}\nserial = ${dir}/serial\ndefault_md = sha256\npolicy = p\nx509_extensions = x\nunique_subject = no\n[p]\norganizationName = supplied\ncommonName = supplied\n[x]\nbasicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature\nextendedKeyUsage = clientAuth\n`,
  );
  const run = (args: string[]) => {
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`);
  };
  run(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', `/O=system:nodes/CN=${NODE_USER}`, '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'req.pem')]);
  run(['ca', '-batch', '-notext', '-preserveDN', '-config', join(dir, 'ca.cnf'), '-cert', env.clientCA, '-keyfile', join(env.clusterDir, 'pki/ca.key'), '-in', join(dir, 'req.pem'), '-out', join(dir, 'cert.pem'), '-startdate', stamp(fromMs), '-enddate', stamp(toMs)]);
  return { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };
}

test('rotation: a certificate past 70% of its life is renewed by the node itself (selfnodeclient, auto-approved); calls and watches go on with the new one after the old expires', async () => {
  assert.equal(await agent!.stop(), 0);
  // Ten minutes of life, nine of them gone: the renewal is due at once, and the old one ends in a minute.
  const now = Date.now();
  const aged = agedCertificate(now - 9 * 60_000, now + 60_000);
  new CertificateStore(pki, 'nodelet-client').update(aged, now);
  const seen = new Set(csrs().map((c) => c.metadata.name));
  agent = await startAgent(node, agentFlags);
  const renewal = await eventually('a renewal CSR by the node, issued', 30_000, async () => clientCsrs(NODE_USER).find((c) => !seen.has(c.metadata.name) && c.status?.certificate));
  assert.match(renewal.metadata.name, /^csr-/);
  assert.equal(renewal.status?.conditions?.find((c) => c.type === 'Approved')?.message, 'Auto approving self kubelet client certificate after SubjectAccessReview.');
  await eventually('the agent to switch to it', 10_000, async () => (agent!.lines.some((l) => l.message === 'client certificate rotated: API connections reopened with it') ? true : undefined));
  const renewed = new X509Certificate(readFileSync(current));
  assert.equal(renewed.toString(), new X509Certificate(Buffer.from(renewal.status!.certificate!, 'base64')).toString(), 'the renewed pair is the current one');
  assert.ok(Date.parse(renewed.validTo) > now + 3600_000);
  // Past the old certificate's end, the node still works: its watches reopened with the new one.
  const wait = now + 61_000 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  assert.equal((await call('GET', '/api/v1/nodes', { cert: aged.cert.toString(), key: aged.key.toString() })).status, 401, 'the old certificate has expired');
  const pod = await createPod(node, 'ident-after-rotation', { containers: [container('c', 'sleep 3600')] });
  await waitPod(pod, 'running after the rotation', 60_000, running);
  // The Lease is renewed every 10 s, as the node.
  const lease = JSON.parse(kubectl('-n', 'kube-node-lease', 'get', 'lease', node, '-o', 'json')) as { spec: { renewTime: string } };
  assert.ok(Date.now() - Date.parse(lease.spec.renewTime) < 20_000, `lease renewed at ${lease.spec.renewTime}`);
  assert.equal((await core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
  assert.equal(clientCsrs(SA_USER).length, 1, 'the bootstrap credentials were never needed again');
});

test('an API server not reachable at bootstrap: nodelet says so and asks again, it does not exit (the node waits for its identity)', async () => {
  const dir = mkdtempSync(join(tmp, 'unreachable-'));
  const boot = join(dir, 'bootstrap.kubeconfig');
  // Nothing listens on port 1: every request is refused at once.
  writeFileSync(boot, readFileSync(join(tmp, 'bootstrap.kubeconfig'), 'utf8').replace(/server: .*/, 'server: https://127.0.0.1:1'));
  const waiting = await startAgent(uniqueNodeName('it-ident-wait'), ['--config', runtime.config, '--bootstrap-kubeconfig', boot, '--kubeconfig', join(dir, 'kubeconfig'), '--cert-dir', join(dir, 'pki')], { waitForStart: false });
  try {
    const alive = () => waiting.process.exitCode === null && waiting.process.signalCode === null;
    await eventually('the failed request said, a retry scheduled', 20_000, async () => (waiting.lines.some((l) => /client certificate: request failed; asking again in/.test(String(l.message))) ? true : undefined));
    // The retry itself comes and fails too: the process is still there for both.
    await eventually('a second failed request', 30_000, async () => {
      if (!alive()) throw new Error(`nodelet exited while it waited for its identity (${waiting.process.exitCode ?? waiting.process.signalCode})`);
      return waiting.lines.filter((l) => /request failed; asking again/.test(String(l.message))).length >= 2 ? true : undefined;
    });
    assert.ok(alive(), 'still waiting');
  } finally {
    await waiting.stop();
  }
});
