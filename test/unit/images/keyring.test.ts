import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Secret } from '@kubernetes/client-node';
import { keyMatches, Keyring, PullSecretError, repositoryOf, toAuthConfig } from '../../../src/images/keyring.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function configJson(name: string, auths: Record<string, object>, uid = `uid-${name}`): V1Secret {
  return { metadata: { name, namespace: 'ns', uid }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) } };
}

test('repositoryOf: tag and digest dropped, docker.io names expanded', () => {
  const cases: Array<[string, string]> = [
    ['busybox', 'docker.io/library/busybox'],
    ['busybox:1.36', 'docker.io/library/busybox'],
    ['user/app:2', 'docker.io/user/app'],
    ['127.0.0.1:25000/private/busybox:1', '127.0.0.1:25000/private/busybox'],
    ['registry.example.com/a/b@sha256:abcd', 'registry.example.com/a/b'],
    ['localhost/app', 'localhost/app'],
  ];
  for (const [image, repo] of cases) assert.equal(repositoryOf(image), repo, image);
});

test('keyMatches: per-label globs, exact ports, path prefixes', () => {
  const cases: Array<[string, string, boolean]> = [
    ['registry.example.com', 'registry.example.com/app', true],
    ['*.example.com', 'registry.example.com/app', true],
    ['*.example.com', 'example.com/app', false], // as many labels on both sides
    ['*.example.com', 'a.b.example.com/app', false],
    ['reg?stry.example.com', 'registry.example.com/app', true],
    ['registry.example.com:5000', 'registry.example.com/app', false],
    ['registry.example.com', 'registry.example.com:5000/app', false],
    ['127.0.0.1:25000', '127.0.0.1:25000/private/busybox', true],
    ['127.0.0.1:25000/private', '127.0.0.1:25000/private/busybox', true],
    ['127.0.0.1:25000/public', '127.0.0.1:25000/private/busybox', false],
  ];
  for (const [key, image, want] of cases) assert.equal(keyMatches(key, image), want, `${key} ~ ${image}`);
});

test('keyring: the most specific key first; schemes and /v1/ /v2/ prefixes ignored', () => {
  const ring = Keyring.fromSecrets([
    configJson('host', { 'https://127.0.0.1:25000/v2/': { username: 'h', password: 'hp' } }),
    configJson('path', { '127.0.0.1:25000/private': { auth: b64('p:pp') } }),
    configJson('other', { 'other.example.com': { username: 'o', password: 'op' } }),
  ]);
  const creds = ring.lookup('127.0.0.1:25000/private/busybox:1');
  assert.deepEqual(creds.map((c) => [c.username, c.password, c.source.name]), [['p', 'pp', 'path'], ['h', 'hp', 'host']]);
  assert.deepEqual(ring.lookup('127.0.0.1:25000/public/busybox:1').map((c) => c.username), ['h']);
  assert.deepEqual(ring.lookup('elsewhere.example.com/app:1'), []);
  // What CRI is sent: user and password alone.
  assert.deepEqual(toAuthConfig(creds[0]!), { username: 'p', password: 'pp', auth: '', server_address: '', identity_token: '', registry_token: '' });
});

test('keyring: dockercfg secrets, docker.io defaults, other secret types ignored', () => {
  const dockercfg: V1Secret = { metadata: { name: 'old', namespace: 'ns', uid: 'u' }, type: 'kubernetes.io/dockercfg', data: { '.dockercfg': b64(JSON.stringify({ 'https://index.docker.io/v1/': { username: 'd', password: 'dp' } })) } };
  const opaque: V1Secret = { metadata: { name: 'opaque', namespace: 'ns' }, type: 'Opaque', data: { '.dockerconfigjson': b64('{"auths":{"x.example.com":{"username":"no"}}}') } };
  const ring = Keyring.fromSecrets([dockercfg, opaque]);
  assert.deepEqual(ring.lookup('busybox').map((c) => c.username), ['d']);
  assert.deepEqual(ring.lookup('docker.io/user/app:1').map((c) => c.username), ['d']);
  assert.deepEqual(ring.lookup('x.example.com/app'), []);
});

test('keyring: a credential is recognised by its hash whatever secret holds it; bad JSON is refused', () => {
  const a = Keyring.fromSecrets([configJson('a', { 'r.example.com': { username: 'u', password: 'p' } })]).lookup('r.example.com/x');
  const b = Keyring.fromSecrets([configJson('b', { 'r.example.com': { auth: b64('u:p') } })]).lookup('r.example.com/x');
  const c = Keyring.fromSecrets([configJson('c', { 'r.example.com': { username: 'u', password: 'other' } })]).lookup('r.example.com/x');
  assert.equal(a[0]!.hash, b[0]!.hash);
  assert.notEqual(a[0]!.hash, c[0]!.hash);
  const bad: V1Secret = { metadata: { name: 'bad', namespace: 'ns' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{not json') } };
  assert.throws(() => Keyring.fromSecrets([bad]), PullSecretError);
});
