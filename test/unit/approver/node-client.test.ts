// The approver of the DaemonSet's bootstrap CSRs: the request read as Go's x509 reads it (subject,
// every kind of subjectAltName, the signature), and the decision for each kind of CSR a node, a
// compromised node or a stolen token may send; then the loop on a fake clock against an in-memory
// API (approval written once, a refusal said in the CSR, a failure tried again).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeClientApprover, type ApproverApi } from '../../../src/approver/controller.js';
import { CsrParseError, readCertificateRequest } from '../../../src/approver/csr-request.js';
import { decideNodeClientCsr, NODE_NAME_EXTRA, nodeletPolicy, type ApproverCsr } from '../../../src/approver/node-client.js';
import { CLIENT_KUBELET_SIGNER } from '../../../src/kube/certificate-manager.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { certificateRequest, newKey } from '../../../src/server/x509.js';
import { FakeClock } from '../../../src/util/clock.js';

const policy = nodeletPolicy('kube-system/nodelet', '-nodelet');
const SA = 'system:serviceaccount:kube-system:nodelet';
const nodeCsr = (cn: string, sans: string[] = [], organization = 'system:nodes') => certificateRequest(newKey(), { organization, commonName: cn }, sans);

function csr(pem: string, over: { username?: string; host?: string[] | undefined; usages?: string[]; signerName?: string; name?: string } = {}): ApproverCsr {
  const extra = 'host' in over ? (over.host ? { [NODE_NAME_EXTRA]: over.host } : undefined) : { [NODE_NAME_EXTRA]: ['host-a'] };
  return {
    metadata: { name: over.name ?? 'node-csr-x', resourceVersion: '1' },
    spec: { request: Buffer.from(pem).toString('base64'), signerName: over.signerName ?? CLIENT_KUBELET_SIGNER, usages: over.usages ?? ['digital signature', 'client auth'], username: over.username ?? SA, extra },
  };
}
const decide = (c: ApproverCsr, registered: string[] = []) => {
  let req;
  try {
    req = readCertificateRequest(Buffer.from(c.spec!.request!, 'base64').toString('latin1'));
  } catch (err) {
    req = err as Error;
  }
  return decideNodeClientCsr(c, req, policy, (n) => registered.includes(n));
};

test('a request is read as Go reads it: subject, subjectAltNames of each kind, the signature', () => {
  const r = readCertificateRequest(certificateRequest(newKey(), { organization: 'system:nodes', commonName: 'system:node:a' }, ['a.example', '10.0.0.1', 'fd00::1']));
  assert.deepEqual(r.organizations, ['system:nodes']);
  assert.deepEqual(r.commonNames, ['system:node:a']);
  assert.deepEqual(r.dnsNames, ['a.example']);
  assert.deepEqual(r.ipAddresses, ['10.0.0.1', 'fd00:0:0:0:0:0:0:1']);
  assert.equal(r.signatureValid, true);
  // One byte of the signed part changed: the signature no longer holds.
  const pem = certificateRequest(newKey(), { organization: 'system:nodes', commonName: 'system:node:a' }, []);
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const at = der.indexOf(Buffer.from('system:node:a'));
  der[at + 12] = 'b'.charCodeAt(0);
  const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
  const t = readCertificateRequest(tampered);
  assert.deepEqual(t.commonNames, ['system:node:b']);
  assert.equal(t.signatureValid, false);
});

