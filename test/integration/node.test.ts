// Being a node, on the real cluster: registration and status, the Lease heartbeat, Ready following
// the runtime, admission, config errors, and a clean SIGTERM that leaves pods running.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { CriClient } from '../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';
import { container, core, createPod, getPod, podEvents, running, waitPod } from '../support/kube.js';

const env = clusterEnv();
const cri = new CriClient(env.runtimeEndpoint);
const kc = new k8s.KubeConfig();
kc.loadFromFile(env.kubeconfig);
const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
const cli = join(projectRoot, 'dist/src/cli/main.js');
const tmp = mkdtempSync(join(tmpdir(), 'nodelet-node-'));
let agent: RunningAgent;
let node: string;

before(async () => {
  node = uniqueNodeName('it-node');
  const started = Date.now();
  agent = await startAgent(node, ['--max-pods', '3', '--node-status-update-frequency', '2s']);
  (globalThis as { agentStartMs?: number }).agentStartMs = Date.now() - started;
});
after(async () => {
  await cleanupAgent(agent);
  cri.close();
});

const readNode = () => core.readNode({ name: node });
const ready = (n: V1Node) => n.status?.conditions?.find((c) => c.type === 'Ready');

test('the node is Ready within 5 s of the agent starting, with capacity, allocatable, nodeInfo and addresses', async () => {
  const n = await eventually('node Ready', 5000, async () => {
    const x = await readNode().catch(() => undefined);
    return x && ready(x)?.status === 'True' ? x : undefined;
  });
  assert.equal(ready(n)?.reason, 'KubeletReady');
  const startMs = (globalThis as { agentStartMs?: number }).agentStartMs!;
  assert.ok(startMs < 5000, `the agent served /healthz ${startMs} ms after it was started, its node registered`);
  for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure']) assert.equal(n.status!.conditions!.find((c) => c.type === type)?.status, 'False', type);
  assert.equal(n.metadata!.labels!['kubernetes.io/hostname'], node);
  assert.equal(n.metadata!.labels!['kubernetes.io/os'], 'linux');
  assert.ok(n.metadata!.labels!['kubernetes.io/arch']);
  const cap = n.status!.capacity!;
  assert.ok(Number(cap.cpu) >= 1, `cpu ${cap.cpu}`);
  assert.match(cap.memory!, /^\d+Ki$/);
  assert.ok(Number(cap['ephemeral-storage']) > 0);
  assert.equal(cap.pods, '3');
  assert.ok(n.status!.allocatable!.memory);
  const info = n.status!.nodeInfo!;
  assert.match(info.containerRuntimeVersion, /^containerd:\/\/1\.\d+/);
  assert.match(info.kubeletVersion, /^v\d+\.\d+\.\d+-nodelet$/);
  assert.ok(info.kernelVersion && info.osImage && info.bootID && info.machineID);
  assert.equal(info.operatingSystem, 'linux');
  const types = n.status!.addresses!.map((a) => a.type).sort();
  assert.deepEqual(types, ['Hostname', 'InternalIP']);
  assert.equal(n.status!.daemonEndpoints!.kubeletEndpoint!.Port, agent.port);
});

test('the Lease in kube-node-lease is held by the node and renewed about every 10 s', async () => {
  const lease = await eventually('the lease', 10_000, () => coordination.readNamespacedLease({ name: node, namespace: 'kube-node-lease' }).catch(() => undefined));
  assert.equal(lease.spec!.holderIdentity, node);
  assert.equal(lease.spec!.leaseDurationSeconds, 40);
  assert.equal(lease.metadata!.ownerReferences?.[0]?.kind, 'Node');
  const first = new Date(lease.spec!.renewTime!).getTime();
  const renewed = await eventually('the lease renewed', 15_000, async () => {
    const l = await coordination.readNamespacedLease({ name: node, namespace: 'kube-node-lease' });
    const t = new Date(l.spec!.renewTime!).getTime();
    return t > first ? t : undefined;
  }, 500);
  const gap = (renewed - first) / 1000;
  assert.ok(gap >= 8 && gap <= 12, `renewed after ${gap.toFixed(1)} s`);
});

