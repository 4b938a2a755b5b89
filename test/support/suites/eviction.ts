// The eviction manager under memory pressure, on a real node (a lab node only: it takes a memory
// hog). The agent's node offers 400Mi (capacity), its pods' cgroup is held to that, and its hard
// threshold is 100Mi: a pod that grows its memory slowly (5 MiB a second, in a memory emptyDir) passes
// 300Mi and is evicted before the kernel's limit is reached, in the kubelet's words, while a small
// Guaranteed pod beside it runs on. One suite, run once per runtime.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { clusterEnv, eventually } from '../cluster.js';
import { container, createPod, getPod, podEvents, running, waitPod } from '../kube.js';
import type { TestRuntime } from '../runtimes.js';
import { casesOf, type SuiteOptions } from '../cases.js';

export function evictionSuite(makeRuntime: () => Promise<TestRuntime>, opts: SuiteOptions = {}): void {
  const test = casesOf(opts);
  let rt: TestRuntime;
  let agent: RunningAgent;
  let node: string;

  before(async () => {
    rt = await makeRuntime();
    node = uniqueNodeName(`it-evict-${rt.name}`);
    // A file of the checkout: a lab node reads the host's root.
    const dir = join(clusterEnv().clusterDir, 'test-agents');
    mkdirSync(dir, { recursive: true });
    const config = join(dir, `${node}.yaml`);
    writeFileSync(config, 'apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\ncapacity: {memory: 400Mi}\nevictionHard: {memory.available: 100Mi}\n');
    agent = await startAgent(node, ['--config', config, '--runtime-endpoint', rt.endpoint], { place: rt.place });
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    await rt.stop();
  });

  test('memory pressure: the pod growing past the threshold is evicted (Failed/Evicted, the kubelet\'s message and Warning event), a Guaranteed pod beside it runs on', async () => {
    const guaranteed = await createPod(node, 'steady', { containers: [container('c', 'exec sleep 3600', { resources: { limits: { cpu: '100m', memory: '32Mi' } } })] });
    await waitPod(guaranteed, 'running', 60_000, running);
    // Files in a memory-backed emptyDir (a tmpfs): their pages are the container's memory.
    const grow = 'i=0; while [ $i -lt 90 ]; do dd if=/dev/zero of=/mem/f$i bs=1048576 count=5 2>/dev/null; i=$((i+1)); sleep 1; done; exec sleep 3600';
    const hog = await createPod(node, 'grower', {
      terminationGracePeriodSeconds: 30,
      volumes: [{ name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '512Mi' } }],
      containers: [container('c', grow, { resources: { requests: { memory: '16Mi' } }, volumeMounts: [{ name: 'mem', mountPath: '/mem' }] })],
    });
    const evicted = await waitPod(hog, 'Failed', 150_000, (p) => (p.status?.phase === 'Failed' ? p : undefined));
    assert.equal(evicted.status!.reason, 'Evicted');
    assert.match(evicted.status!.message!, /^The node was low on resource: memory\. Threshold quantity: 100Mi, available: \d+(Ki|Mi)?\. Container c was using \d+(Ki|Mi)?, request is 16Mi, has larger consumption of memory\. $/);
    await eventually('the Evicted event', 20_000, async () => ((await podEvents(hog)).some((e) => e.type === 'Warning' && e.reason === 'Evicted' && e.message === evicted.status!.message) ? true : undefined), 500);
    // Not the kernel's doing: the container was stopped, not OOM-killed.
    assert.notEqual(evicted.status!.containerStatuses![0]!.state?.terminated?.reason, 'OOMKilled');
    assert.equal((await getPod(guaranteed)).status!.phase, 'Running');
  });
}
