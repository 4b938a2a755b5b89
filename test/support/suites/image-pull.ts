// Images from the test cluster's registries, once per runtime: a private image pulls with the
// pod's pull secret and with its ServiceAccount's (the admission plugin copies those into the pod),
// not without one (ErrImagePull with the registry's 401, then ImagePullBackOff, and a pod with the
// secret missing says so); an anonymous registry needs nothing; `Always` pulls at every start;
// the events read as the kubelet's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { CoreV1Event, V1Container, V1Pod } from '@kubernetes/client-node';
import { cleanupAgent, startAgent, type RunningAgent } from '../agent.js';
import { clusterEnv, eventually } from '../cluster.js';
import { core, createPod, NS, podEvents, running, waitPod } from '../kube.js';
import type { TestRuntime } from '../runtimes.js';

const PULLED = /^Successfully pulled image "[^"]+" in [\d.]+m?s \([\d.]+m?s including waiting\)\. Image size: [1-9]\d* bytes\.$/;

export function imagePullSuite(makeRuntime: () => Promise<TestRuntime>): void {
  const env = clusterEnv();
  const suffix = randomBytes(3).toString('hex');
  const goodSecret = `pull-ok-${suffix}`;
  const badSecret = `pull-bad-${suffix}`;
  const saName = `puller-${suffix}`;
  let rt: TestRuntime;
  let agent: RunningAgent;
  let node: string;

  const dockerConfigJson = (password: string) =>
    Buffer.from(JSON.stringify({ auths: { [env.registry]: { username: env.registryUser, password, auth: Buffer.from(`${env.registryUser}:${password}`).toString('base64') } } })).toString('base64');

  before(async () => {
    rt = await makeRuntime();
    node = `it-pull-${rt.name}-${suffix}`;
    agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint]);
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: goodSecret }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': dockerConfigJson(env.registryPassword) } } });
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: badSecret }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': dockerConfigJson('not-the-password') } } });
    // The ServiceAccount holds an old-style dockercfg secret of the same credential.
    const cfgName = `pull-cfg-${suffix}`;
    const dockercfg = Buffer.from(JSON.stringify({ [`https://${env.registry}`]: { username: env.registryUser, password: env.registryPassword, email: 'test@example.com' } })).toString('base64');
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: cfgName }, type: 'kubernetes.io/dockercfg', data: { '.dockercfg': dockercfg } } });
    await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: saName }, imagePullSecrets: [{ name: cfgName }] } });
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    await rt.stop();
    for (const name of [goodSecret, badSecret, `pull-cfg-${suffix}`]) await core.deleteNamespacedSecret({ name, namespace: NS }).catch(() => undefined);
    await core.deleteNamespacedServiceAccount({ name: saName, namespace: NS }).catch(() => undefined);
  });

  const loop = "trap 'exit 0' TERM; while true; do sleep 0.2; done";
  const app = (image: string, extra: Partial<V1Container> = {}): V1Container => ({ name: 'app', image, command: ['sh', '-c', loop], ...extra });
  const eventsOf = async (pod: V1Pod, reason: string): Promise<CoreV1Event[]> => (await podEvents(pod)).filter((e) => e.reason === reason);
  const waiting = (...reasons: string[]) => (p: V1Pod) => {
    const w = p.status?.containerStatuses?.[0]?.state?.waiting;
    return w?.reason && reasons.includes(w.reason) ? w : undefined;
  };
  // ErrImagePull may last only until the next sync (the new sandbox's PLEG event makes one at
  // once, which is in back-off): either shows the failure, the back-off's message quoting it.
  const pullFailed = waiting('ErrImagePull', 'ImagePullBackOff');

  test('a private image pulls with the pod\'s pull secret; Pulling and Pulled read as the kubelet\'s', async () => {
    const pod = await createPod(node, 'private', { imagePullSecrets: [{ name: goodSecret }], containers: [app(env.privateImage, { imagePullPolicy: 'Always' })] });
    await waitPod(pod, 'Running', 90_000, running);
    const pulling = await eventsOf(pod, 'Pulling');
    assert.equal(pulling[0]?.message, `Pulling image "${env.privateImage}"`);
    const pulled = await eventually('the Pulled event', 10_000, async () => (await eventsOf(pod, 'Pulled'))[0]);
    assert.match(pulled.message ?? '', PULLED);
  });

  test('without a secret, or with a wrong one: ErrImagePull with the registry\'s 401, then ImagePullBackOff', async () => {
    for (const secrets of [[], [{ name: badSecret }]]) {
      const pod = await createPod(node, 'no-secret', { imagePullSecrets: secrets, containers: [app(env.privateImage, { imagePullPolicy: 'IfNotPresent' })] });
      const failed = await waitPod(pod, 'ErrImagePull', 60_000, pullFailed);
      assert.match(failed.message ?? '', /401 Unauthorized|unauthorized|authentication required/i, failed.message);
      const backoff = await waitPod(pod, 'ImagePullBackOff', 60_000, waiting('ImagePullBackOff'));
      assert.match(backoff.message ?? '', new RegExp(`^Back-off pulling image "${env.privateImage.replace(/[.]/g, '\\.')}": ErrImagePull: `));
      const failedEvent = (await eventsOf(pod, 'Failed')).find((e) => e.message?.startsWith(`Failed to pull image "${env.privateImage}": `));
      assert.ok(failedEvent && failedEvent.type === 'Warning', 'the Failed event names the image and the registry\'s answer');
      assert.ok((await eventsOf(pod, 'BackOff')).some((e) => e.message === `Back-off pulling image "${env.privateImage}"`));
    }
  });

  test('a pull secret that does not exist is named in FailedToRetrieveImagePullSecret when the pull fails', async () => {
    const pod = await createPod(node, 'missing-secret', { imagePullSecrets: [{ name: `nowhere-${suffix}` }], containers: [app(env.privateImage, { imagePullPolicy: 'Always' })] });
    await waitPod(pod, 'ErrImagePull', 60_000, pullFailed);
    const ev = await eventually('FailedToRetrieveImagePullSecret', 20_000, async () => (await eventsOf(pod, 'FailedToRetrieveImagePullSecret'))[0]);
    assert.equal(ev.message, `Unable to retrieve some image pull secrets (nowhere-${suffix}); attempting to pull the image may not succeed.`);
    assert.equal(ev.type, 'Warning');
  });

  test('a ServiceAccount\'s imagePullSecrets (dockercfg) pull for its pods', async () => {
    const pod = await createPod(node, 'sa-secret', { serviceAccountName: saName, containers: [app(`${env.registry}/private/busybox:2`, { imagePullPolicy: 'Always' })] });
    assert.ok(pod.spec?.imagePullSecrets?.some((s) => s.name === `pull-cfg-${suffix}`), 'the admission plugin gave the pod its account\'s secret');
    await waitPod(pod, 'Running', 90_000, running);
    assert.match((await eventsOf(pod, 'Pulled'))[0]?.message ?? '', PULLED);
  });

  test('an anonymous registry needs no secret; imagePullPolicy Always pulls again at each start', async () => {
    const pod = await createPod(node, 'always', { containers: [app(env.publicImage, { imagePullPolicy: 'Always', command: ['sh', '-c', 'sleep 1; exit 1'] })] });
    await waitPod(pod, 'restarted', 90_000, (p) => ((p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined));
    const pulled = await eventually('two pulls', 30_000, async () => {
      const evs = await eventsOf(pod, 'Pulled');
      const total = evs.reduce((n, e) => n + (e.count ?? 1), 0);
      return total >= 2 ? evs : undefined;
    });
    for (const e of pulled) assert.match(e.message ?? '', PULLED);
    assert.equal((await eventsOf(pod, 'Pulling')).reduce((n, e) => n + (e.count ?? 1), 0) >= 2, true);
  });

  test('a tag the registry does not have: ErrImagePull saying not found, on that pod only', async () => {
    const pod = await createPod(node, 'no-tag', { containers: [app(`${env.publicRegistry}/public/busybox:no-such-tag`)] });
    const other = await createPod(node, 'beside', { containers: [app(env.publicImage)] });
    const failed = await waitPod(pod, 'ErrImagePull', 60_000, pullFailed);
    assert.match(failed.message ?? '', /no-such-tag.*not found/i, failed.message);
    await waitPod(other, 'Running', 60_000, running);
  });
}
