// The process runtime pulling from real registries over the distribution API: Debian's
// docker-registry 2.8 started here on 127.0.0.1 with TLS from a CA of the test's own, one with
// htpasswd auth and one with token auth (the token server is the test's). Images are pushed by the
// test's pusher, then pulled by the runtime's image store and checked file by file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../../src/cri/client.js';
import { criErrorText } from '../../src/cri/errors.js';
import type { AuthConfig } from '../../src/cri/types.js';
import { FailedPreconditionError, NotFoundError } from '../../src/procruntime/errors.js';
import { ImageStore, type ImageStoreOptions } from '../../src/procruntime/image-store.js';
import { hostPlatform } from '../../src/procruntime/registry/manifest.js';
import { ProcessRuntime } from '../../src/procruntime/runtime.js';
import { ProcessRuntimeServer } from '../../src/procruntime/server.js';
import { buildImage, makeCerts, pushImage, writeOciArchive, startCutProxy, startRedirectFront, startRegistry, trustIn, type Certs, type Registry } from '../env/registry.js';

const work = mkdtempSync(join(tmpdir(), 'nodelet-registry-pull-'));
const certsDir = join(work, 'certs.d');
const creds = { username: 'user', password: 'pass' };
const auth = (over: Partial<AuthConfig> = {}): AuthConfig => ({ username: 'user', password: 'pass', auth: '', server_address: '', identity_token: '', registry_token: '', ...over });
let certs: Certs;
let basic: Registry;
let token: Registry;
const stops: Array<() => Promise<void>> = [];
/** A pull that hangs fails its test instead of the whole run. */
const T = { timeout: 120_000 };

before(async () => {
  certs = makeCerts(join(work, 'certs'));
  basic = await startRegistry({ auth: 'htpasswd', dir: join(work, 'basic'), certs });
  token = await startRegistry({ auth: 'token', dir: join(work, 'token'), certs, token: { refreshTokens: { 'refresh-for-user': 'user' } } });
  stops.push(() => basic.stop(), () => token.stop());
  trustIn(certsDir, certs.caFile, basic.host, token.host);
});
after(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});

let stores = 0;
async function newStore(opts: ImageStoreOptions = { certsDir }): Promise<ImageStore> {
  const s = new ImageStore(join(work, `store-${++stores}`), undefined, opts);
  await s.load();
  return s;
}

const blobGets = (reg: Registry, repo: string, digest: string) => reg.requests().filter((r) => r === `GET /v2/${repo}/blobs/${digest}`).length;
const random = (n: number) => randomBytes(n);
const base = { 'etc/os-release': 'ID=nodelet-test\n', 'etc/motd': 'base motd\n', 'bin/hello': '#!/bin/sh\necho hello\n', 'var/empty': null };

