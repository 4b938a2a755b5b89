// The DaemonSet for real (issue 17): nodelet's image, built here without an engine, deployed with
// `kubectl apply -k` onto a cluster whose node `host-0` is the real kubelet v1.37.2; the nodelet in
// its pod joins as node host-0-nodelet with a node identity of its own (a client certificate from
// a CSR nodelet-csr-approver approved), runs a Deployment's pods, serves kubectl logs/exec,
// shows the kubelet's SandboxChanged and BackOff, survives a rolling update of the DaemonSet
// without restarting a pod, and when the DaemonSet is deleted the node dies as a kubelet node dies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterEnv, eventually } from '../support/cluster.js';
import { steps } from '../support/steps.js';
import { core } from '../support/kube.js';
import {
  approveServingCsrs,
  buildAndImportImage,
  clientCertificate,
  forceDeleteNamespace,
  HOST_NODE,
  kubectl,
  kubectlOk,
  NODELET_NODE,
  startHostNode,
  writeOverlay,
  type DaemonSetCluster,
} from '../support/daemonset.js';

const env = clusterEnv();
const NS = 'nodelet-e2e';
const APP = 'nodelet-e2e-web';
let host: DaemonSetCluster | undefined;
let approver: NodeJS.Timeout | undefined;

const tolerations = [
  { key: 'nodelet.io/agent', operator: 'Exists', effect: 'NoSchedule' },
  // Short, so that the taint eviction of a dead node is seen within the test.
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 },
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 },
];

async function pods(selector: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace: NS, labelSelector: selector })).items;
}

function describe(pod: string): string {
  return kubectlOk(['-n', NS, 'describe', 'pod', pod]);
}

