// The process runtime's image store: OCI archives imported, layers shared, whiteouts honoured.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { archiveNameFor, ImageStore, normalizeRef, USAGE_CACHE_MS } from '../../../src/procruntime/image-store.js';
import { containerArgv } from '../../../src/procruntime/container-start.js';
import { forward, rfc3339Nano } from '../../../src/procruntime/log-forwarder.js';

const work = mkdtempSync(join(tmpdir(), 'nodelet-images-'));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Writes an OCI layout archive of `layers` (each a map of path -> content, null for a directory, { link } for a symbolic link). */
function archive(name: string, ref: string, layers: Array<Record<string, string | null | { link: string }>>, config: object = { Cmd: ['sh'] }): string {
  const dir = join(work, `${name}-layout`);
  mkdirSync(join(dir, 'blobs/sha256'), { recursive: true });
  const blob = (b: Buffer) => {
    const d = sha(b);
    writeFileSync(join(dir, 'blobs/sha256', d), b);
    return { digest: `sha256:${d}`, size: b.length };
  };
  const layerDescs = layers.map((files, i) => {
    const root = join(work, `${name}-l${i}`);
    mkdirSync(root, { recursive: true });
    for (const [p, content] of Object.entries(files)) {
      if (content === null) mkdirSync(join(root, p), { recursive: true });
      else if (typeof content === 'object') {
        mkdirSync(join(root, p, '..'), { recursive: true });
        symlinkSync(content.link, join(root, p));
      } else {
        mkdirSync(join(root, p, '..'), { recursive: true });
        writeFileSync(join(root, p), content);
      }
    }
    const tar = join(work, `${name}-l${i}.tar`);
    // Fixed times and owners: the same files make the same layer digest whenever they are written.
    execFileSync('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-cf', tar, '-C', root, '.']);
    return blob(readFileSync(tar));
  });
  const cfg = blob(Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config, rootfs: { type: 'layers', diff_ids: layerDescs.map((l) => l.digest) } })));
  const manifest = blob(Buffer.from(JSON.stringify({ schemaVersion: 2, config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...cfg }, layers: layerDescs.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...l })) })));
  writeFileSync(join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  writeFileSync(join(dir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'io.containerd.image.name': ref } }] }));
  const out = join(work, `${name}.tar`);
  execFileSync('tar', ['-cf', out, '-C', dir, '.']);
  return out;
}

test('layers are applied in order with whiteouts and opaque directories; shared layers are unpacked once', async () => {
  const base = { 'etc/keep': 'base', 'etc/gone': 'base', 'opt/old/a': 'a', 'opt/old/b': 'b', 'bin/x': 'x1' };
  const file = archive('wh', 'example.test/wh:1', [base, { 'etc/.wh.gone': '', 'opt/old/.wh..wh..opq': '', 'opt/old/c': 'c', 'bin/x': 'x2' }]);
  const store = new ImageStore(join(work, 'store'));
  await store.load();
  const [img] = await store.importArchive(file);
  assert.deepEqual(img!.repoTags, ['example.test/wh:1']);
  assert.equal(store.find('example.test/wh:1')?.id, img!.id);
  assert.equal(store.find(img!.id.slice(7))?.id, img!.id, 'found by bare ID too');
  const root = await store.rootfs(img!);
  assert.equal(readFileSync(join(root, 'etc/keep'), 'utf8'), 'base');
  assert.ok(!existsSync(join(root, 'etc/gone')), 'a whiteout removes the lower file');
  assert.deepEqual(readdirSync(join(root, 'opt/old')).sort(), ['c'], 'an opaque directory hides everything below');
  assert.equal(readFileSync(join(root, 'bin/x'), 'utf8'), 'x2', 'upper layers win');
  assert.ok(!readdirSync(join(root, 'etc')).some((f) => f.startsWith('.wh.')), 'no whiteout files remain');
  // A second image on the same base layer reuses its unpacked directory.
  const before = readdirSync(join(work, 'store/layers')).length;
  await store.importArchive(archive('wh2', 'example.test/wh:2', [base, { 'etc/extra': 'e' }]));
  assert.equal(readdirSync(join(work, 'store/layers')).length, before + 1);
  // The store survives a restart.
  const again = new ImageStore(join(work, 'store'));
  await again.load();
  assert.equal(again.list().length, 2);
  await again.remove('example.test/wh:1');
  assert.equal(again.list().length, 1);
  assert.ok(existsSync(join(work, 'store/layers', img!.layers[0]!.slice(7))), 'a layer still used by another image stays');
});

