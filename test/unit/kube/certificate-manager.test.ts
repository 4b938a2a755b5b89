// The node's client certificate as the kubelet's certificate manager handles it, on a fake clock
// against an in-memory CSR API: the bootstrap CSR's body and name, the files kept in certDir, the
// renewal at 70-90% of the life made with the node's own identity, refusals and back-off, a
// restart that finds its pair (or its pending CSR).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  bootstrapCsrName,
  CertificateManager,
  CLIENT_KUBELET_SIGNER,
  CLIENT_USAGES,
  csrBody,
  renewAt,
  waitForCertificate,
  type CertificateManagerOptions,
} from '../../../src/kube/certificate-manager.js';
import { CertificateStore, type StoredPair } from '../../../src/kube/certificate-store.js';
import { silentLogger, type Logger } from '../../../src/observability/logger.js';
import { certificateRequest, newKey, selfSignedCertificate, signCertificate } from '../../../src/server/x509.js';
import { FakeClock } from '../../../src/util/clock.js';
import { FakeCsrServer } from './fake-csr-api.js';

const settle = async () => {
  for (let i = 0; i < 40; i++) await new Promise((r) => setImmediate(r));
};
const SA = 'system:serviceaccount:kube-system:nodelet';
const NODE = 'system:node:n1';
const template = { signerName: CLIENT_KUBELET_SIGNER, usages: CLIENT_USAGES, subject: { organization: 'system:nodes', commonName: NODE } };

/** A logger that keeps its lines (level, message and fields). */
function recordingLogger(): { logger: Logger; lines: Array<{ level: string; message: string; [k: string]: unknown }> } {
  const lines: Array<{ level: string; message: string; [k: string]: unknown }> = [];
  const logger = silentLogger();
  for (const level of ['info', 'warn', 'error', 'debug'] as const) {
    logger[level] = ((message: string, meta?: object) => (lines.push({ level, message, ...(meta ?? {}) }), logger)) as never;
  }
  return { logger, lines };
}

function setup(opts: Partial<CertificateManagerOptions> & { dir?: string; watch?: boolean } = {}) {
  const clock = (opts.clock as FakeClock | undefined) ?? new FakeClock();
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'client-pki-'));
  const server = new FakeCsrServer(clock);
  const node = server.as(NODE, { watch: opts.watch });
  const boot = server.as(SA, { watch: opts.watch });
  const taken: Array<{ pair: StoredPair; rotated: boolean }> = [];
  const { logger, lines } = recordingLogger();
  const store = new CertificateStore(dir, 'nodelet-client');
  const make = () =>
    new CertificateManager({
      what: 'client certificate',
      template,
      store,
      api: node,
      bootstrap: { api: () => boot, keyFile: join(dir, 'nodelet-client.key.tmp') },
      rotate: true,
      onCertificate: (pair, rotated) => taken.push({ pair, rotated }),
      approvalHint: (csr, bootstrap) => `hint for ${csr.metadata?.name} (${bootstrap ? 'nodeclient' : 'selfnodeclient'})`,
      clock,
      logger,
      random: () => 0,
      ...opts,
    });
  return { clock, dir, server, node, boot, taken, lines, store, make };
}

/** Starts a manager and lets its first request run (what the in-memory API does with it decides). */
async function started(m: CertificateManager, clock: FakeClock): Promise<CertificateManager> {
  m.start();
  clock.step(0);
  await settle();
  return m;
}

test('the bootstrap CSR is the kubelet\'s: ECDSA P-256, O=system:nodes, CN=system:node:<node>, no names, kube-apiserver-client-kubelet, digital signature + client auth, named node-csr-<digest>', async () => {
  const s = setup();
  const m = await started(s.make(), s.clock);
  assert.equal(await m.first, true);
  m.stop();
  const [csr] = s.server.list();
  assert.ok(csr);
  assert.equal(csr.spec.username, SA, 'asked with the bootstrap credentials');
  assert.equal(csr.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
  assert.deepEqual(csr.spec.usages, ['digital signature', 'client auth']);
  const text = spawnSync('openssl', ['req', '-noout', '-verify', '-text'], { input: Buffer.from(csr.spec.request, 'base64'), encoding: 'utf8' });
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /Subject: O ?= ?system:nodes, CN ?= ?system:node:n1/);
  assert.match(text.stdout, /prime256v1|P-256/);
  assert.match(text.stdout, /Attributes:\s*\n\s*\(none\)/);
  assert.doesNotMatch(text.stdout, /Alternative Name/, 'the approver refuses a client CSR with any subjectAltName');
  // The name is a digest of what is asked: the same key gives the same name, another key another.
  assert.equal(csr.metadata.name, bootstrapCsrName(s.server.requestKey(csr.metadata.name), template.subject, CLIENT_USAGES));
  assert.match(csr.metadata.name, /^node-csr-[A-Za-z0-9_-]{43}$/);
  assert.notEqual(csr.metadata.name, bootstrapCsrName(newKey().publicKey, template.subject, CLIENT_USAGES));
  assert.equal(s.boot.closed, 1, 'the bootstrap connection is closed after its request');
});

