// Image references normalised as docker and containerd normalise them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseReference, referenceString, registryHost, repositoryName } from '../../../src/procruntime/registry/reference.js';
import { InvalidArgumentError } from '../../../src/procruntime/errors.js';

const full = (r: string) => referenceString(parseReference(r));
const hex = 'a'.repeat(64);

test('Docker Hub names: library/ for official images, :latest by default, registry-1.docker.io to connect to', () => {
  assert.equal(full('busybox'), 'docker.io/library/busybox:latest');
  assert.equal(full('busybox:1.36'), 'docker.io/library/busybox:1.36');
  assert.equal(full('bitnami/redis'), 'docker.io/bitnami/redis:latest');
  assert.equal(full('docker.io/busybox'), 'docker.io/library/busybox:latest');
  assert.equal(full('index.docker.io/library/busybox:1'), 'docker.io/library/busybox:1');
  assert.equal(registryHost(parseReference('busybox').domain), 'registry-1.docker.io');
  assert.equal(registryHost('quay.io'), 'quay.io');
});

test('registries by a dot, a port or localhost; tags after the last slash; digests', () => {
  assert.deepEqual(parseReference('127.0.0.1:25000/private/busybox:1'), { domain: '127.0.0.1:25000', path: 'private/busybox', tag: '1' });
  assert.deepEqual(parseReference('localhost/app'), { domain: 'localhost', path: 'app', tag: 'latest' });
  assert.deepEqual(parseReference('registry.local:5000/team/app'), { domain: 'registry.local:5000', path: 'team/app', tag: 'latest' });
  assert.deepEqual(parseReference(`quay.io/a/b@sha256:${hex}`), { domain: 'quay.io', path: 'a/b', digest: `sha256:${hex}` });
  assert.deepEqual(parseReference(`quay.io/a/b:v1@sha256:${hex}`), { domain: 'quay.io', path: 'a/b', tag: 'v1', digest: `sha256:${hex}` });
  assert.equal(repositoryName(parseReference('team/app:2')), 'docker.io/team/app');
  // A first component without a dot, a port or "localhost" is a Docker Hub namespace.
  assert.deepEqual(parseReference('myhost/app'), { domain: 'docker.io', path: 'myhost/app', tag: 'latest' });
  assert.equal(full('a.b-c/e__d--f.g:T_1.x'), 'a.b-c/e__d--f.g:T_1.x');
});

test('invalid references are InvalidArgument, worded as containerd words them', () => {
  for (const bad of ['', 'Busybox', 'docker.io/Library/busybox', 'busybox:', 'busybox:-x', `busybox@sha256:${'a'.repeat(10)}`, 'a//b', 'a/b/', ':tag', 'a_/b', `x@md5:${hex}`]) {
    assert.throws(() => parseReference(bad), (e: Error) => e instanceof InvalidArgumentError && e.message.startsWith(`parse image name "${bad}": invalid reference format`), bad);
  }
  assert.throws(() => parseReference('docker.io/Library/busybox'), /repository name must be lowercase/);
  assert.throws(() => parseReference(`a.io/${'x'.repeat(260)}`), /not be more than 255 characters/);
});