test("no layer reaches the host through a link an earlier one left: whiteouts, opaque directories and files over links stay in the image", async () => {
  // The "host": a directory and a file outside the store, which the links of the first layer name.
  const host = join(work, 'host');
  mkdirSync(join(host, 'dir'), { recursive: true });
  writeFileSync(join(host, 'dir', 'state'), 'node state');
  writeFileSync(join(host, 'file'), 'host file');
  const links = { e: { link: join(host, 'dir') }, w: { link: join(host, 'dir') }, g: { link: join(host, 'file') }, 'etc/keep': 'k' };
  const file = archive('links', 'example.test/links:1', [links, { 'e/.wh..wh..opq': '', 'e/new': 'n', 'w/.wh.state': '', g: 'image file' }]);
  const store = new ImageStore(join(work, 'store-links'));
  await store.load();
  const [img] = await store.importArchive(file);
  const root = await store.rootfs(img!);
  assert.equal(readFileSync(join(host, 'dir', 'state'), 'utf8'), 'node state', "the opaque directory and the whiteout under links removed nothing of the host's");
  assert.equal(readFileSync(join(host, 'file'), 'utf8'), 'host file', 'a file over a link did not write through it');
  assert.deepEqual(readdirSync(host).sort(), ['dir', 'file']);
  assert.ok(lstatSync(join(root, 'e')).isDirectory(), "the layer's directory replaced the link");
  assert.deepEqual(readdirSync(join(root, 'e')), ['new']);
  assert.equal(readFileSync(join(root, 'g'), 'utf8'), 'image file');
  assert.ok(lstatSync(join(root, 'w')).isDirectory(), "the whiteout's directory replaced the link, with nothing under it");
  assert.deepEqual(readdirSync(join(root, 'w')), []);
  // A whiteout of ".." would name the directory above the root.
  const [dots] = await store.importArchive(archive('dots', 'example.test/dots:1', [{ 'etc/keep': 'k' }, { '.wh...': '' }]));
  await assert.rejects(store.rootfs(dots!), /invalid whiteout \.wh\.\.\. in layer/);
  assert.ok(existsSync(join(work, 'store-links')), 'the store is still there');
  assert.deepEqual(readdirSync(join(work, 'store-links', 'rootfs')).filter((d) => d.includes('.tmp-')), [], 'no half-built root left');
});

test('pull finds <name>_<tag>.tar in the images directory; references normalise like CRI\'s', async () => {
  assert.equal(archiveNameFor('nodelet.test/busybox:1'), 'busybox_1.tar');
  assert.equal(archiveNameFor('registry.local:5000/team/app'), 'app_latest.tar');
  assert.equal(normalizeRef('example.test/app'), 'example.test/app:latest');
  const imagesDir = join(work, 'pull-src');
  mkdirSync(imagesDir, { recursive: true });
  execFileSync('cp', [archive('pulled', 'example.test/pulled:3', [{ 'a': 'a' }]), join(imagesDir, 'pulled_3.tar')]);
  const store = new ImageStore(join(work, 'store-pull'), imagesDir);
  await store.load();
  const img = await store.pull('example.test/pulled:3');
  assert.deepEqual(img.repoTags, ['example.test/pulled:3']);
  assert.deepEqual(img.repoDigests.map((d) => d.split('@')[0]), ['example.test/pulled']);
  // No archive, or one that names another image: the reference's registry is asked (nothing listens here).
  await assert.rejects(store.pull('127.0.0.1:1/absent:1'), /failed to pull and unpack image "127\.0\.0\.1:1\/absent:1": .*connect: connection refused/);
  execFileSync('cp', [archive('other', 'example.test/other:1', [{ 'o': 'o' }]), join(imagesDir, 'pulled_4.tar')]);
  await assert.rejects(store.pull('127.0.0.1:1/pulled:4'), /connection refused/);
  assert.equal(store.list().length, 1, 'the archive that names another image was not imported');
  // An archive name with a registry port keeps the port out of its repo digest.
  execFileSync('cp', [archive('ported', 'localhost:5000/team/ported:2', [{ 'p': 'p' }]), join(imagesDir, 'ported_2.tar')]);
  const ported = await store.pull('localhost:5000/team/ported:2');
  assert.match(ported.repoDigests[0]!, /^localhost:5000\/team\/ported@sha256:[0-9a-f]{64}$/);
});