test('an RSA request made by openssl, with e-mail and URI names, is read too', () => {
  const dir = mkdtempSync(join(tmpdir(), 'csr-'));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyFile = join(dir, 'k.pem');
  spawnSync('sh', ['-c', `cat > ${keyFile}`], { input: privateKey.export({ type: 'pkcs8', format: 'pem' }) });
  const r = spawnSync('openssl', ['req', '-new', '-key', keyFile, '-subj', '/O=system:nodes/O=other/CN=system:node:a', '-addext', 'subjectAltName=email:x@y.z,URI:spiffe://a/b', '-out', join(dir, 'r.pem')], { encoding: 'utf8' });
  // openssl is one of the packages make test installs (hack/install-deps.sh).
  assert.equal(r.status, 0, `openssl: ${r.stderr}`);
  const req = readCertificateRequest(readFileSync(join(dir, 'r.pem'), 'utf8'));
  assert.deepEqual(req.organizations, ['system:nodes', 'other']);
  assert.deepEqual(req.emailAddresses, ['x@y.z']);
  assert.deepEqual(req.uris, ['spiffe://a/b']);
  assert.equal(req.signatureValid, true);
});

test('what is not a request is a CsrParseError, never a crash', () => {
  for (const bad of ['', 'hello', '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----', `-----BEGIN CERTIFICATE REQUEST-----\n${Buffer.from([0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).toString('base64')}\n-----END CERTIFICATE REQUEST-----`]) {
    assert.throws(() => readCertificateRequest(bad), CsrParseError, JSON.stringify(bad));
  }
});

test('a nodelet pod asking for its own node, not registered yet: approved', () => {
  const d = decide(csr(nodeCsr('system:node:host-a-nodelet')));
  assert.equal(d.action, 'approve');
  assert.match((d as { message: string }).message, /node host-a-nodelet/);
  // With an RSA key's usages too.
  assert.equal(decide(csr(nodeCsr('system:node:host-a-nodelet'), { usages: ['digital signature', 'key encipherment', 'client auth'] })).action, 'approve');
});

test('a token of node host-a asking for another node: denied, saying so', () => {
  for (const cn of ['system:node:host-b-nodelet', 'system:node:host-a', 'system:node:host-a-nodelet2']) {
    const d = decide(csr(nodeCsr(cn)));
    assert.deepEqual(d.action === 'deny' && d.reason, 'NotOwnNode', cn);
    assert.match((d as { message: string }).message, /with the token of a pod on node host-a: a nodelet there may ask only for system:node:host-a-nodelet/);
  }
});

test('a token bound to no node (kubectl create token): denied', () => {
  for (const host of [undefined, [], ['a', 'b'], ['']]) {
    const d = decide(csr(nodeCsr('system:node:host-a-nodelet'), { host }));
    assert.equal(d.action === 'deny' && d.reason, 'NotBoundToNode', JSON.stringify(host));
  }
});

test('what is not a node client certificate: denied with what is wrong', () => {
  const cases: Array<[ApproverCsr, RegExp]> = [
    [csr(nodeCsr('system:node:host-a-nodelet', [], 'system:masters')), /organization is not exactly "system:nodes"/],
    [csr(nodeCsr('system:node:host-a-nodelet', ['evil.example'])), /names no subjectAltName/],
    [csr(nodeCsr('system:node:host-a-nodelet', ['127.0.0.1'])), /names no subjectAltName/],
    [csr(nodeCsr('admin')), /common name is not system:node:/],
    [csr(nodeCsr('system:node:host-a-nodelet'), { usages: ['digital signature', 'client auth', 'server auth'] }), /usages are not/],
    [csr(nodeCsr('system:node:host-a-nodelet'), { usages: ['client auth'] }), /usages are not/],
    [{ ...csr(''), spec: { ...csr('').spec, request: Buffer.from('junk').toString('base64') } }, /not a certificate request/],
  ];
  for (const [c, why] of cases) {
    const d = decide(c);
    assert.equal(d.action, 'deny');
    assert.match((d as { message: string }).message, why);
  }
});

test('a node registered already: left for a person (an expired certificate is re-bootstrapped by hand)', () => {
  const d = decide(csr(nodeCsr('system:node:host-a-nodelet'), { name: 'node-csr-abc' }), ['host-a-nodelet']);
  assert.equal(d.action, 'leave');
  assert.match((d as { message: string }).message, /registered already.*kubectl certificate approve node-csr-abc$/);
});