test('a renewal CSR is made by the node itself, named by the server (generateName csr-)', () => {
  const pem = certificateRequest(newKey(), template.subject, []);
  assert.deepEqual(csrBody(pem, template), {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { generateName: 'csr-' },
    spec: { request: Buffer.from(pem).toString('base64'), signerName: CLIENT_KUBELET_SIGNER, usages: ['digital signature', 'client auth'] },
  });
});

test('files: nodelet-client-<time>.pem (0600, certificate then key) and nodelet-client-current.pem linking to it; the waiting key goes', async () => {
  const s = setup();
  const m = await started(s.make(), s.clock);
  m.stop();
  const files = readdirSync(s.dir).sort();
  assert.deepEqual(files, ['nodelet-client-2026-01-01-00-00-00.pem', 'nodelet-client-current.pem']);
  const current = join(s.dir, 'nodelet-client-current.pem');
  assert.ok(lstatSync(current).isSymbolicLink());
  assert.equal(readlinkSync(current), join(s.dir, 'nodelet-client-2026-01-01-00-00-00.pem'));
  assert.equal(statSync(current).mode & 0o777, 0o600);
  assert.match(readFileSync(current, 'utf8'), /^-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----\n-----BEGIN EC PRIVATE KEY-----[\s\S]+-----END EC PRIVATE KEY-----\n$/);
  assert.ok(!existsSync(join(s.dir, 'nodelet-client.key.tmp')));
  // A second pair: a file of its own, the link moved in one rename.
  s.clock.step(3600_000);
  const key = newKey();
  const cert = signCertificate({ subject: template.subject, publicKey: key.publicKey, issuer: { key: s.server.ca.privateKey, subject: { commonName: 'fake-ca' } }, sans: [], notBefore: new Date(s.clock.now()), notAfter: new Date(s.clock.now() + 3600_000), usage: 'client' });
  s.store.update({ cert: Buffer.from(cert), key: Buffer.from(key.privateKeyPem) }, s.clock.now());
  assert.deepEqual(readdirSync(s.dir).sort(), ['nodelet-client-2026-01-01-00-00-00.pem', 'nodelet-client-2026-01-01-01-00-00.pem', 'nodelet-client-current.pem']);
  assert.equal(s.store.current()?.cert.toString(), cert);
  // A key that is not the certificate's is never stored.
  assert.throws(() => s.store.update({ cert: Buffer.from(cert), key: Buffer.from(newKey().privateKeyPem) }, s.clock.now()), /not the certificate's/);
});

test('an older nodelet\'s plain current file is replaced by the link', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pki-'));
  const key = newKey();
  const cert = selfSignedCertificate(key, { commonName: 'x' }, ['x'], new Date(), 1);
  writeFileSync(join(dir, 'nodelet-server-current.pem'), cert + key.privateKeyPem, { mode: 0o600 });
  const store = new CertificateStore(dir, 'nodelet-server');
  assert.equal(store.current()?.cert.toString(), cert, 'read as it is');
  store.update({ cert: Buffer.from(cert), key: Buffer.from(key.privateKeyPem) }, Date.UTC(2026, 0, 2));
  assert.ok(lstatSync(join(dir, 'nodelet-server-current.pem')).isSymbolicLink());
});