test('argv: command replaces ENTRYPOINT, args replaces CMD', () => {
  const img = { id: 'x', repoTags: [], repoDigests: [], size: 0, layers: [], config: { Entrypoint: ['/entry'], Cmd: ['default'] } };
  assert.deepEqual(containerArgv({}, img), ['/entry', 'default']);
  assert.deepEqual(containerArgv({ args: ['x'] }, img), ['/entry', 'x']);
  assert.deepEqual(containerArgv({ command: ['/bin/sh'] }, img), ['/bin/sh']);
  assert.deepEqual(containerArgv({ command: ['/bin/sh'], args: ['-c', 'true'] }, img), ['/bin/sh', '-c', 'true']);
});

test('output is copied to the CRI log format, partial lines held, long lines split with P', () => {
  const raw = join(work, 'raw');
  const log = join(work, 'logs/c/0.log');
  writeFileSync(raw, 'one\ntw');
  const st = { offset: 0, pending: '' };
  forward(raw, 'stdout', log, st, Date.UTC(2026, 10, 29, 18, 11, 10, 433));
  assert.equal(readFileSync(log, 'utf8'), '2026-11-29T18:11:10.433Z stdout F one\n');
  writeFileSync(raw, 'one\ntwo\n' + 'x'.repeat(20_000));
  forward(raw, 'stdout', log, st, Date.UTC(2026, 10, 29, 18, 11, 11));
  forward(raw, 'stdout', log, st, Date.UTC(2026, 10, 29, 18, 11, 12), true);
  const lines = readFileSync(log, 'utf8').trimEnd().split('\n');
  assert.equal(lines[1], '2026-11-29T18:11:11Z stdout F two');
  assert.match(lines[2]!, /^\S+ stdout P x{16384}$/);
  assert.match(lines[3]!, /^\S+ stdout P x{3616}$/, 'the end of output without a newline is a partial record, as containerd writes it');
  assert.equal(rfc3339Nano(Date.UTC(2026, 0, 1, 0, 0, 0, 5)), '2026-01-01T00:00:00.005Z');
});

test('disk usage is walked again after the store changed, else at most once a minute', async () => {
  let now = 1_000_000;
  const root = join(work, 'store-usage');
  const store = new ImageStore(root, undefined, { now: () => now });
  await store.load();
  const empty = await store.usedBytes();
  // Nothing the store did: the figure stands until the minute is out.
  writeFileSync(join(root, 'rootfs', 'outside'), Buffer.alloc(64 * 1024, 1));
  assert.equal(await store.usedBytes(), empty, 'within the minute, the last walk stands');
  now += USAGE_CACHE_MS;
  const grown = await store.usedBytes();
  assert.ok(grown >= empty + 64 * 1024, `walked again after a minute (${empty} -> ${grown})`);
  // An import changes the store: measured at once.
  await store.importArchive(archive('usage', 'example.test/usage:1', [{ 'data/big': 'x'.repeat(200_000) }]));
  const imported = await store.usedBytes();
  assert.ok(imported >= grown + 200_000, `an import is counted at once (${grown} -> ${imported})`);
});
