// A projected service-account token is refreshed before it expires, on both runtimes at once (the
// API server's shortest token lives 10 minutes, so this file waits about 8 of them, once for both).
// The kubelet's rule: a token is kept until 80% of its lifetime has passed, then requested again,
// and the new one reaches the running container's file on the next sync.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { CriClient } from '../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../support/agent.js';
import { clusterEnv } from '../support/cluster.js';
import { container, createPod, getPod, running, waitPod } from '../support/kube.js';
import { containerdRuntime, processRuntime, type TestRuntime } from '../support/runtimes.js';

const TTL_S = 600;

interface Node {
  rt: TestRuntime;
  cri: CriClient;
  agent: RunningAgent;
  pod?: V1Pod;
}

const kc = new k8s.KubeConfig();
kc.loadFromFile(clusterEnv().kubeconfig);
const auth = kc.makeApiClient(k8s.AuthenticationV1Api);
const nodes: Node[] = [];

before(async () => {
  for (const rt of [containerdRuntime(), await processRuntime('token')]) {
    // A short resync, so that the refreshed token reaches the file seconds after the refresh is due.
    const agent = await startAgent(uniqueNodeName(`it-tok-${rt.name}`), ['--runtime-endpoint', rt.endpoint, '--resync-interval', '5s']);
    nodes.push({ rt, cri: new CriClient(rt.endpoint), agent });
  }
});
after(async () => {
  for (const n of nodes) {
    await cleanupAgent(n.agent, n.rt.endpoint);
    n.cri.close();
    await n.rt.stop();
  }
});

/** The claims of a JWT (not verified here: the TokenReview does that). */
function claims(token: string): { iat: number; exp: number } {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { iat: number; exp: number };
}

async function readToken(n: Node): Promise<string> {
  const id = (await getPod(n.pod!)).status!.containerStatuses![0]!.containerID!.replace(/^[^:]+:\/\//, '');
  const r = await n.cri.execSync(id, ['cat', '/t/token'], 10);
  return Buffer.from(r.stdout).toString('utf8');
}

async function valid(token: string, pod: V1Pod): Promise<void> {
  const review = await auth.createTokenReview({ body: { spec: { token, audiences: ['it-refresh'] } } });
  assert.equal(review.status?.authenticated, true, JSON.stringify(review.status));
  assert.equal(review.status?.user?.extra?.['authentication.kubernetes.io/pod-uid']?.[0], pod.metadata!.uid, 'bound to its pod');
}

test(`a token of ${TTL_S} s is kept while young and replaced in the container's file after 80% of its life, before it expires`, { timeout: 12 * 60_000 }, async () => {
  for (const n of nodes) {
    n.pod = await createPod(n.agent.nodeName, `tok-${n.rt.name}`, {
      volumes: [{ name: 't', projected: { sources: [{ serviceAccountToken: { path: 'token', audience: 'it-refresh', expirationSeconds: TTL_S } }] } }],
      containers: [container('c', 'trap "exit 0" TERM; while true; do sleep 0.2; done', { volumeMounts: [{ name: 't', mountPath: '/t' }] })],
    });
  }
  for (const n of nodes) n.pod = await waitPod(n.pod!, 'Running', 60_000, running);
  const first = await Promise.all(nodes.map(readToken));
  for (const [i, n] of nodes.entries()) {
    await valid(first[i]!, n.pod!);
    const c = claims(first[i]!);
    assert.equal(c.exp - c.iat, TTL_S, `${n.rt.name}: the lifetime asked for`);
  }
  // Young tokens stay: a sync (every 5 s here) does not ask for a new one.
  await new Promise((r) => setTimeout(r, 60_000));
  assert.deepEqual(await Promise.all(nodes.map(readToken)), first, 'the same tokens a minute later');

  const seen = new Map<number, { token: string; at: number }>();
  for (;;) {
    const now = await Promise.all(nodes.map(readToken));
    now.forEach((t, i) => {
      if (t !== first[i] && !seen.has(i)) seen.set(i, { token: t, at: Date.now() / 1000 });
    });
    if (seen.size === nodes.length) break;
    const deadline = Math.min(...first.map((t) => claims(t).exp));
    assert.ok(Date.now() / 1000 < deadline, `the tokens were refreshed before they expired (refreshed: ${[...seen.keys()].map((i) => nodes[i]!.rt.name).join(', ') || 'none'})`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  for (const [i, n] of nodes.entries()) {
    const old = claims(first[i]!);
    const { token, at } = seen.get(i)!;
    assert.ok(at >= old.iat + 0.8 * TTL_S - 5, `${n.rt.name}: not replaced before 80% of its life (${Math.round(at - old.iat)} s)`);
    assert.ok(at < old.exp, `${n.rt.name}: replaced before it expired`);
    assert.ok(claims(token).iat > old.iat, `${n.rt.name}: a newer token`);
    await valid(token, n.pod!);
  }
});
