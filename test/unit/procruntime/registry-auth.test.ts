// Registry auth pieces: WWW-Authenticate challenges, CRI credentials, the token cache, error bodies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { credentialsFrom, parseWwwAuthenticate, TokenCache } from '../../../src/procruntime/registry/auth.js';
import { serverMessage } from '../../../src/procruntime/registry/errors.js';

test('WWW-Authenticate: Bearer with quoted commas, Basic, several challenges, escapes and odd spacing', () => {
  assert.deepEqual(parseWwwAuthenticate('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/busybox:pull,push"'), [
    { scheme: 'bearer', params: { realm: 'https://auth.docker.io/token', service: 'registry.docker.io', scope: 'repository:library/busybox:pull,push' } },
  ]);
  assert.deepEqual(parseWwwAuthenticate('Basic realm="nodelet-test"'), [{ scheme: 'basic', params: { realm: 'nodelet-test' } }]);
  assert.deepEqual(parseWwwAuthenticate('Basic realm="a, b", Bearer realm="https://t/x" , service=svc,error="insufficient_scope"'), [
    { scheme: 'basic', params: { realm: 'a, b' } },
    { scheme: 'bearer', params: { realm: 'https://t/x', service: 'svc', error: 'insufficient_scope' } },
  ]);
  assert.deepEqual(parseWwwAuthenticate('bearer  Realm = "r\\"q" ,scope=""'), [{ scheme: 'bearer', params: { realm: 'r"q', scope: '' } }]);
  assert.deepEqual(parseWwwAuthenticate('Negotiate abc==, Basic realm=x'), [
    { scheme: 'negotiate', params: {} },
    { scheme: 'basic', params: { realm: 'x' } },
  ]);
  assert.deepEqual(parseWwwAuthenticate(''), []);
});

test('CRI AuthConfig: username/password, or auth as base64 user:pass (the password may hold colons), tokens', () => {
  const empty = { username: '', password: '', auth: '', server_address: '', identity_token: '', registry_token: '' };
  assert.deepEqual(credentialsFrom(undefined), {});
  assert.deepEqual(credentialsFrom(empty), {});
  assert.deepEqual(credentialsFrom({ ...empty, username: 'u', password: 'p' }), { username: 'u', password: 'p' });
  assert.deepEqual(credentialsFrom({ ...empty, auth: Buffer.from('u:p:q').toString('base64') }), { username: 'u', password: 'p:q' });
  assert.deepEqual(credentialsFrom({ ...empty, identity_token: 'refresh', registry_token: 'bearer' }), { identityToken: 'refresh', registryToken: 'bearer' });
});

test('tokens are cached until shortly before they expire', () => {
  let now = 1_000_000;
  const cache = new TokenCache(() => now);
  cache.set('k', 't', 300);
  assert.equal(cache.get('k'), 't');
  now += 289_000;
  assert.equal(cache.get('k'), 't');
  now += 2000;
  assert.equal(cache.get('k'), undefined, 'renewed 10 s early');
  cache.set('k', 't2', 60);
  assert.equal(cache.get('other'), undefined);
  cache.drop('k');
  assert.equal(cache.get('k'), undefined);
});

test("the registry's own words from an error body", () => {
  assert.equal(serverMessage('{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}'), 'unauthorized: authentication required');
  assert.equal(serverMessage('{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}'), 'manifest unknown');
  assert.equal(serverMessage('{"errors":[{"code":"DENIED","message":"a"},{"code":"X","message":"b"}]}'), 'denied: a; x: b');
  assert.equal(serverMessage('{"details":"incorrect username or password"}'), 'incorrect username or password');
  assert.equal(serverMessage('no such blob\n'), 'no such blob');
  assert.equal(serverMessage('<html><body>bad gateway</body></html>'), '');
  assert.equal(serverMessage(''), '');
});
