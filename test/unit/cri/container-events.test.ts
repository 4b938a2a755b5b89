// CRI GetContainerEvents end to end over a unix socket: the process runtime's server streams what
// its event hub emits (type, time, the pod's sandbox status, its containers' statuses) to nodelet's
// CRI client; a runtime that lacks the call (containerd 1.6) gives the client an Unimplemented error.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { CriClient } from '../../../src/cri/client.js';
import { CriError } from '../../../src/cri/errors.js';
import type { ContainerEventResponse } from '../../../src/cri/types.js';
import { ContainerEventHub } from '../../../src/procruntime/container-events.js';
import type { ProcessRuntime } from '../../../src/procruntime/runtime.js';
import { ProcessRuntimeServer } from '../../../src/procruntime/server.js';
import { FakeClock } from '../../../src/util/clock.js';
import { projectRoot } from '../../support/cluster.js';

const dir = mkdtempSync(join(tmpdir(), 'nodelet-events-'));
const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const until = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), what);
};

test('the process runtime streams each event with the pod statuses; the stream ends when the client cancels', async () => {
  const clock = new FakeClock(Date.UTC(2026, 11, 3));
  const hub = new ContainerEventHub(clock);
  const fake = { events: hub, stop: () => undefined } as unknown as ProcessRuntime;
  const server = new ProcessRuntimeServer(fake);
  const sock = join(dir, 'rt.sock');
  await server.listen(sock);
  cleanups.push(() => server.close());
  const client = new CriClient(`unix://${sock}`);
  cleanups.push(() => client.close());

  const got: ContainerEventResponse[] = [];
  let opened = 0;
  let ended: Error | undefined;
  const stream = client.watchContainerEvents({ onOpen: () => opened++, onEvent: (e) => got.push(e), onEnd: (err) => (ended = err) });
  await until(() => opened === 1 && hub.listening, 'the stream opens');

  const sandbox = { id: 'sb1', metadata: { name: 'p', uid: 'uid-1', namespace: 'ns', attempt: 0 }, state: 'SANDBOX_READY', created_at: '1', labels: {}, annotations: {} };
  const container = { id: 'c1', metadata: { name: 'app', attempt: 0 }, state: 'CONTAINER_EXITED', exit_code: 3, reason: 'Error', labels: {}, annotations: {} };
  hub.emit('CONTAINER_STARTED_EVENT', 'c1', Promise.resolve({ sandbox, containers: [{ ...container, state: 'CONTAINER_RUNNING', exit_code: 0, reason: '' }] }));
  hub.emit('CONTAINER_STOPPED_EVENT', 'c1', Promise.resolve({ sandbox, containers: [container] }));
  hub.emit('CONTAINER_DELETED_EVENT', 'sb1', Promise.reject(new Error('gone')));
  await until(() => got.length === 3, 'three events arrive');

  assert.deepEqual(got.map((e) => [e.container_id, e.container_event_type]), [['c1', 'CONTAINER_STARTED_EVENT'], ['c1', 'CONTAINER_STOPPED_EVENT'], ['sb1', 'CONTAINER_DELETED_EVENT']]);
  assert.equal(got[1]!.created_at, String(BigInt(clock.now()) * 1_000_000n));
  assert.equal(got[1]!.pod_sandbox_status?.metadata?.uid, 'uid-1');
  assert.equal(got[1]!.pod_sandbox_status?.state, 'SANDBOX_READY');
  assert.deepEqual(got[1]!.containers_statuses.map((c) => [c.id, c.state, c.exit_code, c.reason]), [['c1', 'CONTAINER_EXITED', 3, 'Error']]);
  assert.equal(got[2]!.pod_sandbox_status, null, 'a snapshot that failed sends no status');

  stream.cancel();
  await until(() => !hub.listening, 'the server forgets a cancelled stream');
  assert.equal(ended, undefined, 'a cancel is not reported as an end');
});

test('a runtime without GetContainerEvents ends the stream with Unimplemented, never opening it', async () => {
  const def = protoLoader.loadSync(join(projectRoot, 'proto/api.proto'), { keepCase: true, enums: String, longs: String, defaults: true });
  const pkg = grpc.loadPackageDefinition(def) as any;
  const server = new grpc.Server();
  server.addService(pkg.runtime.v1.RuntimeService.service, {});
  const sock = join(dir, 'old.sock');
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  cleanups.push(() => server.forceShutdown());
  const client = new CriClient(`unix://${sock}`);
  cleanups.push(() => client.close());
  let opened = false;
  let ended: Error | undefined;
  client.watchContainerEvents({ onOpen: () => (opened = true), onEvent: () => undefined, onEnd: (err) => (ended = err) });
  await until(() => ended !== undefined, 'the stream ends');
  assert.ok(ended instanceof CriError && ended.code === 'Unimplemented', String(ended));
  assert.equal(opened, false);
});

test('closing the runtime ends the open streams (it does not wait for them forever); the client hears the end', async () => {
  const hub = new ContainerEventHub(new FakeClock());
  const server = new ProcessRuntimeServer({ events: hub, stop: () => undefined } as unknown as ProcessRuntime);
  const sock = join(dir, 'closing.sock');
  await server.listen(sock);
  const client = new CriClient(`unix://${sock}`);
  cleanups.push(() => client.close());
  let opened = false;
  let ended: Error | undefined;
  client.watchContainerEvents({ onOpen: () => (opened = true), onEvent: () => undefined, onEnd: (err) => (ended = err) });
  await until(() => opened, 'the stream opens');
  const closed = await Promise.race([server.close().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
  assert.equal(closed, true, 'close() returned');
  await until(() => ended !== undefined, 'the client is told');
  assert.equal(hub.listening, false);
});