test('renewal: at a random point between 70% and 90% of the life, asked with the node identity; the new pair is taken at once', async () => {
  assert.equal(renewAt(0, 1000, 0), 700);
  assert.equal(renewAt(0, 1000, 1), 900);
  assert.equal(renewAt(0, 1000, 0.5), 800);
  for (const [random, fraction] of [
    [0, 0.7],
    [1, 0.9],
  ] as const) {
    const s = setup({ random: () => random });
    const m = await started(s.make(), s.clock);
    const first = m.certificate!;
    const life = first.notAfter - first.notBefore;
    const due = first.notBefore + life * fraction;
    s.clock.step(due - s.clock.now() - 1000);
    await settle();
    assert.equal(s.server.list().length, 1, `no renewal before ${fraction * 100}%`);
    s.clock.step(1000);
    await settle();
    const csrs = s.server.list();
    assert.equal(csrs.length, 2, `renewed at ${fraction * 100}% of its life`);
    assert.equal(csrs[1]!.spec.username, NODE, 'the renewal is asked by the node itself (selfnodeclient)');
    assert.match(csrs[1]!.metadata.name, /^csr-/);
    assert.deepEqual(
      s.taken.map((t) => t.rotated),
      [false, true],
    );
    assert.notEqual(m.certificate!.cert.toString(), first.cert.toString());
    assert.equal(s.store.current()!.cert.toString(), m.certificate!.cert.toString(), 'kept as the current pair');
    m.stop();
  }
});

test('a restart with a valid pair kept asks for nothing; once it has expired, the bootstrap credentials ask again', async () => {
  const s = setup();
  const m = await started(s.make(), s.clock);
  m.stop();
  const again = s.make();
  again.start();
  assert.equal(await again.first, true);
  again.stop();
  assert.equal(s.server.list().length, 1, 'no new CSR for a pair still valid');
  s.clock.step(101 * 3600_000);
  const later = await started(s.make(), s.clock);
  later.stop();
  assert.equal(s.server.list().length, 2);
  assert.equal(s.server.list()[1]!.spec.username, SA, 'an expired pair cannot ask: the bootstrap credentials do');
});

test('rotation fails until the pair expires: the bootstrap credentials take over', async () => {
  const s = setup();
  const m = await started(s.make(), s.clock);
  s.server.policy = 'none';
  // 70% of 100 h: the node asks, nothing approves; after 15 min it gives up and asks again, and so on.
  s.clock.step(70 * 3600_000);
  await settle();
  assert.equal(s.server.list().at(-1)!.spec.username, NODE);
  s.server.policy = 'sign';
  for (let i = 0; i < 10 && s.taken.length < 2; i++) {
    s.clock.step(15 * 60_000);
    await settle();
  }
  // Signed as soon as the next request came (still with the node identity: the pair was valid).
  assert.ok(s.taken.length >= 2);
  assert.equal(s.server.list().at(-1)!.spec.username, NODE);
  m.stop();
  // And once a pair has expired with nothing new, the bootstrap credentials ask.
  const t = setup({ dir: mkdtempSync(join(tmpdir(), 'client-pki-')) });
  const n = await started(t.make(), t.clock);
  t.server.policy = 'deny';
  t.clock.step(100 * 3600_000 + 1000);
  await settle();
  t.server.policy = 'sign';
  t.clock.step(10 * 60_000);
  await settle();
  n.stop();
  assert.equal(t.server.list().at(-1)!.spec.username, SA);
});

test('a denied CSR: an error naming the reason and message, asked again with back-off (2 s, 4 s, 8 s ...) and a new key', async () => {
  const s = setup({ random: () => 0 });
  s.server.policy = 'deny';
  const m = await started(s.make(), s.clock);
  const warn = s.lines.filter((l) => l.level === 'warn');
  assert.equal(warn[0]!.message, 'client certificate: request failed; asking again in 2s');
  assert.match(String(warn[0]!.error), /^certificate signing request node-csr-\S+ was denied \(reason NotThisNode\): the node name is not known$/);
  s.clock.step(2000);
  await settle();
  s.clock.step(4000);
  await settle();
  assert.deepEqual(
    s.lines.filter((l) => l.level === 'warn').map((l) => l.message),
    ['client certificate: request failed; asking again in 2s', 'client certificate: request failed; asking again in 4s', 'client certificate: request failed; asking again in 8s'],
  );
  const names = s.server.list().map((c) => c.metadata.name);
  assert.equal(new Set(names).size, 3, 'each try with a new key, so a new CSR');
  s.server.policy = 'sign';
  s.clock.step(8000);
  await settle();
  assert.equal(await m.first, true);
  m.stop();
});