test('not ours: another requester (a node renewing itself, a kubeadm token), another signer, or decided already', () => {
  const pem = nodeCsr('system:node:host-a-nodelet');
  assert.equal(decide(csr(pem, { username: 'system:node:host-a-nodelet' })).action, 'ignore');
  assert.equal(decide(csr(pem, { username: 'system:bootstrap:abcdef' })).action, 'ignore');
  assert.equal(decide(csr(pem, { signerName: 'kubernetes.io/kubelet-serving' })).action, 'ignore');
  const done = csr(pem);
  done.status = { conditions: [{ type: 'Denied', status: 'True' }] };
  assert.equal(decide(done).action, 'ignore');
});

test('a bad --service-account is refused', () => {
  assert.throws(() => nodeletPolicy('nodelet', '-nodelet'), /not NAMESPACE\/NAME/);
  assert.throws(() => nodeletPolicy('a/b/c', '-nodelet'), /not NAMESPACE\/NAME/);
});

class MemoryApi implements ApproverApi {
  csrs = new Map<string, ApproverCsr>();
  nodes = new Set<string>();
  approvals: ApproverCsr[] = [];
  failNext = 0;
  events?: (type: string, obj: unknown) => void;
  async listCsrs() {
    return { items: [...this.csrs.values()], metadata: { resourceVersion: '1' } };
  }
  async getCsr(name: string) {
    return this.csrs.get(name);
  }
  async updateApproval(c: ApproverCsr) {
    if (this.failNext > 0) {
      this.failNext--;
      throw Object.assign(new Error('connection refused'), { code: 503 });
    }
    this.approvals.push(c);
    this.csrs.set(c.metadata!.name!, c);
  }
  async nodeExists(name: string) {
    return this.nodes.has(name);
  }
  stream = {
    watch: (_path: string, _q: Record<string, unknown>, onEvent: (type: string, obj: unknown) => void) => {
      this.events = onEvent;
      return { done: new Promise<void>(() => undefined), abort: () => undefined };
    },
  };
}

const settle = async () => {
  for (let i = 0; i < 40; i++) await new Promise((r) => setImmediate(r));
};

test('the loop: listed and watched CSRs decided once, a refusal written as Denied, a failed write tried again', async () => {
  const api = new MemoryApi();
  const clock = new FakeClock();
  api.csrs.set('own', csr(nodeCsr('system:node:host-a-nodelet'), { name: 'own' }));
  const approver = new NodeClientApprover({ api, policy, clock, logger: silentLogger() });
  approver.start();
  await settle();
  assert.deepEqual(api.approvals.map((c) => [c.metadata!.name, c.status!.conditions!.at(-1)!.type, c.status!.conditions!.at(-1)!.reason]), [['own', 'Approved', 'AutoApproved']]);
  // Its MODIFIED event (now approved) changes nothing.
  api.events!('MODIFIED', api.csrs.get('own'));
  await settle();
  assert.equal(api.approvals.length, 1);
  // Another node's name, and the API failing once: denied after the retry.
  api.failNext = 1;
  const other = csr(nodeCsr('system:node:host-b-nodelet'), { name: 'other' });
  api.csrs.set('other', other);
  api.events!('ADDED', other);
  await settle();
  assert.equal(api.approvals.length, 1, 'the write failed');
  clock.step(5_000);
  await settle();
  assert.deepEqual(api.approvals.map((c) => [c.metadata!.name, c.status!.conditions!.at(-1)!.type, c.status!.conditions!.at(-1)!.reason]).at(-1), ['other', 'Denied', 'NotOwnNode']);
  // A registered node's CSR is left alone.
  api.nodes.add('host-c-nodelet');
  api.events!('ADDED', csr(nodeCsr('system:node:host-c-nodelet'), { name: 'again', host: ['host-c'] }));
  await settle();
  assert.equal(api.approvals.length, 2);
  approver.stop();
});
