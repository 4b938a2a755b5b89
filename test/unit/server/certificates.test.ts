// The serving certificate's sources without files: CSRs to the kubelet-serving signer through the
// certificate manager the client certificate uses too (an in-memory API that signs, or refuses),
// kept in certDir and found again by the next start; and a self-signed one made once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { lstatSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSigned, servingCertificateManager, type ServingCertificate } from '../../../src/server/certificates.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeClock } from '../../../src/util/clock.js';
import { FakeCsrServer } from '../kube/fake-csr-api.js';

const settle = async () => {
  for (let i = 0; i < 40; i++) await new Promise((r) => setImmediate(r));
};

test('a CSR for kubernetes.io/kubelet-serving, asked by the node: the issued certificate is used, kept with its key, and found again by the next start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'certs-'));
  const clock = new FakeClock();
  const server = new FakeCsrServer(clock);
  const api = server.as('system:node:n1');
  const got: ServingCertificate[] = [];
  const m = servingCertificateManager({ api, nodeName: 'n1', sans: () => ['vm', '127.0.0.1'], certDir: dir, clock, logger: silentLogger(), onCertificate: (c) => got.push(c) });
  m.start();
  clock.step(0);
  await settle();
  m.stop();
  assert.equal(got.length, 1);
  const [csr] = server.list();
  assert.equal(csr!.spec.signerName, 'kubernetes.io/kubelet-serving');
  assert.equal(csr!.spec.username, 'system:node:n1');
  assert.deepEqual(csr!.spec.usages, ['digital signature', 'server auth']);
  const text = spawnSync('openssl', ['req', '-noout', '-text'], { input: Buffer.from(csr!.spec.request, 'base64'), encoding: 'utf8' }).stdout;
  assert.match(text, /O ?= ?system:nodes, CN ?= ?system:node:n1/);
  assert.match(text, /DNS:vm, IP Address:127.0.0.1/);
  const current = join(dir, 'nodelet-server-current.pem');
  assert.ok(lstatSync(current).isSymbolicLink());
  assert.match(readFileSync(current, 'utf8'), /BEGIN CERTIFICATE[\s\S]*BEGIN EC PRIVATE KEY/);
  assert.equal(statSync(current).mode & 0o777, 0o600);
  const again: ServingCertificate[] = [];
  const m2 = servingCertificateManager({ api, nodeName: 'n1', sans: () => ['vm'], certDir: dir, clock, logger: silentLogger(), onCertificate: (c) => again.push(c) });
  m2.start();
  m2.stop();
  assert.equal(again.length, 1, 'a kept, valid certificate is used at once');
  assert.equal(server.list().length, 1, 'and no new CSR is made for it');
});

test('a denied CSR is logged with its reason and asked again with back-off; nothing is served meanwhile', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'certs-'));
  const clock = new FakeClock();
  const server = new FakeCsrServer(clock);
  server.policy = 'deny';
  const warnings: string[] = [];
  const logger = silentLogger();
  logger.warn = ((msg: string, meta: { error: string }) => (warnings.push(`${msg}: ${meta.error}`), logger)) as never;
  const m = servingCertificateManager({ api: server.as('system:node:n1'), nodeName: 'n1', sans: () => ['vm'], certDir: dir, clock, logger, onCertificate: () => assert.fail('no certificate'), random: () => 0 });
  m.start();
  clock.step(0);
  await settle();
  clock.step(2000);
  await settle();
  m.stop();
  assert.deepEqual(warnings, [
    'serving certificate: request failed; asking again in 2s: certificate signing request csr-1 was denied (reason NotThisNode): the node name is not known',
    'serving certificate: request failed; asking again in 4s: certificate signing request csr-2 was denied (reason NotThisNode): the node name is not known',
  ]);
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
