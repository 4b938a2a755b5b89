// The REST client's kubeconfig reading and its HTTP: statuses into ApiError, watches line by line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpCode, apiErrorMessage } from '../../../src/kube/client.js';
import { microTime } from '../../../src/kube/node-controller.js';
import { inClusterConnection, KubeconfigError, loadKubeconfig, RestClient } from '../../../src/kube/rest.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));

function kubeconfig(user: object, cluster: object = { server: 'https://127.0.0.1:6443', 'certificate-authority': 'ca.crt' }): string {
  const p = join(dir, `kc-${Math.random().toString(16).slice(2)}`);
  writeFileSync(
    p,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'c',
      contexts: [{ name: 'other', context: { cluster: 'nope', user: 'nope' } }, { name: 'c', context: { cluster: 'k', user: 'u' } }],
      clusters: [{ name: 'k', cluster }],
      users: [{ name: 'u', user }],
    }),
  );
  return p;
}

test('kubeconfig: the current context, files relative to it, inline data, token and tokenFile', () => {
  writeFileSync(join(dir, 'ca.crt'), 'CA');
  writeFileSync(join(dir, 'client.key'), 'KEY');
  writeFileSync(join(dir, 'token'), 'from-file\n');
  const a = loadKubeconfig(kubeconfig({ 'client-certificate-data': Buffer.from('CERT').toString('base64'), 'client-key': 'client.key' }));
  assert.equal(a.server, 'https://127.0.0.1:6443');
  assert.deepEqual([a.ca?.toString(), a.cert?.toString(), a.key?.toString(), a.token], ['CA', 'CERT', 'KEY', undefined]);
  assert.equal(loadKubeconfig(kubeconfig({ token: 'abc' })).token?.(), 'abc');
  assert.equal(loadKubeconfig(kubeconfig({ tokenFile: 'token' })).token?.(), 'from-file');
  assert.equal(loadKubeconfig(kubeconfig({}, { server: 'https://x', 'insecure-skip-tls-verify': true })).insecureSkipTLSVerify, true);
  assert.throws(() => loadKubeconfig(kubeconfig({ exec: { command: 'aws' } })), (e: Error) => e instanceof KubeconfigError && /exec or auth-provider credentials, which nodelet does not support/.test(e.message));
  assert.throws(() => loadKubeconfig(kubeconfig({}, { 'certificate-authority-data': 'eA==' })), /has no server/);
  assert.throws(() => loadKubeconfig(join(dir, 'missing')), /ENOENT/);
});

test('in cluster: the service host and port, the mounted CA and token', () => {
  writeFileSync(join(dir, 'ca.crt'), 'CA');
  writeFileSync(join(dir, 'token'), 'sa-token');
  const c = inClusterConnection({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, dir);
  assert.equal(c.server, 'https://[fd00::1]:443');
  assert.equal(c.token?.(), 'sa-token');
  assert.throws(() => inClusterConnection({}, dir), /not in a cluster/);
});

test('a MicroTime has six fractional digits', () => {
  assert.equal(microTime(Date.UTC(2026, 10, 29, 12, 0, 0, 123)), '2026-11-29T12:00:00.123000Z' as never);
});

test('requests: JSON both ways, the token, statuses into ApiError; a watch line by line', async () => {
  const seen: Array<{ method?: string; url?: string; auth?: string; type?: string; body: string }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, type: req.headers['content-type'], body });
      if (req.url?.startsWith('/api/v1/pods?') && req.url.includes('watch=true')) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MODIFIED",');
        setTimeout(() => res.end('"object":{"metadata":{"name":"a"}}}\n'), 20);
      } else if (req.url === '/api/v1/namespaces/ns/pods/missing') {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 404, message: 'pods "missing" not found' }));
      } else {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ echoed: body ? JSON.parse(body) : null }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const rest = new RestClient({ server: `http://127.0.0.1:${port}`, token: () => 't0k' });
  const counted: string[] = [];
  rest.observer = (method, code) => counted.push(`${method} ${code}`);
  try {
    const r = await rest.request<{ echoed: unknown }>('PATCH', '/api/v1/nodes/n1/status', { body: { status: { x: 1 } }, contentType: 'application/merge-patch+json' });
    assert.deepEqual(r.echoed, { status: { x: 1 } });
    assert.deepEqual([seen[0]!.method, seen[0]!.auth, seen[0]!.type], ['PATCH', 'Bearer t0k', 'application/merge-patch+json']);
    await rest.request('GET', '/api/v1/pods', { query: { fieldSelector: 'spec.nodeName=n1', resourceVersion: '' } });
    assert.equal(seen[1]!.url, '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1', 'empty query values are left out');
    const err = await rest.request('GET', '/api/v1/namespaces/ns/pods/missing').catch((e: unknown) => e);
    assert.equal(httpCode(err), 404);
    assert.equal(apiErrorMessage(err), '404 pods "missing" not found');
    const events: string[] = [];
    const w = rest.watch('/api/v1/pods', { resourceVersion: '5' }, (type, obj) => events.push(`${type} ${(obj as { metadata: { name: string } }).metadata.name}`));
    await w.done;
    assert.deepEqual(events, ['ADDED a', 'MODIFIED a'], 'an event split across chunks is put together');
    assert.deepEqual(counted, ['PATCH 200', 'GET 200', 'GET 404', 'GET 200'], 'every request counted once, the watch too');
    const unanswered = new RestClient({ server: 'http://127.0.0.1:1' });
    unanswered.observer = (method, code) => counted.push(`${method} ${code}`);
    const refused = await unanswered.request('GET', '/api').catch((e: unknown) => e);
    assert.equal(counted.at(-1), 'GET <error>', 'a request without an answer counted as an error');
    assert.equal(httpCode(refused), 0);
    assert.match(String((refused as Error).message), /ECONNREFUSED/);
  } finally {
    rest.close();
    server.close();
  }
});
