// The serving certificate's sources without files: a CSR to the kubelet-serving signer (an
// in-memory API that signs after a while, or refuses), kept on disk and renewed at 70-90% of its
// life; and a self-signed one made once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CsrCertificateManager, renewAt, selfSigned, type CsrApi, type ServingCertificate } from '../../../src/server/certificates.js';
import { newKey, selfSignedCertificate } from '../../../src/server/x509.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { realClock } from '../../../src/util/clock.js';

test('renewal falls between 70% and 90% of the certificate\'s life', () => {
  assert.equal(renewAt(0, 1000, 0), 700);
  assert.equal(renewAt(0, 1000, 1), 900);
});

class Signer implements CsrApi {
  requests: Array<{ spec: { request: string; signerName: string; usages: string[] } }> = [];
  polls = 0;
  constructor(private readonly verdict: 'sign' | 'deny') {}
  async createCsr(body: object) {
    this.requests.push(body as never);
    return { metadata: { name: `csr-${this.requests.length}` } };
  }
  async getCsr() {
    if (++this.polls < 3) return { status: {} };
    if (this.verdict === 'deny') return { status: { conditions: [{ type: 'Denied', message: 'not this node' }] } };
    return { status: { certificate: Buffer.from(selfSignedCertificate(newKey(), { commonName: 'system:node:n1' }, ['vm'], new Date(), 1)).toString('base64') } };
  }
}

test('a CSR for kubernetes.io/kubelet-serving: the issued certificate is used, kept with its key, and found again by the next start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'certs-'));
  const api = new Signer('sign');
  const got: ServingCertificate[] = [];
  const m = new CsrCertificateManager({ api, nodeName: 'n1', sans: () => ['vm', '127.0.0.1'], certDir: dir, clock: realClock, logger: silentLogger(), onCertificate: (c) => got.push(c), pollMs: 5 });
  m.start();
  while (got.length === 0) await new Promise((r) => setTimeout(r, 10));
  m.stop();
  const req = api.requests[0]!.spec;
  assert.equal(req.signerName, 'kubernetes.io/kubelet-serving');
  assert.deepEqual(req.usages, ['digital signature', 'server auth']);
  const text = spawnSync('openssl', ['req', '-noout', '-text'], { input: Buffer.from(req.request, 'base64'), encoding: 'utf8' }).stdout;
  assert.match(text, /O ?= ?system:nodes, CN ?= ?system:node:n1/);
  assert.match(text, /DNS:vm, IP Address:127.0.0.1/);
  const kept = readFileSync(join(dir, 'nodelet-server-current.pem'), 'utf8');
  assert.match(kept, /BEGIN CERTIFICATE[\s\S]*BEGIN EC PRIVATE KEY/);
  assert.equal(statSync(join(dir, 'nodelet-server-current.pem')).mode & 0o777, 0o600);
  const again: ServingCertificate[] = [];
  const m2 = new CsrCertificateManager({ api, nodeName: 'n1', sans: () => ['vm'], certDir: dir, clock: realClock, logger: silentLogger(), onCertificate: (c) => again.push(c) });
  m2.start();
  m2.stop();
  assert.equal(again.length, 1, 'a kept, valid certificate is used at once');
  assert.equal(api.requests.length, 1, 'and no new CSR is made for it');
});

test('a denied CSR is logged and asked again later; nothing is served meanwhile', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'certs-'));
  const warnings: string[] = [];
  const logger = silentLogger();
  logger.warn = ((msg: string, meta: { error: string }) => (warnings.push(`${msg}: ${meta.error}`), logger)) as never;
  const m = new CsrCertificateManager({ api: new Signer('deny'), nodeName: 'n1', sans: () => ['vm'], certDir: dir, clock: realClock, logger, onCertificate: () => assert.fail('no certificate'), pollMs: 5 });
  m.start();
  while (warnings.length === 0) await new Promise((r) => setTimeout(r, 10));
  m.stop();
  assert.match(warnings[0]!, /serving certificate request failed; asking again in 30 s: certificate signing request csr-1 was denied: not this node/);
  assert.equal(m.certificate, undefined);
});

test('self-signed: made once for the node\'s names, the same one afterwards', () => {
  const dir = mkdtempSync(join(tmpdir(), 'certs-'));
  const a = selfSigned(dir, 'vm', ['vm', '10.0.0.1'], Date.now());
  const b = selfSigned(dir, 'vm', ['vm', '10.0.0.1'], Date.now());
  assert.equal(a.cert.toString(), b.cert.toString());
  assert.equal(new X509Certificate(a.cert).subjectAltName, 'DNS:vm, IP Address:10.0.0.1');
  assert.equal(statSync(join(dir, 'nodelet.key')).mode & 0o777, 0o600);
});