test('a multi-layer gzip image pulls with basic auth, its files in the rootfs; a second image shares its base layer', T, async () => {
  const a = await pushImage(basic.host, 'private/app', '1', { format: 'docker', layers: [base, { 'etc/.wh.motd': '', 'etc/app.conf': 'a=1\n' }, { 'usr/share/app/msg': 'from layer 3\n' }], config: { Cmd: ['/bin/hello'], Env: ['A=1'] } }, creds, basic.caFile);
  const b = await pushImage(basic.host, 'private/other', '2', { layers: [base, { 'etc/other': 'o\n' }] }, creds, basic.caFile);
  const store = await newStore();
  const img = await store.pull(`${basic.host}/private/app:1`, auth());
  const layer0 = a.images[0]!.layers[0]!;
  assert.equal(img.id, a.images[0]!.configDigest, 'the image ID is the config digest');
  assert.deepEqual(img.repoTags, [`${basic.host}/private/app:1`]);
  assert.deepEqual(img.repoDigests, [`${basic.host}/private/app@${a.digest}`]);
  assert.deepEqual(img.layers, a.images[0]!.layers.map((l) => l.diffId));
  assert.deepEqual(img.config.Cmd, ['/bin/hello']);
  assert.equal(store.find(`${basic.host}/private/app:1`)?.id, img.id);
  assert.equal(store.find(`${basic.host}/private/app@${a.digest}`)?.id, img.id);
  const root = await store.rootfs(img);
  assert.equal(readFileSync(join(root, 'etc/os-release'), 'utf8'), 'ID=nodelet-test\n');
  assert.equal(readFileSync(join(root, 'usr/share/app/msg'), 'utf8'), 'from layer 3\n');
  assert.ok(!existsSync(join(root, 'etc/motd')), 'the whiteout of layer 2 hides the base file');
  assert.ok(existsSync(join(root, 'var/empty')));
  for (const d of img.blobs!) assert.ok(existsSync(store.blobs.path(d)), `blob ${d} kept`);
  // The second image's base layer is the same: unpacked already, so not fetched again.
  const layersBefore = readdirSync(join(store.root, 'layers')).length;
  const other = await store.pull(`${basic.host}/private/other:2`, auth({ username: '', password: '', auth: Buffer.from('user:pass').toString('base64') }));
  assert.equal(blobGets(basic, 'private/other', layer0.digest), 0, 'the shared base layer is not downloaded again');
  assert.equal(blobGets(basic, 'private/other', b.images[0]!.layers[1]!.digest), 1);
  assert.equal(readdirSync(join(store.root, 'layers')).length, layersBefore + 1);
  assert.equal(readFileSync(join(await store.rootfs(other), 'etc/other'), 'utf8'), 'o\n');
  assert.equal(readFileSync(join(await store.rootfs(other), 'etc/motd'), 'utf8'), 'base motd\n');
  // Removing one keeps what the other still uses.
  await store.remove(`${basic.host}/private/app:1`);
  assert.ok(existsSync(join(store.root, 'layers', layer0.diffId.slice(7))));
  assert.ok(!existsSync(store.blobs.path(a.images[0]!.layers[2]!.digest)), 'a blob only the removed image had is gone');
  assert.ok(!existsSync(join(store.root, 'layers', a.images[0]!.layers[2]!.diffId.slice(7))));
});

test('a zstd image and a plain tar one pull', T, async () => {
  await pushImage(basic.host, 'private/zstd', '1', { compression: 'zstd', layers: [{ 'z/one': 'zstd layer one\n' }, { 'z/two': random(100_000) }] }, creds, basic.caFile);
  await pushImage(basic.host, 'private/plain', '1', { compression: 'none', layers: [{ 'p/file': 'plain tar\n' }] }, creds, basic.caFile);
  const store = await newStore();
  const z = await store.pull(`${basic.host}/private/zstd:1`, auth());
  assert.equal(readFileSync(join(await store.rootfs(z), 'z/one'), 'utf8'), 'zstd layer one\n');
  assert.equal(readFileSync(join(await store.rootfs(z), 'z/two')).length, 100_000);
  const p = await store.pull(`${basic.host}/private/plain:1`, auth());
  assert.equal(readFileSync(join(await store.rootfs(p), 'p/file'), 'utf8'), 'plain tar\n');
});

test('token auth: a token from the realm for the scope, cached across pulls; identity and registry tokens', T, async () => {
  await pushImage(token.host, 'team/tok', '1', { layers: [{ 't/1': 'one\n' }] }, creds, token.caFile);
  await pushImage(token.host, 'team/tok', '2', { layers: [{ 't/2': 'two\n' }] }, creds, token.caFile);
  const ts = token.tokenServer!;
  const store = await newStore();
  const before = ts.requests.length;
  const img = await store.pull(`${token.host}/team/tok:1`, auth());
  assert.equal(readFileSync(join(await store.rootfs(img), 't/1'), 'utf8'), 'one\n');
  await store.pull(`${token.host}/team/tok:2`, auth());
  const asked = ts.requests.slice(before);
  assert.deepEqual(asked, [{ method: 'GET', user: 'user', scopes: ['repository:team/tok:pull'] }], 'one token for both pulls of the repository');
  // An identity token is exchanged by POST for an access_token (the only field that answer has).
  const s2 = await newStore();
  await s2.pull(`${token.host}/team/tok:1`, auth({ username: '', password: '', identity_token: 'refresh-for-user' }));
  assert.equal(ts.requests.at(-1)?.method, 'POST');
  assert.equal(ts.requests.at(-1)?.grant, 'refresh_token');
  // A registry token is the bearer token itself: the token server is not asked.
  const got = await fetchToken(ts.url, 'repository:team/tok:pull');
  const n = ts.requests.length;
  const s3 = await newStore();
  await s3.pull(`${token.host}/team/tok:2`, auth({ username: '', password: '', registry_token: got }));
  assert.equal(ts.requests.length, n);
});

