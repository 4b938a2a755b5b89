// The CSR and the self-signed certificate as another implementation reads them: openssl verifies
// the request's signature and shows its subject and names; Node's X509Certificate and a TLS
// handshake accept the certificate for those names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { certificateRequest, newKey, oid, requestPublicKey, samePublicKey, selfSignedCertificate, signCertificate } from '../../../src/server/x509.js';

test('object identifiers in DER', () => {
  assert.equal(oid('2.5.29.17').toString('hex'), '0603551d11');
  assert.equal(oid('1.2.840.10045.4.3.2').toString('hex'), '06082a8648ce3d040302');
});

test('a CSR for the kubelet-serving signer: openssl verifies it and reads its subject and names', () => {
  const key = newKey();
  const csr = certificateRequest(key, { organization: 'system:nodes', commonName: 'system:node:n1' }, ['vm', 'localhost', '127.0.0.1', '192.0.2.2', 'fd00::2']);
  const r = spawnSync('openssl', ['req', '-noout', '-verify', '-text'], { input: csr, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(`${r.stdout}${r.stderr}`, /verify OK/i);
  assert.match(r.stdout, /Subject: O ?= ?system:nodes, CN ?= ?system:node:n1/);
  assert.match(r.stdout, /DNS:vm, DNS:localhost, IP Address:127.0.0.1, IP Address:192.0.2.2, IP Address:FD00:0:0:0:0:0:0:2/);
});

test('a client CSR names no address (no extensionRequest at all); its public key reads back', () => {
  const key = newKey();
  const csr = certificateRequest(key, { organization: 'system:nodes', commonName: 'system:node:n1' }, []);
  const r = spawnSync('openssl', ['req', '-noout', '-verify', '-text'], { input: csr, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /Attributes:\s*\n\s*(\(none\)|a0:00)/);
  assert.doesNotMatch(r.stdout, /Alternative Name/);
  assert.ok(samePublicKey(requestPublicKey(csr), key.publicKey));
  assert.ok(samePublicKey(requestPublicKey(csr), key.privateKey), 'a private key compares by its public half');
  assert.ok(!samePublicKey(requestPublicKey(csr), newKey().publicKey));
  assert.throws(() => requestPublicKey('-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n'));
});

test('a client certificate signed by a CA key: openssl verifies the chain and reads clientAuth', () => {
  const ca = newKey();
  const caPem = selfSignedCertificate(ca, { commonName: 'test-ca' }, [], new Date(), 1);
  const key = newKey();
  const now = Date.now();
  const pem = signCertificate({ subject: { organization: 'system:nodes', commonName: 'system:node:n1' }, publicKey: key.publicKey, issuer: { key: ca.privateKey, subject: { commonName: 'test-ca' } }, sans: [], notBefore: new Date(now), notAfter: new Date(now + 3600_000), usage: 'client' });
  const cert = new X509Certificate(pem);
  assert.ok(cert.verify(ca.publicKey));
  assert.ok(cert.checkPrivateKey(key.privateKey));
  assert.equal(cert.subject, 'O=system:nodes\nCN=system:node:n1');
  assert.equal(cert.subjectAltName, undefined);
  const text = spawnSync('openssl', ['x509', '-noout', '-text'], { input: pem, encoding: 'utf8' }).stdout;
  assert.match(text, /TLS Web Client Authentication/);
  assert.ok(Math.abs(Date.parse(cert.validTo) - (now + 3600_000)) < 2000);
  void caPem;
});

test('a self-signed serving certificate: valid for its names, and a TLS handshake with it works', async () => {
  const key = newKey();
  const now = new Date();
  const pem = selfSignedCertificate(key, { commonName: 'vm@1' }, ['vm', '127.0.0.1'], now, 365);
  const cert = new X509Certificate(pem);
  assert.ok(cert.verify(key.publicKey), 'signed by its own key');
  assert.equal(cert.subjectAltName, 'DNS:vm, IP Address:127.0.0.1');
  assert.ok(Math.abs(Date.parse(cert.validTo) - (now.getTime() + 365 * 86_400_000)) < 2000);
  assert.equal(cert.checkHost('vm'), 'vm');
  const server = tls.createServer({ key: key.privateKeyPem, cert: pem }, (s) => s.end('hi'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const got = await new Promise<string>((resolve, reject) => {
    const c = tls.connect({ host: '127.0.0.1', port, ca: pem, servername: 'vm' }, () => c.on('data', (d) => resolve(d.toString())));
    c.on('error', reject);
  });
  server.close();
  assert.equal(got, 'hi');
});

test('serial numbers in the shortest DER form: a serial that starts with zero bytes still parses (OpenSSL refuses padding)', () => {
  const key = newKey();
  // Enough certificates that some serials start with 0x00 (1 in 128 of them) or more.
  for (let i = 0; i < 600; i++) {
    const pem = selfSignedCertificate(key, { commonName: 'x' }, [], new Date(), 1);
    assert.doesNotThrow(() => new X509Certificate(pem), `certificate ${i}`);
  }
});