function crictl(args: string[]): string {
  const r = spawnSync(env.crictl, ['--runtime-endpoint', `unix://${host!.dirs.runtimeSocket}`, ...args], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`crictl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const step = steps();

const ready = (p: V1Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.ready);

before(async () => {
  // Two versions of the image: the rolling update goes from the first to the second.
  buildAndImportImage('0.1.0');
  buildAndImportImage('0.1.1');
  host = await startHostNode();
  await forceDeleteNamespace(NS);
  kubectlOk(['create', 'namespace', NS]);
  // An older deploy/ bound nodeclient to the ServiceAccount: gone, so that nodelet-csr-approver decides.
  kubectlOk(['delete', 'clusterrolebinding', 'nodelet:nodeclient', '--ignore-not-found']);
  writeOverlay(host.dirs, '0.1.0');
  // The node API's serving certificate comes from a kubelet-serving CSR, which the cluster's
  // approver signs off (kube-controller-manager approves only client certificates).
  approver = setInterval(() => {
    try {
      approveServingCsrs(NODELET_NODE);
    } catch {
      /* the next round */
    }
  }, 1000);
});

after(async () => {
  if (approver) clearInterval(approver);
  // For a look at what failed: the kubelet, the DaemonSet and its pods left as they are.
  if (process.env.NODELET_E2E_KEEP === '1') return;
  await forceDeleteNamespace(NS);
  await host?.stop();
});

step('kubectl apply -k deploy/: the DaemonSet pod runs on the kubelet node and registers host-0-nodelet, Ready and tainted', async () => {
  kubectlOk(['apply', '-k', host!.dirs.overlay]);
  const dsPod = await eventually('the DaemonSet pod to run on host-0', 120_000, async () => {
    const list = await core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'app.kubernetes.io/name=nodelet' });
    const p = list.items.find((x) => x.spec?.nodeName === HOST_NODE && ready(x));
    return p;
  }, 1000);
  assert.equal(dsPod.spec?.containers[0]?.image, 'nodelet.test/nodelet:0.1.0');
  const node = await eventually(`node ${NODELET_NODE} to be Ready without the not-ready taint`, 120_000, async () => {
    const n = await core.readNode({ name: NODELET_NODE }).catch(() => undefined);
    const isReady = n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    return isReady && !(n?.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/not-ready') ? n : undefined;
  }, 1000);
  assert.ok((node.spec?.taints ?? []).some((t) => t.key === 'nodelet.io/agent' && t.value === 'true' && t.effect === 'NoSchedule'), JSON.stringify(node.spec?.taints));
  assert.equal(node.metadata?.labels?.['nodelet.io/agent'], 'true');
  // Its capacity is its DaemonSet pod's limits, not the host's (booked once, by the host's scheduler);
  // its pods' cgroup is limited to that less kubeReserved (the agent's share of the same limits).
  const limits = dsPod.spec!.containers[0]!.resources!.limits as Record<string, string>;
  assert.deepEqual([node.status?.capacity?.cpu, node.status?.capacity?.memory], ['1', '2Gi'], JSON.stringify(node.status?.capacity));
  assert.deepEqual([limits.cpu, limits.memory], ['1', '2Gi']);
  assert.equal(node.status?.allocatable?.cpu, '900m');
  const kubepods = `/sys/fs/cgroup/memory/nodelet/${HOST_NODE}/kubepods`;
  assert.equal(readFileSync(`${kubepods}/memory.limit_in_bytes`, 'utf8').trim(), String(2 * 1024 ** 3 - 256 * 1024 ** 2));
  assert.equal(readFileSync(`/sys/fs/cgroup/cpu/nodelet/${HOST_NODE}/kubepods/cpu.shares`, 'utf8').trim(), '921');
});

step('nodelet acts as system:node:host-0-nodelet: a Secret of its own pod is readable, one of a pod on another node is not', async () => {
  // The client certificate it got through the CSR, stored on the host.
  const cert = clientCertificate(host!.dirs);
  const pem = readFileSync(cert, 'utf8');
  assert.match(pem, /BEGIN CERTIFICATE/);
  const csrs = JSON.parse(kubectlOk(['get', 'csr', '-o', 'json'])) as {
    items: Array<{ metadata: { creationTimestamp: string }; spec: { signerName: string; username: string; extra?: Record<string, string[]> }; status?: { conditions?: Array<{ type: string; message?: string }> } }>;
  };
  // The newest: a cluster kept from an earlier run holds that run's CSRs too.
  const client = csrs.items
    .filter((c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet' && c.spec.username === 'system:serviceaccount:kube-system:nodelet')
    .sort((a, b) => a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp))
    .at(-1);
  assert.ok(client, 'a client CSR made by the DaemonSet\'s ServiceAccount');
  assert.deepEqual(client.spec.extra?.['authentication.kubernetes.io/node-name'], [HOST_NODE], 'with the token of the pod on host-0');
  const approved = client.status?.conditions?.find((c) => c.type === 'Approved');
  assert.match(approved?.message ?? '', new RegExp(`node ${NODELET_NODE}: asked for by the nodelet pod on ${HOST_NODE}`), 'approved by deploy/approver.yaml\'s nodelet-csr-approver');

  kubectlOk(['-n', NS, 'create', 'secret', 'generic', 'mine', '--from-literal=k=v1']);
  kubectlOk(['-n', NS, 'create', 'secret', 'generic', 'theirs', '--from-literal=k=v2']);
  const withSecret = (name: string, node: string, secret: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      nodeName: node,
      tolerations,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'c', image: node === HOST_NODE ? env.testImage : env.publicImage, command: ['sh', '-c', 'cat /s/k; echo; sleep 3600'], volumeMounts: [{ name: 's', mountPath: '/s' }] }],
      volumes: [{ name: 's', secret: { secretName: secret } }],
    },
  });
  kubectlOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [withSecret('secret-mine', NODELET_NODE, 'mine'), withSecret('secret-theirs', HOST_NODE, 'theirs')] }));
  await eventually('both secret pods to run', 120_000, async () => {
    const list = await Promise.all(['secret-mine', 'secret-theirs'].map((n) => core.readNamespacedPod({ name: n, namespace: NS })));
    return list.every(ready) ? true : undefined;
  }, 1000);
  await eventually('the Secret\'s content in kubectl logs', 30_000, async () => (kubectlOk(['-n', NS, 'logs', 'secret-mine']).trim() === 'v1' ? true : undefined), 500);
  const get = (secret: string) =>
    spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', `${env.clusterDir}/pki/ca.crt`, '--cert', cert, '--key', cert, `${env.apiserver}/api/v1/namespaces/${NS}/secrets/${secret}`], { encoding: 'utf8' }).stdout;
  assert.equal(get('mine'), '200');
  assert.equal(get('theirs'), '403');
});

step('a Deployment of 3 pods on host-0-nodelet: kubectl logs, exec and describe work through nodelet', async () => {
  kubectlOk(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: NS },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: APP } },
      template: {
        metadata: { labels: { app: APP } },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': NODELET_NODE },
          tolerations,
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'web', image: env.publicImage, command: ['sh', '-c', 'echo "hello from $(hostname)"; while true; do sleep 1; done'] }],
        },
      },
    },
  }));
  const web = await eventually('3 web pods Running and Ready on host-0-nodelet', 180_000, async () => {
    const list = await pods(`app=${APP}`);
    return list.length === 3 && list.every((p) => p.spec?.nodeName === NODELET_NODE && ready(p)) ? list : undefined;
  }, 1000);
  const name = web[0]!.metadata!.name!;
  await eventually('the greeting in kubectl logs', 30_000, async () => (kubectlOk(['-n', NS, 'logs', name]).includes(`hello from ${name}`) ? true : undefined), 500);
  assert.equal(kubectlOk(['-n', NS, 'exec', name, '--', 'sh', '-c', 'echo exec in $(hostname)']).trim(), `exec in ${name}`);
  const text = describe(name);
  assert.match(text, new RegExp(`Node:\\s+${NODELET_NODE}/`));
  assert.match(text, /Normal\s+Started\s+\S+\s+nodelet\s+spec\.containers\{web\}: Container started/);
});

step('a sandbox killed behind nodelet\'s back: SandboxChanged, and the pod runs again', async () => {
  kubectlOk(['-n', NS, 'run', 'victim', `--image=${env.publicImage}`, '--restart=Always', `--overrides=${JSON.stringify({ spec: { nodeName: NODELET_NODE, tolerations, terminationGracePeriodSeconds: 2 } })}`, '--', 'sh', '-c', 'while true; do sleep 1; done']);
  const before = await eventually('victim to run', 120_000, async () => {
    const p = await core.readNamespacedPod({ name: 'victim', namespace: NS });
    return ready(p) ? p : undefined;
  }, 500);
  const sandbox = crictl(['pods', '-q', '--label', `io.kubernetes.pod.uid=${before.metadata!.uid}`]).trim().split('\n')[0]!;
  assert.ok(sandbox, 'the pod\'s sandbox in the process runtime');
  crictl(['stopp', sandbox]);
  await eventually('SandboxChanged in kubectl describe', 60_000, async () => (/Normal\s+SandboxChanged\s+\S+\s+nodelet\s+Pod sandbox changed, it will be killed and re-created\./.test(describe('victim')) ? true : undefined), 1000);
  await eventually('victim to run again in a new sandbox', 60_000, async () => {
    const p = await core.readNamespacedPod({ name: 'victim', namespace: NS });
    const ids = crictl(['pods', '-q', '--state', 'ready', '--label', `io.kubernetes.pod.uid=${before.metadata!.uid}`]).trim();
    return ready(p) && ids && ids !== sandbox ? true : undefined;
  }, 1000);
});

step('a crash-looping pod: BackOff "Back-off restarting failed container"', async () => {
  kubectlOk(['-n', NS, 'run', 'crasher', `--image=${env.publicImage}`, '--restart=Always', `--overrides=${JSON.stringify({ spec: { nodeName: NODELET_NODE, tolerations, terminationGracePeriodSeconds: 2 } })}`, '--', 'sh', '-c', 'echo crashing; exit 1']);
  await eventually('BackOff in kubectl describe', 90_000, async () => (/Warning\s+BackOff\s+.*nodelet\s+spec\.containers\{crasher\}: Back-off restarting failed container crasher in pod crasher_nodelet-e2e\(/.test(describe('crasher')) ? true : undefined), 1000);
  const p = await core.readNamespacedPod({ name: 'crasher', namespace: NS });
  assert.equal(p.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'CrashLoopBackOff');
});

step('a rolling update of the DaemonSet to a new image version: the new nodelet adopts the pods, none restarted or duplicated', async () => {
  const before = await pods(`app=${APP}`);
  const ids = new Map(before.map((p) => [p.metadata!.name!, p.status!.containerStatuses![0]!.containerID]));
  const oldPod = (await core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'app.kubernetes.io/name=nodelet' })).items[0]!;
  writeOverlay(host!.dirs, '0.1.1');
  kubectlOk(['apply', '-k', host!.dirs.overlay]);
  kubectlOk(['-n', 'kube-system', 'rollout', 'status', 'daemonset/nodelet', '--timeout=180s'], undefined, 200_000);
  const newPod = await eventually('the new DaemonSet pod to run', 60_000, async () => {
    const list = await core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'app.kubernetes.io/name=nodelet' });
    return list.items.find((p) => p.metadata!.uid !== oldPod.metadata!.uid && ready(p));
  }, 1000);
  assert.equal(newPod.spec?.containers[0]?.image, 'nodelet.test/nodelet:0.1.1');
  // One resync of the new nodelet: it has seen every pod and the runtime, and acted if it would.
  await eventually('the new nodelet to report the node Ready', 60_000, async () => {
    const n = await core.readNode({ name: NODELET_NODE });
    const hb = n.status?.conditions?.find((c) => c.type === 'Ready');
    return hb?.status === 'True' && Date.parse(String(hb.lastHeartbeatTime)) > Date.parse(String(newPod.status?.startTime)) ? true : undefined;
  }, 1000);
  await new Promise((r) => setTimeout(r, 15_000));
  const after = await pods(`app=${APP}`);
  assert.equal(after.length, 3);
  for (const p of after) {
    assert.ok(ready(p), `${p.metadata!.name} ready`);
    assert.equal(p.status!.containerStatuses![0]!.containerID, ids.get(p.metadata!.name!), `${p.metadata!.name}: the same container`);
    assert.equal(p.status!.containerStatuses![0]!.restartCount, 0);
  }
  // And the runtime runs exactly one container per pod.
  for (const p of after) {
    const running = crictl(['ps', '-q', '--state', 'running', '--label', `io.kubernetes.pod.uid=${p.metadata!.uid}`]).trim().split('\n').filter(Boolean);
    assert.equal(running.length, 1, `${p.metadata!.name}: one running container`);
  }
  const name = after[0]!.metadata!.name!;
  assert.match(kubectlOk(['-n', NS, 'logs', name]), new RegExp(`hello from ${name}`));
});

step('the DaemonSet deleted: the node goes NotReady (Unknown) through the node-lifecycle controller and taint-based eviction takes over', async () => {
  kubectlOk(['-n', 'kube-system', 'delete', 'daemonset', 'nodelet', '--wait=true'], undefined, 120_000);
  const ready = await eventually('the node\'s Ready condition to become Unknown', 120_000, async () => {
    const n = await core.readNode({ name: NODELET_NODE });
    const c = n.status?.conditions?.find((x) => x.type === 'Ready');
    return c?.status === 'Unknown' && (n.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute') ? c : undefined;
  }, 1000);
  assert.equal(ready.reason, 'NodeStatusUnknown');
  assert.match(kubectlOk(['get', 'node', NODELET_NODE]), /NotReady/);
  await eventually('the web pods to be evicted (deleted by the taint eviction controller)', 60_000, async () => {
    const list = await pods(`app=${APP}`);
    const old = list.filter((p) => p.spec?.nodeName === NODELET_NODE);
    return old.length > 0 && old.every((p) => p.metadata?.deletionTimestamp) ? true : undefined;
  }, 1000);
});