async function fetchToken(realm: string, scope: string): Promise<string> {
  const https = await import('node:https');
  const url = `${realm}?service=nodelet-test-registry&scope=${encodeURIComponent(scope)}`;
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca: readFileSync(certs.caFile), headers: { authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve((JSON.parse(body) as { token: string }).token));
      })
      .on('error', reject);
  });
}

test("errors as containerd words them, the registry's message in them, as gRPC codes through the CRI server", T, async () => {
  await pushImage(basic.host, 'private/busybox', '1', { layers: [{ 'bin/sh': 'sh' }] }, creds, basic.caFile);
  await pushImage(token.host, 'private/busybox', '1', { layers: [{ 'bin/sh': 'sh' }] }, creds, token.caFile);
  const store = await newStore();
  const ref = `${basic.host}/private/busybox:1`;
  const url = `https://${basic.host}/v2/private/busybox/manifests/1`;
  const unauthorized = `failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": unexpected status from GET request to ${url}: 401 Unauthorized: unauthorized: authentication required`;
  await assert.rejects(store.pull(ref), (e: Error) => e.message === unauthorized);
  await assert.rejects(store.pull(ref, auth({ password: 'wrong' })), (e: Error) => e.message === unauthorized);
  const tref = `${token.host}/private/busybox:1`;
  await assert.rejects(store.pull(tref), /: failed to pull and unpack image "[^"]+": failed to resolve reference "[^"]+": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed \(unexpected status from GET request to \S+: 401 Unauthorized: unauthorized: authentication required\)$/);
  await assert.rejects(store.pull(tref, auth({ password: 'wrong' })), /failed to resolve reference "[^"]+": failed to authorize: failed to fetch oauth token: unexpected status from GET request to https:\/\/127\.0\.0\.1:\d+\/token\?service=nodelet-test-registry&scope=repository%3Aprivate%2Fbusybox%3Apull: 401 Unauthorized: incorrect username or password$/);
  const missing = `${basic.host}/private/busybox:nope`;
  await assert.rejects(store.pull(missing, auth()), (e: Error) => e instanceof NotFoundError && e.message === `failed to pull and unpack image "${missing}": failed to resolve reference "${missing}": ${missing}: not found: manifest unknown`);
  await assert.rejects(store.pull(`127.0.0.1:1/private/busybox:1`), /failed to do request: Get "https:\/\/127\.0\.0\.1:1\/v2\/private\/busybox\/manifests\/1": dial tcp 127\.0\.0\.1:1: connect: connection refused$/);
  assert.equal(store.list().length, 0);

  // The same through CRI, as the kubelet sees them.
  const rt = new ProcessRuntime({ root: join(work, 'runtime'), registryCertsDir: certsDir, pullProgressTimeoutMs: 5000 });
  await rt.start(true);
  const server = new ProcessRuntimeServer(rt);
  const sock = join(work, 'runtime.sock');
  await server.listen(sock);
  const cri = new CriClient(`unix://${sock}`);
  try {
    const id = await cri.pullImage({ image: ref }, auth());
    assert.match(id, /^sha256:[0-9a-f]{64}$/);
    const st = await cri.imageStatus({ image: ref });
    assert.deepEqual(st.image?.repo_tags, [ref]);
    const err = await cri.pullImage({ image: missing }, auth()).then(() => undefined, (e: unknown) => e);
    assert.equal(criErrorText(err), `rpc error: code = NotFound desc = failed to pull and unpack image "${missing}": failed to resolve reference "${missing}": ${missing}: not found: manifest unknown`);
    const denied = await cri.pullImage({ image: ref }, auth({ password: 'wrong' })).then(() => undefined, (e: unknown) => e);
    assert.equal(criErrorText(denied), `rpc error: code = Unknown desc = ${unauthorized}`);
    const bad = await cri.pullImage({ image: 'Busybox' }).then(() => undefined, (e: unknown) => e);
    assert.equal(criErrorText(bad), 'rpc error: code = InvalidArgument desc = parse image name "Busybox": invalid reference format: repository name must be lowercase');
    // ImageFsInfo counts the blobs kept as well as the layers unpacked.
    const fs = await cri.imageFsInfo();
    const used = Number(fs.image_filesystems[0]!.used_bytes!.value);
    const blobBytes = readdirSync(join(work, 'runtime/images/blobs/sha256')).reduce((s, f) => s + readFileSync(join(work, 'runtime/images/blobs/sha256', f)).length, 0);
    assert.ok(blobBytes > 0 && used >= blobBytes, `used ${used} >= blobs ${blobBytes}`);
  } finally {
    cri.close();
    await server.close();
  }
});

