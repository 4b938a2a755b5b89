#!/usr/bin/env node
// The README's "pod start" figure for the lab: node hack/lab/pod-start.mjs KUBECONFIG NODE [COUNT]
// creates COUNT pods (busybox, sleeping) bound to NODE one after another and prints, for each, the
// time from the create call to the pod's Ready condition as a watch sees it, then the median.
// The same command against the test cluster's node gives the host's figure beside it.
import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';

const [kubeconfig, node, countText = '10'] = process.argv.slice(2);
if (!kubeconfig || !node || !/^[1-9]\d*$/.test(countText)) {
  console.error('usage: node hack/lab/pod-start.mjs KUBECONFIG NODE [COUNT]');
  process.exit(2);
}
const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const ns = 'default';
const image = process.env.POD_START_IMAGE ?? 'nodelet.test/busybox:1';

async function once() {
  const name = `start-${randomBytes(3).toString('hex')}`;
  let settle;
  const ready = new Promise((r) => (settle = r));
  const watch = await new k8s.Watch(kc).watch(`/api/v1/namespaces/${ns}/pods`, { fieldSelector: `metadata.name=${name}` }, (_type, pod) => {
    if (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) settle(Date.now());
  }, () => undefined);
  const t0 = Date.now();
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name },
      spec: { nodeName: node, terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }] },
    },
  });
  const t1 = await Promise.race([ready, new Promise((_, rej) => setTimeout(() => rej(new Error(`${name} not Ready in 120 s`)), 120_000))]);
  watch.abort();
  await core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 0 });
  return t1 - t0;
}

const times = [];
for (let i = 0; i < Number(countText); i++) {
  times.push(await once());
  console.log(`pod ${i + 1}: ${times.at(-1)} ms`);
}
times.sort((a, b) => a - b);
console.log(`${node}: median ${times[Math.floor(times.length / 2)]} ms, min ${times[0]}, max ${times.at(-1)} (${times.length} pods)`);
