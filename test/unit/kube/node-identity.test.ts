// The node identity's pieces beside the certificate manager: the kubeconfig written after a
// bootstrap, and the REST client switched to a new client certificate without a restart (against
// a real TLS server that reports the certificate each call presented).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CertificateStore } from '../../../src/kube/certificate-store.js';
import { defaultConfig } from '../../../src/config/config.js';
import { nodeIdentity, writeNodeKubeconfig } from '../../../src/kube/node-identity.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeClock } from '../../../src/util/clock.js';
import { loadKubeconfig, RestClient } from '../../../src/kube/rest.js';
import { newKey, selfSignedCertificate } from '../../../src/server/x509.js';

const NODE = 'system:node:n1';

test('the kubeconfig written after a bootstrap points at the current pair and reads back', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-'));
  const path = join(dir, 'sub', 'kubeconfig');
  const key = newKey();
  const cert = selfSignedCertificate(key, { commonName: NODE }, [], new Date(), 1);
  const store = new CertificateStore(dir, 'nodelet-client');
  store.update({ cert: Buffer.from(cert), key: Buffer.from(key.privateKeyPem) }, Date.now());
  writeNodeKubeconfig(path, { server: 'https://10.96.0.1:443', ca: Buffer.from('CA') }, store.currentPath);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  const conn = loadKubeconfig(path);
  assert.equal(conn.server, 'https://10.96.0.1:443');
  assert.equal(conn.ca?.toString(), 'CA');
  assert.equal(conn.token, undefined);
  assert.equal(new X509Certificate(conn.cert!).subject, `CN=${NODE}`);
  assert.match(conn.key!.toString(), /EC PRIVATE KEY/);
});

test('the REST client switches certificates in place: new requests and reopened watches present the new one', async () => {
  const issue = (cn: string) => {
    const key = newKey();
    return { cert: Buffer.from(selfSignedCertificate(key, { organization: 'system:nodes', commonName: cn }, [], new Date(), 1)), key: Buffer.from(key.privateKeyPem) };
  };
  const serverKey = newKey();
  const serverCert = selfSignedCertificate(serverKey, { commonName: '127.0.0.1' }, ['127.0.0.1'], new Date(), 1);
  const watchers: Array<() => void> = [];
  let release: (() => void) | undefined;
  // The server asks every caller for a certificate and answers with the name it presented.
  const server = https.createServer({ key: serverKey.privateKeyPem, cert: serverCert, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const cn = ((req.socket as TLSSocket).getPeerCertificate().subject as { CN?: string } | undefined)?.CN ?? '';
    res.writeHead(200, { 'Content-Type': 'application/json' });
    if (req.url?.includes('watch=true')) {
      res.write(`${JSON.stringify({ type: 'ADDED', object: { cn } })}\n`);
      watchers.push(() => res.end());
    } else if (req.url === '/slow') {
      release = () => res.end(JSON.stringify({ cn }));
    } else {
      res.end(JSON.stringify({ cn }));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const first = issue('system:node:old');
  const rest = new RestClient({ server: `https://127.0.0.1:${port}`, ca: Buffer.from(serverCert), cert: first.cert, key: first.key });
  try {
    assert.deepEqual(await rest.request('GET', '/who'), { cn: 'system:node:old' });
    const seen: string[] = [];
    const w = rest.watch('/things', {}, (_t, o) => seen.push((o as { cn: string }).cn));
    while (seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    // A request in flight on the old connections when the switch comes finishes there.
    const slow = rest.request<{ cn: string }>('GET', '/slow');
    while (!release) await new Promise((r) => setTimeout(r, 5));
    const next = issue('system:node:new');
    rest.setClientCertificate(next.cert, next.key);
    await w.done; // the watch on the old certificate ended: its owner opens it again...
    const again: string[] = [];
    const w2 = rest.watch('/things', {}, (_t, o) => again.push((o as { cn: string }).cn));
    while (again.length === 0) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(again, ['system:node:new'], '...with the new one');
    assert.deepEqual(await rest.request('GET', '/who'), { cn: 'system:node:new' });
    release();
    assert.deepEqual(await slow, { cn: 'system:node:old' });
    w2.abort();
  } finally {
    for (const end of watchers) end();
    rest.close();
    server.close();
  }
});

test('bootstrapping with the in-cluster service account outside a cluster stops at once, saying why; a bad bootstrap kubeconfig too', () => {
  const deps = { logger: silentLogger(), clock: new FakeClock(), env: {} };
  assert.throws(() => nodeIdentity({ ...defaultConfig(), nodeName: 'n1', bootstrapInCluster: true }, deps), /not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set/);
  assert.throws(() => nodeIdentity({ ...defaultConfig(), nodeName: 'n1', bootstrapKubeconfig: '/nonexistent/bootstrap.kubeconfig' }, deps), /ENOENT/);
  // Without any credentials nodelet is standalone, as before.
  assert.equal(nodeIdentity({ ...defaultConfig(), nodeName: 'n1' }, deps).client, undefined);
});