/** Nothing of a failed pull is left in the store: no image, no blob, no layer, no temporary file. */
function assertNothingOf(store: ImageStore, ref: string, digests: string[], diffIds: string[]): void {
  assert.ok(!store.list().some((i) => i.repoTags.includes(ref)), `${ref} is not listed`);
  for (const d of digests) assert.ok(!existsSync(store.blobs.path(d)), `no blob ${d}`);
  assert.deepEqual(readdirSync(store.blobs.tmpDir), [], 'no temporary download');
  const layers = readdirSync(join(store.root, 'layers'));
  for (const id of diffIds) assert.ok(!layers.some((l) => l.startsWith(id.slice(7))), `no layer dir ${id}`);
  assert.ok(!layers.some((l) => l.includes('.tmp-')), 'no half-unpacked layer');
}

test('a layer tampered with on the registry is refused; nothing of the image is kept; once repaired it pulls', T, async () => {
  const pushed = await pushImage(basic.host, 'private/tampered', '1', { layers: [{ 'ok/file': 'fine\n' }, { 'bad/file': random(50_000) }] }, creds, basic.caFile);
  const good = pushed.images[0]!.layers[0]!;
  const victim = pushed.images[0]!.layers[1]!;
  const file = basic.blobData(victim.digest);
  const original = readFileSync(file);
  const broken = Buffer.from(original);
  broken[broken.length >> 1] ^= 0xff;
  writeFileSync(file, broken);
  const store = await newStore();
  const ref = `${basic.host}/private/tampered:1`;
  try {
    await assert.rejects(
      store.pull(ref, auth()),
      (e: Error) =>
        e instanceof FailedPreconditionError &&
        new RegExp(`^failed to pull and unpack image "${ref}": failed commit on ref "layer-${victim.digest}": unexpected commit digest sha256:[0-9a-f]{64}, expected ${victim.digest}: failed precondition$`).test(e.message),
    );
    assertNothingOf(store, ref, [pushed.images[0]!.configDigest, good.digest, victim.digest], [good.diffId, victim.diffId]);
  } finally {
    writeFileSync(file, original);
  }
  const img = await store.pull(ref, auth());
  assert.equal(readFileSync(join(await store.rootfs(img), 'ok/file'), 'utf8'), 'fine\n');
});

test('a blob the registry has lost is NotFound, with its words', T, async () => {
  const pushed = await pushImage(basic.host, 'private/lost', '1', { layers: [{ lost: 'lost' }] }, creds, basic.caFile);
  const layer = pushed.images[0]!.layers[0]!;
  const file = basic.blobData(layer.digest);
  const original = readFileSync(file);
  rmSync(file);
  const store = await newStore();
  const ref = `${basic.host}/private/lost:1`;
  try {
    await assert.rejects(
      store.pull(ref, auth()),
      (e: Error) => e instanceof NotFoundError && e.message === `failed to pull and unpack image "${ref}": failed to fetch layer-${layer.digest}: unexpected status from GET request to https://${basic.host}/v2/private/lost/blobs/${layer.digest}: 404 Not Found: blob unknown: blob unknown to registry`,
    );
  } finally {
    writeFileSync(file, original);
  }
  assertNothingOf(store, ref, [layer.digest, pushed.images[0]!.configDigest], [layer.diffId]);
});

test('a config whose diff IDs are not its layers is refused while unpacking; nothing of it is kept', T, async () => {
  const liar = 'sha256:' + '0'.repeat(64);
  const pushed = await pushImage(basic.host, 'private/liar', '1', { layers: [{ 'l/file': 'x' }], diffIds: [liar] }, creds, basic.caFile);
  const layer = pushed.images[0]!.layers[0]!;
  const store = await newStore();
  const ref = `${basic.host}/private/liar:1`;
  await assert.rejects(store.pull(ref, auth()), (e: Error) => e instanceof FailedPreconditionError && e.message === `failed to pull and unpack image "${ref}": failed to extract layer ${liar}: wrong diff id calculated on extraction "${layer.diffId}": failed precondition`);
  assertNothingOf(store, ref, [pushed.images[0]!.configDigest, layer.digest], [liar, layer.diffId]);
});

