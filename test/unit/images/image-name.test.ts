// Image references as the kubelet parses them: what is InvalidImageName, and in which words. The
// bad-input drill found a short digest passed on to the runtime (ErrImagePull) instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { imageNameProblem, invalidImageNameMessage } from '../../../src/images/image-name.js';

const sha = (n: number) => 'a'.repeat(n);

test('references that parse', () => {
  for (const ok of [
    'busybox',
    'busybox:1.36',
    'library/busybox',
    'nodelet.test/busybox:1',
    '127.0.0.1:5000/a/b-c__d.e:v1_2',
    'localhost/x',
    'Registry.Example/x:TAG',
    '[::1]:5000/x:1',
    `r.example/x@sha256:${sha(64)}`,
    `r.example/x:1@sha512:${sha(128)}`,
  ]) assert.equal(imageNameProblem(ok), undefined, ok);
});

test('references that do not, with the parser\'s words', () => {
  assert.equal(imageNameProblem('nodelet.test/Busybox:1'), 'invalid reference format: repository name (Busybox) must be lowercase');
  assert.equal(imageNameProblem('r.example/x@sha256:1234'), 'invalid reference format');
  assert.equal(imageNameProblem(`r.example/x@sha256:${sha(40)}`), 'invalid checksum digest length');
  assert.equal(imageNameProblem(`r.example/x@md5:${sha(32)}`), 'unsupported digest algorithm');
  assert.equal(imageNameProblem(`r.example/x@sha256:${'A'.repeat(64)}`), 'invalid checksum digest format');
  assert.equal(imageNameProblem('r.example/x:-tag'), 'invalid reference format');
  assert.equal(imageNameProblem('r.example//x'), 'invalid reference format');
  assert.equal(imageNameProblem(''), 'invalid reference format');
  assert.equal(imageNameProblem(sha(64)), `invalid repository name (${sha(64)}), cannot specify 64-byte hexadecimal strings`);
  assert.equal(imageNameProblem(`r.example/${'x'.repeat(256)}`), 'repository name must not be more than 255 characters');
  assert.equal(
    invalidImageNameMessage('x@sha256:1'),
    'Failed to apply default image tag "x@sha256:1": couldn\'t parse image name "x@sha256:1": invalid reference format',
  );
});
