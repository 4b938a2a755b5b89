// The CRI client's error mapping and version check, against real gRPC servers on unix sockets in a temp dir.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { CriClient, checkRuntimeVersion, normalizeEndpoint } from '../../../src/cri/client.js';
import { CriDeadlineExceededError, CriNotFoundError, RuntimeUnavailableError, VersionNotSupportedError, isNotFound } from '../../../src/cri/errors.js';
import { projectRoot } from '../../support/cluster.js';

const dir = mkdtempSync(join(tmpdir(), 'nodelet-cri-'));
const servers: grpc.Server[] = [];
after(() => {
  for (const s of servers) s.forceShutdown();
  rmSync(dir, { recursive: true, force: true });
});

type Handler = (call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => void;

/** Serves a RuntimeService with only the given methods; the rest answer UNIMPLEMENTED. */
async function serve(name: string, handlers: Record<string, Handler>): Promise<string> {
  const def = protoLoader.loadSync(join(projectRoot, 'proto/api.proto'), { keepCase: true, enums: String, longs: String, defaults: true });
  const pkg = grpc.loadPackageDefinition(def) as any;
  const server = new grpc.Server();
  server.addService(pkg.runtime.v1.RuntimeService.service, handlers);
  const sock = join(dir, `${name}.sock`);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  servers.push(server);
  return `unix://${sock}`;
}

test('endpoints are normalised to unix:// targets and anything else is refused', () => {
  assert.equal(normalizeEndpoint('unix:///run/x.sock'), 'unix:///run/x.sock');
  assert.equal(normalizeEndpoint('/run/x.sock'), 'unix:///run/x.sock');
  assert.equal(normalizeEndpoint('unix:/run/x.sock'), 'unix:///run/x.sock');
  assert.throws(() => normalizeEndpoint('tcp://127.0.0.1:1'), /invalid runtime endpoint/);
});

test('a runtime that is not there gives one clear error naming the endpoint', async () => {
  const endpoint = `unix://${join(dir, 'nobody-here.sock')}`;
  const cri = new CriClient(endpoint);
  try {
    const err = await cri.version('0.1.0').then(
      () => assert.fail('expected an error'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof RuntimeUnavailableError, `got ${String(err)}`);
    assert.equal(err.endpoint, endpoint);
    assert.equal(err.message, `container runtime is not reachable at ${endpoint} (Version): no socket at that path (is the runtime running?)`);
  } finally {
    cri.close();
  }
});

test('a runtime that crashed and left its socket behind is reported as connection refused', async () => {
  const sock = join(dir, 'crashed.sock');
  // A listener killed with SIGKILL cannot unlink its socket: the file stays, nobody accepts.
  const child = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  assert.equal(child.signal, 'SIGKILL');
  assert.ok(existsSync(sock));
  const cri = new CriClient(`unix://${sock}`);
  try {
    await assert.rejects(cri.listContainers(), (e: unknown) => {
      assert.ok(e instanceof RuntimeUnavailableError, String(e));
      assert.equal(e.message, `container runtime is not reachable at unix://${sock} (ListContainers): connection refused (the socket exists but nothing listens)`);
      return true;
    });
  } finally {
    cri.close();
  }
});

test('NotFound from the runtime becomes CriNotFoundError', async () => {
  const endpoint = await serve('notfound', {
    ContainerStatus: (_call, cb) => cb({ code: grpc.status.NOT_FOUND, details: 'container "abc" in namespace "k8s.io": not found' }),
  });
  const cri = new CriClient(endpoint);
  try {
    const err = await cri.containerStatus('abc').catch((e: unknown) => e);
    assert.ok(err instanceof CriNotFoundError);
    assert.ok(isNotFound(err));
    assert.match((err as Error).message, /ContainerStatus: not found: container "abc"/);
  } finally {
    cri.close();
  }
});

test('a runtime that never answers hits the per-call deadline', async () => {
  const endpoint = await serve('hung', {
    Version: () => undefined, // never calls back
    StopContainer: () => undefined,
  });
  const calls: Array<[string, boolean]> = [];
  const cri = new CriClient(endpoint, { statusTimeoutMs: 200, requestTimeoutMs: 300, observer: (m, _s, e) => calls.push([m, !!e]) });
  try {
    const started = Date.now();
    await assert.rejects(cri.version('0.1.0'), (e: unknown) => {
      assert.ok(e instanceof CriDeadlineExceededError, String(e));
      assert.equal((e as Error).message, `Version on ${endpoint} did not answer within 200 ms`);
      return true;
    });
    assert.ok(Date.now() - started < 2000);
    // StopContainer's deadline is the request timeout plus the grace period it asked for.
    await assert.rejects(cri.stopContainer('x', 0), /StopContainer on .* did not answer within 300 ms/);
    assert.deepEqual(calls, [['Version', true], ['StopContainer', true]]);
  } finally {
    cri.close();
  }
});

test('the version check accepts 0.1.0 and refuses anything else with VersionNotSupportedError', async () => {
  let answer = '0.1.0';
  const endpoint = await serve('version', {
    Version: (call, cb) => cb(null, { version: answer, runtime_name: 'fake', runtime_version: '9.9.9', runtime_api_version: 'v1' }),
  });
  const cri = new CriClient(endpoint);
  try {
    const v = await checkRuntimeVersion(cri);
    assert.equal(v.runtime_name, 'fake');
    answer = '0.2.0';
    await assert.rejects(checkRuntimeVersion(cri), (e: unknown) => {
      assert.ok(e instanceof VersionNotSupportedError);
      assert.equal(e.runtimeApiVersion, '0.2.0');
      return true;
    });
  } finally {
    cri.close();
  }
});