test('a download cut halfway, or stalled, fails cleanly; a later pull succeeds', T, async () => {
  const pushed = await pushImage(basic.host, 'private/big', '1', { compression: 'none', layers: [{ 'big/blob': random(3 << 20) }] }, creds, basic.caFile);
  const layer = pushed.images[0]!.layers[0]!;
  const proxy = await startCutProxy(Number(basic.host.split(':')[1]));
  stops.push(() => proxy.stop());
  trustIn(certsDir, certs.caFile, proxy.host);
  const ref = `${proxy.host}/private/big:1`;
  const store = await newStore({ certsDir, progressTimeoutMs: 1500 });
  proxy.mode = { kind: 'cut', afterBytes: 1 << 20 };
  await assert.rejects(store.pull(ref, auth()), new RegExp(`^Error: failed to pull and unpack image "${ref}": failed to copy: reading layer-${layer.digest} \\(\\d+ of ${layer.size} bytes\\): (unexpected EOF|read: connection reset by peer)`));
  assert.equal(proxy.tripped, 1);
  assertNothingOf(store, ref, [layer.digest, pushed.images[0]!.configDigest], [layer.diffId]);
  proxy.mode = { kind: 'stall', afterBytes: 1 << 20 };
  const started = Date.now();
  await assert.rejects(store.pull(ref, auth()), new RegExp(`failed to copy: reading layer-${layer.digest} \\(\\d+ of ${layer.size} bytes\\): no progress in 1.5s receiving "https://${proxy.host}/v2/private/big/blobs/${layer.digest}" \\(\\d+ bytes so far\\): the registry stopped sending`));
  assert.ok(Date.now() - started < 15_000, 'the stall was noticed by the progress timeout');
  assert.equal(proxy.tripped, 2);
  assertNothingOf(store, ref, [layer.digest], [layer.diffId]);
  proxy.mode = { kind: 'pass' };
  const img = await store.pull(ref, auth());
  assert.equal(readFileSync(join(await store.rootfs(img), 'big/blob')).length, 3 << 20);
});

test('an index resolves to this platform (linux/amd64 here); one without it is a clear NotFound', T, async () => {
  const host = hostPlatform();
  const other = host.architecture === 'amd64' ? { os: 'linux', architecture: 'arm64', variant: 'v8' } : { os: 'linux', architecture: 'amd64' };
  const pushed = await pushImage(
    basic.host,
    'multi/app',
    'v1',
    { index: [{ platform: other, layers: [{ arch: `${other.architecture}\n` }] }, { platform: host, layers: [{ arch: `${host.architecture}\n` }] }] },
    creds,
    basic.caFile,
  );
  const store = await newStore();
  const ref = `${basic.host}/multi/app:v1`;
  const img = await store.pull(ref, auth());
  assert.equal(readFileSync(join(await store.rootfs(img), 'arch'), 'utf8'), `${host.architecture}\n`);
  assert.equal(img.id, pushed.images[1]!.configDigest);
  assert.deepEqual(img.repoDigests, [`${basic.host}/multi/app@${pushed.digest}`], 'the repo digest is the index the tag names');
  // By digest too, the index's.
  const byDigest = await store.pull(`${basic.host}/multi/app@${pushed.digest}`, auth());
  assert.equal(byDigest.id, img.id);
  await pushImage(basic.host, 'multi/foreign', 'v1', { format: 'docker', index: [{ format: 'docker', platform: other, layers: [{ a: 'a' }] }, { format: 'docker', platform: { os: 'linux', architecture: 's390x' }, layers: [{ b: 'b' }] }] }, creds, basic.caFile);
  await assert.rejects(store.pull(`${basic.host}/multi/foreign:v1`, auth()), (e: Error) => e instanceof NotFoundError && /: no match for platform linux\/\w+\S* in manifest sha256:[0-9a-f]{64} \(it has linux\/\w+\S*, linux\/s390x\): not found$/.test(e.message));
});

