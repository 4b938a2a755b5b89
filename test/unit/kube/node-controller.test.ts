// The node controller on a fake clock: status patched on change or every report period, lease renewed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Lease, V1Node, V1NodeStatus } from '@kubernetes/client-node';
import { defaultConfig } from '../../../src/config/config.js';
import type { NodeApi } from '../../../src/kube/client.js';
import { RuntimeState } from '../../../src/agent/runtime-state.js';
import { NodeController } from '../../../src/kube/node-controller.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeClock } from '../../../src/util/clock.js';
import { FakeRuntime } from '../runtime/fake-runtime.js';

class FakeNodeApi implements NodeApi {
  node?: V1Node;
  lease?: V1Lease;
  statusPatches: V1NodeStatus[] = [];
  leaseWrites = 0;
  async getNode() {
    return this.node;
  }
  async createNode(n: V1Node) {
    this.node = { ...n, metadata: { ...n.metadata, uid: 'node-uid' } };
    return this.node;
  }
  async patchNode(_name: string, patch: object) {
    this.node = { ...this.node, ...(patch as V1Node) };
    return this.node!;
  }
  async patchNodeStatus(_name: string, status: V1NodeStatus) {
    this.statusPatches.push(status);
    this.node = { ...this.node, status };
    return this.node!;
  }
  async getLease() {
    return this.lease;
  }
  async createLease(_ns: string, l: V1Lease) {
    this.leaseWrites++;
    return (this.lease = l);
  }
  async replaceLease(_ns: string, l: V1Lease) {
    this.leaseWrites++;
    return (this.lease = l);
  }
}

const settle = async () => {
  for (let i = 0; i < 30; i++) await new Promise((r) => setImmediate(r));
};

test('registers, then patches status only when it changes or the report period passes; renews the lease every interval', async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi();
  const runtime = new FakeRuntime(clock);
  let down = false;
  runtime.status = async () => {
    if (down) throw new Error('container runtime is not reachable at unix:///x (Status): connection refused');
    return { status: { conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, { type: 'NetworkReady', status: true, reason: '', message: '' }] } } as never;
  };
  const config = { ...defaultConfig(), nodeName: 'n1', nodeStatusUpdateFrequencyMs: 10_000, nodeStatusReportFrequencyMs: 60_000, nodeLeaseRenewIntervalMs: 10_000 };
  const host = () => ({ hostname: 'h', machineID: 'm', systemUUID: '', bootID: 'b', kernelVersion: 'k', osImage: 'o', operatingSystem: 'linux', architecture: 'amd64', cpus: 2, memoryBytes: 2 ** 30, ephemeralStorageBytes: 1e9 });
  const pressure = () => new Set<never>();
  const state = new RuntimeState(runtime, clock);
  await state.refresh();
  const nc = new NodeController({ api, runtimeHealth: () => state.health(), config, nodeIP: '10.0.0.1', kubeletVersion: 'v0', port: () => 1, clock, logger: silentLogger(), host, pressure });
  await nc.start();
  assert.equal(api.node?.metadata?.name, 'n1');
  assert.equal(api.statusPatches.length, 1);
  assert.equal(api.leaseWrites, 1);
  assert.equal(api.lease?.metadata?.ownerReferences?.[0]?.uid, 'node-uid');
  // The agent reads the runtime every few seconds; here at each step.
  for (let i = 0; i < 5; i++) {
    clock.step(10_000);
    await state.refresh();
    await settle();
  }
  assert.equal(api.statusPatches.length, 1, 'nothing changed within the report period: no patch');
  assert.equal(api.leaseWrites, 6, 'lease renewed every 10 s');
  clock.step(10_000);
  await state.refresh();
  await settle();
  assert.equal(api.statusPatches.length, 2, 'reported once the report period passed');
  down = true;
  // Silent for over 30 s: down, in the next status.
  for (let i = 0; i < 4; i++) {
    clock.step(10_000);
    await state.refresh();
    await settle();
  }
  assert.equal(api.statusPatches.length, 3, 'a change is reported at once');
  const ready = api.statusPatches[2]!.conditions!.find((c) => c.type === 'Ready')!;
  assert.equal(ready.status, 'False');
  assert.match(ready.message!, /^container runtime is down: /);
  await nc.stop();
});

