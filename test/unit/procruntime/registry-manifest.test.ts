// Manifests and indexes: which kind a document is, the platform an index resolves to, layer types.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostPlatform, layerCompression, MEDIA, parseManifest, selectPlatform, type ImageIndex } from '../../../src/procruntime/registry/manifest.js';
import { NotFoundError } from '../../../src/procruntime/errors.js';

const d = (c: string) => `sha256:${c.repeat(64)}`;
const entry = (digest: string, platform?: object, extra: object = {}) => ({ mediaType: MEDIA.ociManifest, digest, size: 10, ...(platform ? { platform } : {}), ...extra });
const index = (...manifests: object[]) => parseManifest(Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.ociIndex, manifests })), undefined) as ImageIndex;

test('an index resolves to linux/amd64 among other platforms and attestations', () => {
  const idx = index(
    entry(d('1'), { os: 'linux', architecture: 'arm64', variant: 'v8' }),
    entry(d('2'), { os: 'unknown', architecture: 'unknown' }, { annotations: { 'vnd.docker.reference.type': 'attestation-manifest' } }),
    entry(d('3'), { os: 'windows', architecture: 'amd64' }),
    entry(d('4'), { os: 'linux', architecture: 'amd64' }),
    entry(d('5'), { os: 'linux', architecture: 'arm', variant: 'v7' }),
  );
  assert.equal(selectPlatform(idx, d('f'), { os: 'linux', architecture: 'amd64' }).digest, d('4'));
  assert.equal(selectPlatform(idx, d('f'), { os: 'linux', architecture: 'arm64', variant: 'v8' }).digest, d('1'));
  assert.equal(selectPlatform(idx, d('f'), { os: 'linux', architecture: 'arm', variant: 'v7' }).digest, d('5'));
  assert.throws(() => selectPlatform(idx, d('f'), { os: 'linux', architecture: 'arm', variant: 'v6' }), /no match for platform linux\/arm\/v6/);
  // arm64 entries may or may not say v8; an exact variant wins.
  const arm = index(entry(d('6'), { os: 'linux', architecture: 'arm64' }), entry(d('7'), { os: 'linux', architecture: 'arm64', variant: 'v8' }));
  assert.equal(selectPlatform(arm, d('f'), { os: 'linux', architecture: 'arm64', variant: 'v8' }).digest, d('7'));
  assert.equal(selectPlatform(index(entry(d('6'), { os: 'linux', architecture: 'arm64' })), d('f'), { os: 'linux', architecture: 'arm64', variant: 'v8' }).digest, d('6'));
  // The default is this node's platform.
  const host = hostPlatform();
  assert.equal(selectPlatform(index(entry(d('8'), { os: host.os, architecture: host.architecture, ...(host.variant ? { variant: host.variant } : {}) })), d('f')).digest, d('8'));
});

test('an index without this platform is a clear NotFound naming what it has', () => {
  const idx = index(entry(d('1'), { os: 'linux', architecture: 'arm64' }), entry(d('2'), { os: 'linux', architecture: 's390x' }), entry(d('3')));
  assert.throws(
    () => selectPlatform(idx, d('f'), { os: 'linux', architecture: 'amd64' }),
    (e: Error) => e instanceof NotFoundError && e.message === `no match for platform linux/amd64 in manifest ${d('f')} (it has linux/arm64, linux/s390x, unknown): not found`,
  );
});

test('the kind of a document: Content-Type first, then its mediaType, then its shape; schema 1 refused', () => {
  const manifest = { schemaVersion: 2, config: { mediaType: MEDIA.ociConfig, digest: d('c'), size: 2 }, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: d('a'), size: 3 }] };
  const m = parseManifest(Buffer.from(JSON.stringify(manifest)), 'application/vnd.docker.distribution.manifest.v2+json; charset=utf-8');
  assert.equal(m.kind, 'manifest');
  assert.equal(m.mediaType, MEDIA.dockerManifest);
  assert.equal(parseManifest(Buffer.from(JSON.stringify(manifest)), 'application/octet-stream').mediaType, MEDIA.ociManifest);
  assert.equal(parseManifest(Buffer.from(JSON.stringify({ manifests: [] })), undefined).kind, 'index');
  assert.equal(parseManifest(Buffer.from(JSON.stringify({ mediaType: MEDIA.dockerList, manifests: [] })), 'text/plain').mediaType, MEDIA.dockerList);
  assert.throws(() => parseManifest(Buffer.from(JSON.stringify({ schemaVersion: 1, fsLayers: [] })), undefined), /schema 1 manifests are deprecated/);
  assert.throws(() => parseManifest(Buffer.from('nope'), undefined), /not JSON/);
  assert.throws(() => parseManifest(Buffer.from(JSON.stringify({ ...manifest, layers: [{ digest: 'sha256:abc', size: 1 }] })), undefined), /layers\[0\] has digest "sha256:abc"/);
  assert.throws(() => parseManifest(Buffer.from(JSON.stringify({ ...manifest, config: { digest: d('c') } })), undefined), /config is not a descriptor/);
  assert.throws(() => parseManifest(Buffer.from(JSON.stringify({ mediaType: 'application/vnd.oci.artifact.manifest.v1+json' })), undefined), /unsupported manifest media type/);
});

test('layer media types: tar, gzip, zstd, docker gzip; others refused', () => {
  assert.equal(layerCompression('application/vnd.oci.image.layer.v1.tar'), 'none');
  assert.equal(layerCompression('application/vnd.oci.image.layer.v1.tar+gzip'), 'gzip');
  assert.equal(layerCompression('application/vnd.oci.image.layer.v1.tar+zstd'), 'zstd');
  assert.equal(layerCompression('application/vnd.docker.image.rootfs.diff.tar.gzip'), 'gzip');
  assert.throws(() => layerCompression('application/vnd.cncf.helm.chart.content.v1.tar+gzip'), /unsupported layer media type/);
});