test("a manifest must be the one its digest names: the reference's, or the index's entry", T, async () => {
  const pinned = await pushImage(basic.host, 'private/pinned', '1', { layers: [{ p: 'p' }] }, creds, basic.caFile);
  const multi = await pushImage(basic.host, 'private/pinned', 'multi', { index: [{ platform: hostPlatform(), layers: [{ q: 'q' }] }] }, creds, basic.caFile);
  const store = await newStore();
  const repo = `${basic.host}/private/pinned`;
  const wrong = 'sha256:' + 'e'.repeat(64);
  // The registry finds no manifest by a digest it does not have: not found, as for a tag.
  await assert.rejects(store.pull(`${repo}@${wrong}`, auth()), (e: Error) => e instanceof NotFoundError && e.message.endsWith(`${repo}@${wrong}: not found: manifest unknown`));
  // A registry (here its disk) that serves other bytes for a digest: the bytes are refused.
  const tamper = (digest: string) => {
    const file = basic.blobData(digest);
    const original = readFileSync(file);
    // Same length, still a manifest the registry can parse and serve; another digest.
    writeFileSync(file, original.toString('utf8').replace('oci.image.config', 'oci.image.Config'));
    return () => writeFileSync(file, original);
  };
  const restore = tamper(pinned.digest);
  try {
    await assert.rejects(store.pull(`${repo}@${pinned.digest}`, auth()), (e: Error) => e instanceof FailedPreconditionError && new RegExp(`failed commit on ref "manifest-${pinned.digest}": unexpected commit digest sha256:[0-9a-f]{64}, expected ${pinned.digest}: failed precondition$`).test(e.message));
  } finally {
    restore();
  }
  const child = multi.images[0]!.manifestDigest;
  const restoreChild = tamper(child);
  try {
    await assert.rejects(store.pull(`${repo}:multi`, auth()), (e: Error) => e instanceof FailedPreconditionError && e.message.includes(`failed commit on ref "manifest-${child}": unexpected commit digest`));
  } finally {
    restoreChild();
  }
  assert.equal(store.list().length, 0);
  assert.equal((await store.pull(`${repo}@${pinned.digest}`, auth())).repoDigests[0], `${repo}@${pinned.digest}`);
});

test('without the CA in the certs directory, TLS fails with a clear error', T, async () => {
  await pushImage(basic.host, 'private/ca', '1', { layers: [{ c: 'c' }] }, creds, basic.caFile);
  const ref = `${basic.host}/private/ca:1`;
  const none = await newStore({});
  await assert.rejects(none.pull(ref, auth()), /failed to do request: Get "https:\/\/127\.0\.0\.1:\d+\/v2\/private\/ca\/manifests\/1": tls: failed to verify certificate: x509: certificate signed by unknown authority \(.*no registry certs directory is configured\)$/);
  const elsewhere = await newStore({ certsDir: join(work, 'empty-certs.d') });
  await assert.rejects(elsewhere.pull(ref, auth()), /certificate signed by unknown authority \(.*a \*\.crt in .*empty-certs\.d\/127\.0\.0\.1:\d+\/\)$/);
  assert.equal(none.list().length + elsewhere.list().length, 0);
  // A hosts.toml beside the CA (containerd's) is no CA and is left alone.
  writeFileSync(join(certsDir, basic.host, 'hosts.toml'), `server = "https://${basic.host}"\n`);
  assert.ok(await (await newStore()).pull(ref, auth()));
});

test('blob GETs answered with a 307 to blob storage are followed, without sending the credentials there', T, async () => {
  const pushed = await pushImage(basic.host, 'private/redirected', '1', { layers: [{ r: 'redirected\n' }, { s: 'second\n' }] }, creds, basic.caFile);
  const front = await startRedirectFront(basic.host, (d) => basic.blobData(d), certs);
  stops.push(() => front.stop());
  trustIn(certsDir, certs.caFile, front.host);
  const store = await newStore();
  const img = await store.pull(`${front.host}/private/redirected:1`, auth());
  assert.equal(readFileSync(join(await store.rootfs(img), 'r'), 'utf8'), 'redirected\n');
  assert.equal(front.redirected, 1 + pushed.images[0]!.layers.length, 'config and layers came from storage');
  assert.equal(front.storageWithAuth, 0);
});