test('waiting: clear lines after 30 s, then less and less often, saying what would approve it; the watch ends the wait as soon as it is issued', async () => {
  const s = setup({ watch: true });
  s.server.policy = 'none';
  const m = await started(s.make(), s.clock);
  const name = s.server.list()[0]!.metadata.name;
  const made = s.lines.find((l) => l.message.startsWith('client certificate: certificate signing request made'));
  assert.equal(made?.csr, name);
  assert.equal(made?.signer, CLIENT_KUBELET_SIGNER);
  for (let i = 0; i < 4; i++) {
    s.clock.step(30_000);
    await settle();
  }
  const waiting = s.lines.filter((l) => l.level === 'warn').map((l) => l.message);
  assert.deepEqual(waiting, [
    `client certificate: certificate signing request ${name} not approved after 30s: hint for ${name} (nodeclient)`,
    `client certificate: certificate signing request ${name} not approved after 1m30s: hint for ${name} (nodeclient)`,
  ]);
  // Approved and signed: the watch event ends the wait with no more time passing.
  s.server.approve(name);
  await settle();
  assert.equal(await m.first, true);
  assert.equal(s.taken.length, 1);
  m.stop();
});

test('a restart while a bootstrap CSR waits finds that CSR again (same key, same name) instead of making another', async () => {
  const s = setup();
  s.server.policy = 'none';
  const m = await started(s.make(), s.clock);
  m.stop();
  assert.ok(existsSync(join(s.dir, 'nodelet-client.key.tmp')), 'the key waits on disk');
  const again = await started(s.make(), s.clock);
  assert.equal(s.server.list().length, 1, 'the same CSR');
  assert.ok(s.lines.some((l) => l.message === 'client certificate: found the certificate signing request of an earlier start'));
  s.server.approve(s.server.list()[0]!.metadata.name);
  s.clock.step(2000);
  await settle();
  assert.equal(await again.first, true);
  again.stop();
});

test('waitForCertificate: approved but not issued says the signer is missing; a CSR replaced under the same name is refused', async () => {
  const clock = new FakeClock();
  const server = new FakeCsrServer(clock);
  server.policy = 'none';
  const api = server.as(SA);
  const created = await api.createCsr(csrBody(certificateRequest(newKey(), template.subject, []), template, 'x'));
  server.approve('x', false);
  const { logger, lines } = recordingLogger();
  const wait = waitForCertificate({ api, name: 'x', uid: created.metadata?.uid, timeoutMs: 60_000, pollMs: 1000, clock, logger, what: 'client certificate', hint: () => 'h', stopped: () => false });
  let err: Error | undefined;
  wait.catch((e: Error) => (err = e));
  for (let i = 0; i < 70; i++) {
    clock.step(1000);
    await settle();
  }
  assert.match(lines.find((l) => l.level === 'warn')!.message, /approved but not issued after 30s: is the signer kubernetes\.io\/kube-apiserver-client-kubelet running/);
  assert.match(String(err?.message), /was not issued within 1m0s/);
  server.csrs.get('x')!.metadata.uid = 'another';
  await assert.rejects(
    waitForCertificate({ api, name: 'x', uid: created.metadata?.uid, timeoutMs: 60_000, pollMs: 1000, clock, logger, what: 'c', hint: () => 'h', stopped: () => false }),
    /replaced by another of the same name/,
  );
});

test('a renewal months away never sets a timer beyond what setTimeout can hold (2^31 ms, about 24.8 days)', async () => {
  const clock = new FakeClock();
  const delays: number[] = [];
  const setTimer = clock.setTimer.bind(clock);
  clock.setTimer = (ms, fn) => (delays.push(ms), setTimer(ms, fn));
  const s = setup({ clock });
  s.server.lifetimeMs = 365 * 24 * 3600_000;
  const m = await started(s.make(), clock);
  assert.ok(Math.max(...delays) <= 2 ** 31 - 1, `longest timer ${Math.max(...delays)} ms`);
  clock.step(200 * 24 * 3600_000);
  await settle();
  assert.equal(s.server.list().length, 1, 'not renewed early');
  clock.step(56 * 24 * 3600_000);
  await settle();
  assert.equal(s.server.list().length, 2, 'renewed at 70% of a year (random 0)');
  m.stop();
});
