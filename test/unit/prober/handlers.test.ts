// The probe handlers against real sockets on loopback: httpGet (statuses, redirects, headers,
// refusals, timeouts), tcpSocket, grpc (the health protocol) and exec (exit codes, timeouts), each
// with the kubelet's result and words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import { httpGetRequest, httpProbe } from '../../../src/prober/http.js';
import { tcpProbe } from '../../../src/prober/tcp.js';
import { grpcProbe } from '../../../src/prober/grpc.js';
import { execProbe, expandProbeCommand, goDuration } from '../../../src/prober/exec.js';
import { resolveContainerPort } from '../../../src/prober/port.js';
import { CriDeadlineExceededError } from '../../../src/cri/errors.js';

async function server(handler: http.RequestListener): Promise<{ port: number; close: () => Promise<void> }> {
  const s = http.createServer(handler);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { port: (s.address() as AddressInfo).port, close: () => new Promise((r) => s.close(() => r())) };
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

const container = { name: 'c', ports: [{ name: 'web', containerPort: 8080 }] };

test('ports: a number, or a named port of the container; a string is always a name', () => {
  assert.equal(resolveContainerPort(81, container), 81);
  assert.equal(resolveContainerPort('web', container), 8080);
  assert.throws(() => resolveContainerPort('8080', container), /port "8080" not found/);
  assert.throws(() => resolveContainerPort(0, container), /invalid port number: 0/);
});

test('httpGet: 2xx succeeds with the body, 4xx/5xx fail with the status code, headers as the kubelet sends them', async () => {
  const seen: http.IncomingHttpHeaders[] = [];
  const s = await server((req, res) => {
    seen.push(req.headers);
    if (req.url === '/ok') return void res.end('fine');
    res.writeHead(Number(req.url!.slice(1))).end();
  });
  try {
    const req = (path: string, headers: Array<{ name: string; value: string }> = []) =>
      httpGetRequest({ path, port: s.port, httpHeaders: headers }, container, '127.0.0.1');
    assert.deepEqual(await httpProbe(req('/ok'), 1000), { result: 'success', output: 'fine' });
    assert.equal(seen[0]!['user-agent'], 'kube-probe/1.37');
    assert.equal(seen[0]!.accept, '*/*');
    assert.deepEqual(await httpProbe(req('/500'), 1000), { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
    assert.deepEqual(await httpProbe(req('/404'), 1000), { result: 'failure', output: 'HTTP probe failed with statuscode: 404' });
    await httpProbe(req('/ok', [{ name: 'Host', value: 'example.test' }, { name: 'X-Custom', value: 'v' }, { name: 'Accept', value: '' }]), 1000);
    const h = seen.at(-1)!;
    assert.equal(h.host, 'example.test');
    assert.equal(h['x-custom'], 'v');
    assert.equal(h.accept, undefined, 'an empty Accept means none');
  } finally {
    await s.close();
  }
});

test('httpGet: redirects on the same host are followed; one to another host is a warning, as the kubelet judges it', async () => {
  const s = await server((req, res) => {
    if (req.url === '/here') return void res.writeHead(302, { location: '/ok' }).end();
    if (req.url === '/away') return void res.writeHead(302, { location: 'http://localhost:1/elsewhere' }).end('moved');
    if (req.url === '/loop') return void res.writeHead(302, { location: '/loop' }).end();
    res.end('landed');
  });
  try {
    const req = (path: string) => httpGetRequest({ path, port: s.port }, container, '127.0.0.1');
    assert.deepEqual(await httpProbe(req('/here'), 1000), { result: 'success', output: 'landed' });
    assert.deepEqual(await httpProbe(req('/away'), 1000), { result: 'warning', output: 'Probe terminated redirects, Response body: moved' });
    assert.deepEqual(await httpProbe(req('/loop'), 2000), { result: 'failure', output: `Get "http://127.0.0.1:${s.port}/loop": stopped after 10 redirects` });
  } finally {
    await s.close();
  }
});

test('httpGet: nothing listening, or no answer within the timeout, fails in Go\'s words', async () => {
  const port = await freePort();
  const refused = await httpProbe(httpGetRequest({ path: '/healthz', port }, container, '127.0.0.1'), 1000);
  assert.deepEqual(refused, { result: 'failure', output: `Get "http://127.0.0.1:${port}/healthz": dial tcp 127.0.0.1:${port}: connect: connection refused` });
  const s = await server(() => undefined); // never answers
  try {
    const slow = await httpProbe(httpGetRequest({ path: '/', port: s.port }, container, '127.0.0.1'), 300);
    assert.equal(slow.result, 'failure');
    assert.match(slow.output, /context deadline exceeded \(Client\.Timeout exceeded while awaiting headers\)$/);
  } finally {
    await s.close();
  }
});

test('tcpSocket: a connection that opens succeeds; a closed port fails', async () => {
  const s = await server((_q, r) => r.end());
  try {
    assert.deepEqual(await tcpProbe('127.0.0.1', s.port, 1000), { result: 'success', output: '' });
  } finally {
    await s.close();
  }
  const port = await freePort();
  assert.deepEqual(await tcpProbe('127.0.0.1', port, 1000), { result: 'failure', output: `dial tcp 127.0.0.1:${port}: connect: connection refused` });
});

test('grpc: the health protocol\'s answer decides; a server without it fails with the kubelet\'s message', async () => {
  const def = protoLoader.loadSync(fileURLToPath(new URL('../../../../proto/health.proto', import.meta.url)), { keepCase: true, enums: String, defaults: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } } };
  const statuses: Record<string, string> = { '': 'SERVING', sick: 'NOT_SERVING' };
  const srv = new grpc.Server();
  srv.addService(pkg.grpc.health.v1.Health.service, {
    Check: (call: grpc.ServerUnaryCall<{ service: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => cb(null, { status: statuses[call.request.service] ?? 'SERVICE_UNKNOWN' }),
  });
  const port = await new Promise<number>((r, j) => srv.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))));
  const bare = new grpc.Server();
  const barePort = await new Promise<number>((r, j) => bare.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))));
  try {
    assert.deepEqual(await grpcProbe('127.0.0.1', port, '', 1), { result: 'success', output: 'service healthy' });
    assert.deepEqual(await grpcProbe('127.0.0.1', port, 'sick', 1), { result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
    const un = await grpcProbe('127.0.0.1', barePort, '', 1);
    assert.equal(un.result, 'failure');
    assert.match(un.output, /^error: this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\): /);
    const closed = await freePort();
    assert.deepEqual(await grpcProbe('127.0.0.1', closed, '', 1), { result: 'failure', output: `timeout: failed to connect service "127.0.0.1:${closed}" within 1s: context deadline exceeded` });
  } finally {
    srv.forceShutdown();
    bare.forceShutdown();
  }
});