test('two pulls at once that share a layer share one download of it', T, async () => {
  const shared = { 'shared/big': random(2 << 20) };
  const one = await pushImage(basic.host, 'private/conc', '1', { layers: [shared, { one: '1' }] }, creds, basic.caFile);
  await pushImage(basic.host, 'private/conc', '2', { layers: [shared, { two: '2' }] }, creds, basic.caFile);
  const store = await newStore();
  const [a, b] = await Promise.all([store.pull(`${basic.host}/private/conc:1`, auth()), store.pull(`${basic.host}/private/conc:2`, auth())]);
  assert.equal(blobGets(basic, 'private/conc', one.images[0]!.layers[0]!.digest), 1);
  assert.equal(readFileSync(join(await store.rootfs(a), 'shared/big')).length, 2 << 20);
  assert.equal(readFileSync(join(await store.rootfs(b), 'two'), 'utf8'), '2');
});

test('a manifest that says a layer is bigger than it is: the short blob is refused', T, async () => {
  const pushed = await pushImage(basic.host, 'private/short', '1', { layers: [{ s: 'short' }], sizeDelta: 7 }, creds, basic.caFile);
  const layer = pushed.images[0]!.layers[0]!;
  const store = await newStore();
  const ref = `${basic.host}/private/short:1`;
  await assert.rejects(store.pull(ref, auth()), (e: Error) => e instanceof FailedPreconditionError && e.message === `failed to pull and unpack image "${ref}": failed commit on ref "layer-${layer.digest}": commit failed: unexpected commit size ${layer.size}, expected ${layer.size + 7}: failed precondition`);
  assertNothingOf(store, ref, [layer.digest], [layer.diffId]);
});

test('the images directory first, when an archive there names the reference; a layer it unpacked is not downloaded', T, async () => {
  const imagesDir = join(work, 'images');
  mkdirSync(imagesDir, { recursive: true });
  // The registry's offline:1 and the archive's differ; the archive wins when it names the reference.
  await pushImage(basic.host, 'private/offline', '1', { layers: [{ from: 'registry\n' }] }, creds, basic.caFile);
  writeOciArchive(join(imagesDir, 'offline_1.tar'), `${basic.host}/private/offline:1`, buildImage({ compression: 'none', layers: [base, { from: 'archive\n' }] }));
  const store = new ImageStore(join(work, `store-${++stores}`), imagesDir, { certsDir });
  await store.load();
  const gets = basic.requests().length;
  const offline = await store.pull(`${basic.host}/private/offline:1`);
  assert.equal(readFileSync(join(await store.rootfs(offline), 'from'), 'utf8'), 'archive\n');
  assert.equal(basic.requests().length, gets, 'the registry was not asked');
  // An archive of that file name naming another image is not used: the registry is.
  writeOciArchive(join(imagesDir, 'offline_2.tar'), 'example.test/else:2', buildImage({ layers: [{ from: 'else\n' }] }));
  const pushed = await pushImage(basic.host, 'private/offline', '2', { layers: [base, { from: 'registry 2\n' }] }, creds, basic.caFile);
  const two = await store.pull(`${basic.host}/private/offline:2`, auth());
  assert.equal(readFileSync(join(await store.rootfs(two), 'from'), 'utf8'), 'registry 2\n');
  // Its base layer is the archive's (same diff ID, compressed otherwise): unpacked, so not downloaded.
  assert.equal(blobGets(basic, 'private/offline', pushed.images[0]!.layers[0]!.digest), 0);
  assert.equal(blobGets(basic, 'private/offline', pushed.images[0]!.layers[1]!.digest), 1);
  assert.ok(!store.find('example.test/else:2'));
});

test('load() removes what a crashed pull left, not what a live process is writing', T, async () => {
  const root = join(work, 'crashed');
  const dead = spawnSync('true').pid;
  const hex = 'a'.repeat(64);
  mkdirSync(join(root, 'blobs/.tmp'), { recursive: true });
  mkdirSync(join(root, `layers/${hex}.tmp-${dead}-0badf00d`), { recursive: true });
  writeFileSync(join(root, `blobs/.tmp/${dead}-0badf00d-${hex}`), 'partial');
  writeFileSync(join(root, `blobs/.tmp/1-0badf00d-${hex}`), 'pid 1 is alive');
  const store = new ImageStore(root, undefined, { certsDir });
  await store.load();
  assert.deepEqual(readdirSync(join(root, 'blobs/.tmp')), [`1-0badf00d-${hex}`]);
  assert.deepEqual(readdirSync(join(root, 'layers')), []);
});