test('admission: a pod beyond maxPods is Failed OutOfpods, one asking for more CPU than allocatable OutOfcpu, SysctlForbidden, PodOSNotSupported; none reaches the runtime', async () => {
  const fits = await Promise.all([0, 1, 2].map((i) => createPod(node, `fit${i}`, { containers: [container('c', 'sleep 3600')] })));
  await Promise.all(fits.map((p) => waitPod(p, 'Running', 30_000, running)));
  const extra = await createPod(node, 'extra', { containers: [container('c', 'sleep 3600')] });
  const rejected = await waitPod(extra, 'rejected', 15_000, (p) => (p.status?.phase === 'Failed' ? p : undefined));
  assert.equal(rejected.status!.reason, 'OutOfpods');
  assert.equal(rejected.status!.message, "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3");
  const ev = (await podEvents(extra)).find((e) => e.reason === 'OutOfpods');
  assert.equal(ev?.type, 'Warning');
  await core.deleteNamespacedPod({ name: fits[0]!.metadata!.name!, namespace: 'default' });
  await eventually(`${fits[0]!.metadata!.name} gone`, 30_000, async () => (await getPod(fits[0]!).then(() => undefined, () => true)));
  const greedy = await createPod(node, 'greedy', { containers: [container('c', 'sleep 3600', { resources: { requests: { cpu: '100' } } })] });
  const tooBig = await waitPod(greedy, 'rejected', 15_000, (p) => (p.status?.phase === 'Failed' ? p : undefined));
  assert.equal(tooBig.status!.reason, 'OutOfcpu');
  assert.match(tooBig.status!.message!, /^Pod was rejected: Node didn't have enough resource: cpu, requested: 100000, used: 0, capacity: \d+$/);
  await new Promise((r) => setTimeout(r, 2000));
  for (const p of [extra, greedy]) {
    const sandboxes = await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': p.metadata!.uid! } });
    assert.equal(sandboxes.length, 0, `${p.metadata!.name} never reached the runtime`);
    assert.equal((await getPod(p)).status!.phase, 'Failed', 'and stays Failed');
  }
  // Sysctls the node does not allow, and a pod for another OS: refused before anything runs too.
  const sysctl = await createPod(node, 'sysctl', { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '10000' }] }, containers: [container('c', 'sleep 3600')] });
  const windows = await createPod(node, 'windows', { os: { name: 'windows' }, containers: [{ name: 'c', image: 'nodelet.test/busybox:1' }] });
  const forbidden = await waitPod(sysctl, 'rejected', 15_000, (p) => (p.status?.phase === 'Failed' ? p : undefined));
  assert.equal(forbidden.status!.reason, 'SysctlForbidden');
  assert.equal(forbidden.status!.message, 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted');
  const os = await waitPod(windows, 'rejected', 15_000, (p) => (p.status?.phase === 'Failed' ? p : undefined));
  assert.equal(os.status!.reason, 'PodOSNotSupported');
  await Promise.all([...fits.slice(1), extra, greedy, sysctl, windows].map((p) => core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: 'default', gracePeriodSeconds: 1 })));
});

test('stopping containerd makes the node NotReady with the runtime\'s reason; starting it makes it Ready again', async () => {
  const pid = Number(readFileSync(join(env.clusterDir, 'containerd.pid'), 'utf8'));
  process.kill(pid, 'SIGTERM');
  try {
    // As the kubelet: a runtime silent for 30 s is down (one failed call is not).
    const down = await eventually('Ready=False', 60_000, async () => {
      const c = ready(await readNode());
      return c?.status === 'False' ? c : undefined;
    }, 250);
    assert.equal(down.reason, 'KubeletNotReady');
    assert.match(down.message!, new RegExp(`^container runtime is down: container runtime is not reachable at ${env.runtimeEndpoint.replace(/[/.]/g, '\\$&')}`));
  } finally {
    execFileSync(join(projectRoot, 'hack/cluster-up.sh'), { stdio: 'ignore' });
  }
  const up = await eventually('Ready=True again', 15_000, async () => {
    const c = ready(await readNode());
    return c?.status === 'True' ? c : undefined;
  }, 250);
  assert.equal(up.reason, 'KubeletReady');
});

function config(name: string, body: string): string {
  const file = join(tmp, name);
  writeFileSync(file, `apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\nnodeName: x\n${body}`);
  return file;
}

test('a config file with an unknown field, or maxPods: -1, exits 2 with one line naming the field', () => {
  const unknown = spawnSync(process.execPath, [cli, 'run', '--config', config('unknown.yaml', 'maxPodz: 3\n')], { encoding: 'utf8' });
  assert.equal(unknown.status, 2);
  assert.equal(unknown.stderr, `nodelet: ${join(tmp, 'unknown.yaml')}: unknown field "maxPodz"\n`);
  const negative = spawnSync(process.execPath, [cli, 'run', '--config', config('negative.yaml', 'maxPods: -1\n')], { encoding: 'utf8' });
  assert.equal(negative.status, 2);
  assert.equal(negative.stderr, `nodelet: ${join(tmp, 'negative.yaml')}: maxPods: -1 is out of range (1 to 10000)\n`);
  const wrongType = spawnSync(process.execPath, [cli, 'run', '--config', config('type.yaml', 'allowPrivileged: "yes"\n')], { encoding: 'utf8' });
  assert.equal(wrongType.status, 2);
  assert.match(wrongType.stderr, /allowPrivileged: expected true or false, got string "yes"\n$/);
  const flag = spawnSync(process.execPath, [cli, 'run', '--node-name', 'x', '--bogus', '1'], { encoding: 'utf8' });
  assert.equal(flag.status, 2);
  assert.equal(flag.stderr, 'nodelet: unknown flag --bogus (see nodelet --help)\n');
  assert.equal(spawnSync(process.execPath, [cli, 'version'], { encoding: 'utf8' }).stdout, 'nodelet 0.1.0\n');
  assert.match(spawnSync(process.execPath, [cli, '--help'], { encoding: 'utf8' }).stdout, /--config FILE/);
});

