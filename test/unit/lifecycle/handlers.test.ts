// Lifecycle hook handlers: what succeeds and what fails, in the kubelet's words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Pod } from '@kubernetes/client-node';
import { runHandler, type HookDeps } from '../../../src/lifecycle/handlers.js';

const pod: V1Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u' } };
const c = { name: 'c' };
const deps = (exitCode = 0, stderr = ''): HookDeps => ({
  runInContainer: async () => ({ stdout: Buffer.from('out'), stderr: Buffer.from(stderr), exitCode }),
  podIP: async () => '127.0.0.1',
  // A long sleep (cut short by the test) must not hold the process; a short one must hold it, or the
  // event loop may empty while a test still waits on it.
  sleep: (ms) => new Promise((r) => (ms > 1000 ? setTimeout(r, ms).unref() : setTimeout(r, ms))),
});

test('exec: exit 0 is done; another code is the kubelet\'s message with the output', async () => {
  assert.equal(await runHandler(deps(), pod, c, 'id', { exec: { command: ['true'] } }), undefined);
  assert.equal(
    await runHandler(deps(2, 'err'), pod, c, 'id', { exec: { command: ['sh', '-c', 'exit 2'] } }),
    'Exec lifecycle hook ([sh -c exit 2]) for Container "c" in Pod "p_ns(u)" failed - error: command \'sh -c exit 2\' exited with 2: err, message: "outerr"',
  );
});

test('httpGet: any HTTP answer is a success (500 included); no answer fails, with the User-Agent of hooks', async () => {
  let agent = '';
  const s = http.createServer((req, res) => {
    agent = String(req.headers['user-agent']);
    res.writeHead(500).end();
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  try {
    assert.equal(await runHandler(deps(), pod, c, 'id', { httpGet: { path: '/hook', port } }), undefined);
    assert.equal(agent, 'kube-lifecycle/1.37');
  } finally {
    await new Promise((r) => s.close(r));
  }
  const msg = await runHandler(deps(), pod, c, 'id', { httpGet: { path: '/hook', port } });
  assert.equal(msg, `HTTP lifecycle hook (/hook) for Container "c" in Pod "p_ns(u)" failed - error: Get "http://127.0.0.1:${port}/hook": dial tcp 127.0.0.1:${port}: connect: connection refused`);
});

test('sleep: done after its seconds; cut short, it fails as the kubelet words it', async () => {
  assert.equal(await runHandler(deps(), pod, c, 'id', { sleep: { seconds: 0 } }), undefined);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 20);
  assert.equal(await runHandler(deps(), pod, c, 'id', { sleep: { seconds: 30 } }, ac.signal), 'Sleep lifecycle hook (30) for Container "c" in Pod "p_ns(u)" failed - error: container terminated before sleep hook finished');
});
