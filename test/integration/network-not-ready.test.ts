// A node whose runtime has no pod network yet (a containerd of its own, or a process runtime, with
// an empty CNI directory, as on a node before its CNI plugin is installed): the node is NotReady
// saying why, host-network pods run, other pods wait with the kubelet's NetworkNotReady event, and
// start within seconds once the network is there. Run on both runtimes.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { eventually } from '../support/cluster.js';
import { container, core, createPod, getPod, podEvents, running, waitPod } from '../support/kube.js';
import { privateContainerd, processRuntimeWithoutNetwork, type RuntimeWithoutNetwork } from '../support/runtimes.js';

for (const [kind, make] of [
  ['containerd', () => privateContainerd('nonet')],
  ['process', () => processRuntimeWithoutNetwork('nonet')],
] as Array<[string, () => Promise<RuntimeWithoutNetwork>]>) {
describe(`on ${kind}`, () => {
let rt: RuntimeWithoutNetwork;
let agent: RunningAgent;
let node: string;

before(async () => {
  rt = await make();
  node = uniqueNodeName(`it-nonet-${kind}`);
  agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint]);
});
after(async () => {
  await cleanupAgent(agent, rt.endpoint);
  await rt.stop();
});

const readyCondition = async () => (await core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready');

test('no pod network: the node is NotReady with the runtime\'s reason; host-network pods run, others wait (NetworkNotReady), then start once the network is there', async () => {
  const notReady = await eventually('the node NotReady for its network', 30_000, async () => {
    const c = await readyCondition();
    return c?.status === 'False' ? c : undefined;
  });
  assert.equal(notReady.reason, 'KubeletNotReady');
  assert.match(notReady.message ?? '', /^container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:/);

  const loop = "trap 'exit 0' TERM; while true; do sleep 0.2; done";
  const host = await createPod(node, 'hostnet', { hostNetwork: true, containers: [container('c', loop)] });
  const pod = await createPod(node, 'podnet', { containers: [container('c', loop)] });
  await waitPod(host, 'the host-network pod Running', 30_000, running);
  const event = await eventually('NetworkNotReady for the pod-network pod', 30_000, async () =>
    (await podEvents(pod)).find((e) => e.reason === 'NetworkNotReady' && e.type === 'Warning'),
  );
  assert.match(event.message ?? '', /^network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady/);
  const waiting = (await getPod(pod)).status!;
  assert.equal(waiting.phase, 'Pending');
  assert.equal(waiting.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');

  rt.addPodNetwork();
  const started = await waitPod(pod, 'the pod-network pod Running once the network is there', 30_000, running);
  assert.ok(rt.checkPodIP(started.status!.podIP!, started.status!.hostIP!), `a pod IP from the bridge (${started.status!.podIP})`);
  await eventually('the node Ready', 30_000, async () => ((await readyCondition())?.status === 'True' ? true : undefined));
});
});
}