test('SIGTERM with 5 running pods: exit 0 in under 5 s, the pods keep running, a restart adopts them', async () => {
  const sig = uniqueNodeName('it-sigterm');
  let a = await startAgent(sig);
  try {
    const pods: V1Pod[] = await Promise.all([0, 1, 2, 3, 4].map((i) => createPod(sig, `keep${i}`, { containers: [container('c', 'while true; do sleep 1; done')] })));
    const runningPods = await Promise.all(pods.map((p) => waitPod(p, 'Running', 30_000, running)));
    const ids = runningPods.map((p) => p.status!.containerStatuses![0]!.containerID!.replace('containerd://', ''));
    const t0 = Date.now();
    const code = await a.stop();
    const took = Date.now() - t0;
    assert.equal(code, 0);
    assert.ok(took < 5000, `stopped in ${took} ms`);
    for (const id of ids) assert.equal((await cri.containerStatus(id)).status?.state, 'CONTAINER_RUNNING', 'left running');
    a = await startAgent(sig);
    await new Promise((r) => setTimeout(r, 3000));
    for (const [i, p] of runningPods.entries()) {
      const now = await getPod(p);
      assert.ok(running(now));
      assert.equal(now.status!.containerStatuses![0]!.containerID, `containerd://${ids[i]}`, 'adopted, not recreated');
      const all = await cri.listContainers({ label_selector: { 'io.kubernetes.pod.uid': p.metadata!.uid! } });
      assert.equal(all.length, 1, 'no duplicate');
    }
  } finally {
    await cleanupAgent(a);
  }
});

test('markUnschedulableOnShutdown: the node is cordoned when the agent stops, and uncordoned when it is back', async () => {
  const name = uniqueNodeName('it-cordon');
  const cfg = join(tmp, 'cordon.yaml');
  writeFileSync(cfg, `apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\nnodeName: ignored-by-flag\nmarkUnschedulableOnShutdown: true\n`);
  let a = await startAgent(name, ['--config', cfg]);
  try {
    assert.notEqual((await core.readNode({ name })).spec?.unschedulable, true);
    assert.equal(await a.stop(), 0);
    assert.equal((await core.readNode({ name })).spec?.unschedulable, true);
    a = await startAgent(name, ['--config', cfg]);
    assert.notEqual((await core.readNode({ name })).spec?.unschedulable, true);
  } finally {
    await cleanupAgent(a);
  }
});

test('serverTLSBootstrap: a CSR to kubernetes.io/kubelet-serving, no node API until it is approved, then kubectl logs through the issued certificate', async () => {
  const csrNode = uniqueNodeName('it-csr');
  const kubectl = (...args: string[]) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8' });
  // Without the cluster's certificate files: the agent must ask for its own.
  const a = await startAgent(csrNode, ['--tls-cert-file', '', '--tls-private-key-file', '', '--rotate-server-certificates', 'true', '--cert-dir', join(tmp, 'csr-pki')]);
  try {
    const csr = await eventually('the agent\'s CSR', 30_000, async () => {
      const list = JSON.parse(kubectl('get', 'csr', '-o', 'json')) as { items: Array<{ metadata: { name: string }; spec: { signerName: string; request: string; usages: string[] }; status?: { certificate?: string } }> };
      return list.items.find((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && spawnSync('openssl', ['req', '-noout', '-subject'], { input: Buffer.from(c.spec.request, 'base64'), encoding: 'utf8' }).stdout.includes(`system:node:${csrNode}`));
    });
    assert.deepEqual(csr.spec.usages, ['digital signature', 'server auth']);
    assert.equal(a.port, 0, 'no node API before a certificate is issued');
    const pod = await createPod(csrNode, 'csr-logs', { restartPolicy: 'Never', containers: [container('c', 'echo served-with-an-issued-certificate; sleep 3600')] });
    await waitPod(pod, 'running', 60_000, running);
    kubectl('certificate', 'approve', csr.metadata.name);
    const out = await eventually('kubectl logs once the certificate is issued', 60_000, async () => {
      const r = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'logs', pod.metadata!.name!], { encoding: 'utf8' });
      return r.status === 0 ? r.stdout : undefined;
    });
    assert.equal(out, 'served-with-an-issued-certificate\n');
    const kept = readFileSync(join(tmp, 'csr-pki', 'nodelet-server-current.pem'), 'utf8');
    assert.match(kept, /BEGIN CERTIFICATE/);
    const issuer = spawnSync('openssl', ['x509', '-noout', '-issuer', '-ext', 'subjectAltName'], { input: kept, encoding: 'utf8' }).stdout;
    assert.match(issuer, /nodelet-test-ca/, 'signed by the cluster CA (the controller-manager\'s signer)');
  } finally {
    await cleanupAgent(a);
  }
});