test('exec: exit 0 succeeds, another code fails with the output; a timeout fails in the kubelet\'s words; other errors are unknown', async () => {
  const out = (s: string) => Buffer.from(s);
  assert.deepEqual(await execProbe(async () => ({ stdout: out('ok\n'), stderr: out(''), exitCode: 0 }), 'id', ['true'], 1), { result: 'success', output: 'ok\n' });
  assert.deepEqual(await execProbe(async () => ({ stdout: out('a'), stderr: out('b'), exitCode: 3 }), 'id', ['false'], 1), { result: 'failure', output: 'ab' });
  const timedOut = await execProbe(async () => Promise.reject(new CriDeadlineExceededError('ExecSync', 'unix:///x', 2000)), 'id', ['/bin/sh', '-c', 'sleep 10'], 2);
  assert.deepEqual(timedOut, { result: 'failure', output: 'command timed out: "/bin/sh -c sleep 10" timed out after 2s' });
  const broken = await execProbe(async () => Promise.reject(new Error('rpc broke')), 'id', ['x'], 1);
  assert.equal(broken.result, 'unknown');
  assert.equal(broken.error?.message, 'rpc broke');
  assert.equal(goDuration(90), '1m30s');
  assert.deepEqual(expandProbeCommand(['echo', '$(A)', '$(B)'], { name: 'c', env: [{ name: 'A', value: 'x' }, { name: 'B', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }), ['echo', 'x', '$(B)']);
});