test('adopting an existing node: labels made present, taints never patched (NodeRestriction refuses a node that changes its own)', async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi();
  const patches: object[] = [];
  const patchNode = api.patchNode.bind(api);
  api.patchNode = async (name: string, patch: object) => (patches.push(patch), patchNode(name, patch));
  api.node = { metadata: { name: 'n1', uid: 'u', labels: { other: 'x' } }, spec: { taints: [{ key: 'someone/else', effect: 'NoSchedule' }] }, status: {} };
  const runtime = new FakeRuntime(clock);
  const state = new RuntimeState(runtime, clock);
  const config = { ...defaultConfig(), nodeName: 'n1', nodeLabels: { 'nodelet.io/agent': 'true' }, registerWithTaints: [{ key: 'nodelet.io/agent', value: 'true', effect: 'NoSchedule' as const }] };
  const host = () => ({ hostname: 'h', machineID: 'm', systemUUID: '', bootID: 'b', kernelVersion: 'k', osImage: 'o', operatingSystem: 'linux', architecture: 'amd64', cpus: 2, memoryBytes: 2 ** 30, ephemeralStorageBytes: 1e9 });
  const pressure = () => new Set<never>();
  const warnings: string[] = [];
  const logger = silentLogger();
  logger.warn = ((m: string) => (warnings.push(m), logger)) as never;
  const nc = new NodeController({ api, runtimeHealth: () => state.health(), config, nodeIP: '10.0.0.1', kubeletVersion: 'v0', port: () => 1, clock, logger, host, pressure });
  await nc.start();
  await nc.stop();
  assert.equal(patches.length, 1);
  assert.deepEqual(Object.keys(patches[0]!), ['metadata'], 'no spec: taints are left as they are');
  assert.equal((patches[0] as { metadata: { labels: Record<string, string> } }).metadata.labels['nodelet.io/agent'], 'true');
  assert.deepEqual(api.node?.spec?.taints, [{ key: 'someone/else', effect: 'NoSchedule' }]);
  assert.ok(warnings.some((w) => /lacks taints of registerWithTaints/.test(w)), 'a missing taint is said, not added');
});

test('after the API server could not be reached, the next status is sent even if unchanged (the controller may have set Ready to Unknown meanwhile)', async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi();
  const runtime = new FakeRuntime(clock);
  const config = { ...defaultConfig(), nodeName: 'n1', nodeStatusUpdateFrequencyMs: 10_000, nodeStatusReportFrequencyMs: 300_000, nodeLeaseRenewIntervalMs: 10_000 };
  const host = () => ({ hostname: 'h', machineID: 'm', systemUUID: '', bootID: 'b', kernelVersion: 'k', osImage: 'o', operatingSystem: 'linux', architecture: 'amd64', cpus: 2, memoryBytes: 2 ** 30, ephemeralStorageBytes: 1e9 });
  const pressure = () => new Set<never>();
  const state = new RuntimeState(runtime, clock);
  await state.refresh();
  const nc = new NodeController({ api, runtimeHealth: () => state.health(), config, nodeIP: '10.0.0.1', kubeletVersion: 'v0', port: () => 1, clock, logger: silentLogger(), host, pressure });
  await nc.start();
  assert.equal(api.statusPatches.length, 1);
  // The API server goes away for a while: lease renewals fail (and status patches would).
  const replace = api.replaceLease.bind(api);
  const refused = async () => {
    throw Object.assign(new Error('connect ECONNREFUSED'), { code: 0 });
  };
  const patchStatus = api.patchNodeStatus.bind(api);
  api.replaceLease = refused;
  api.patchNodeStatus = refused;
  for (let i = 0; i < 3; i++) {
    clock.step(10_000);
    await state.refresh();
    await settle();
  }
  assert.equal(api.statusPatches.length, 1, 'nothing changed: nothing sent');
  api.replaceLease = replace;
  api.patchNodeStatus = patchStatus;
  clock.step(10_000);
  await state.refresh();
  await settle();
  assert.equal(api.statusPatches.length, 2, 'sent again once the API server answers, though unchanged');
  clock.step(10_000);
  await state.refresh();
  await settle();
  assert.equal(api.statusPatches.length, 2, 'and then only on change again');
  await nc.stop();
});
