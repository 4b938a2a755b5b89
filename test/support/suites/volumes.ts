// Volumes and the files of a pod on the real cluster, once per runtime: the service-account token
// every pod gets, ConfigMaps and Secrets as files (edits arrive, subPaths stay), a missing
// ConfigMap, emptyDir, hostPath checks, subPaths that try to leave their volume, /etc/hosts and
// termination messages.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CriClient } from '../../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { clusterEnv, eventually } from '../cluster.js';
import { container, core, createPod, getPod, NS, podEvents, running, waitPod } from '../kube.js';
import type { TestRuntime } from '../runtimes.js';

export function volumesSuite(makeRuntime: () => Promise<TestRuntime>): void {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(clusterEnv().kubeconfig);
  const auth = kc.makeApiClient(k8s.AuthenticationV1Api);
  let rt: TestRuntime;
  let cri: CriClient;
  let agent: RunningAgent;
  let node: string;
  const configMaps: string[] = [];

  before(async () => {
    rt = await makeRuntime();
    cri = new CriClient(rt.endpoint);
    node = uniqueNodeName(`it-vol-${rt.name}`);
    // A short resync: edits of a ConfigMap reach the files within one, and this test need not wait a minute.
    agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint, '--resync-interval', '5s']);
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    cri.close();
    await Promise.all(configMaps.map((name) => core.deleteNamespacedConfigMap({ name, namespace: NS }).catch(() => undefined)));
    await rt.stop();
  });

  const sleep = 'trap "exit 0" TERM; while true; do sleep 0.2; done';

  async function configMap(data: Record<string, string>): Promise<string> {
    const name = `cm-${randomBytes(3).toString('hex')}`;
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name }, data } });
    configMaps.push(name);
    return name;
  }

  /** The container's output so far, read from its log file (nodelet serves no kubectl logs yet). */
  async function output(pod: V1Pod): Promise<string> {
    const { readFileSync, readdirSync } = await import('node:fs');
    const dir = join(clusterEnv().podLogRoot, `${NS}_${pod.metadata!.name}_${pod.metadata!.uid}`, pod.spec!.containers[0]!.name);
    const files = readdirSync(dir).sort();
    return readFileSync(join(dir, files.at(-1)!), 'utf8').split('\n').map((l) => l.replace(/^\S+ (stdout|stderr) [PF] ?/, '')).join('\n');
  }

  /** What a command prints in the pod's running container (CRI ExecSync). */
  async function execIn(pod: V1Pod, cmd: string[]): Promise<string> {
    const id = (await getPod(pod)).status!.containerStatuses![0]!.containerID!.replace(/^[^:]+:\/\//, '');
    const r = await cri.execSync(id, cmd, 10);
    return Buffer.from(r.stdout).toString('utf8');
  }

  const done = (p: V1Pod) => (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined);

  test('an ordinary pod gets a valid service-account token, the cluster CA and its namespace at the usual path', async () => {
    const created = await createPod(node, 'sa', { restartPolicy: 'Never', containers: [container('c', 'd=/var/run/secrets/kubernetes.io/serviceaccount; cat $d/namespace; echo; head -n 1 $d/ca.crt; cat $d/token')] });
    assert.ok(created.spec!.volumes!.some((v) => v.name.startsWith('kube-api-access-')), 'the ServiceAccount admission plugin gave the pod its token volume');
    const pod = await waitPod(created, 'Succeeded', 60_000, done);
    assert.equal(pod.status!.phase, 'Succeeded', JSON.stringify(pod.status));
    const [ns, ca, token] = (await output(pod)).split('\n');
    assert.equal(ns, NS);
    assert.equal(ca, '-----BEGIN CERTIFICATE-----');
    const review = await auth.createTokenReview({ body: { spec: { token } } });
    assert.equal(review.status?.authenticated, true, JSON.stringify(review.status));
    assert.equal(review.status?.user?.username, `system:serviceaccount:${NS}:default`);
    assert.equal(review.status?.user?.extra?.['authentication.kubernetes.io/pod-name']?.[0], pod.metadata!.name, 'the token is bound to the pod');
  });

  test('a ConfigMap edited while its pod runs reaches the mounted file; a subPath mount of it does not change', async () => {
    const cm = await configMap({ greeting: 'hello' });
    const live = await createPod(node, 'cm-live', {
      volumes: [{ name: 'cfg', configMap: { name: cm } }],
      containers: [container('c', sleep, { volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] })],
    });
    // The subPath one reports what it sees itself (an exec could not tell: see the README on the process runtime).
    const pinned = await createPod(node, 'cm-pinned', {
      volumes: [{ name: 'cfg', configMap: { name: cm } }],
      containers: [container('c', 'while true; do cat /pinned; echo; sleep 0.5; done', { volumeMounts: [{ name: 'cfg', mountPath: '/pinned', subPath: 'greeting' }] })],
    });
    await waitPod(live, 'Running', 60_000, running);
    await waitPod(pinned, 'Running', 60_000, running);
    const exec = (path: string) => execIn(live, ['cat', path]);
    assert.equal(await exec('/cfg/greeting'), 'hello');
    await core.patchNamespacedConfigMap({ name: cm, namespace: NS, body: { data: { greeting: 'bonjour' } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    const t0 = Date.now();
    for (;;) {
      if ((await exec('/cfg/greeting')) === 'bonjour') break;
      assert.ok(Date.now() - t0 < 90_000, 'the edit reached the file within 90 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    await new Promise((r) => setTimeout(r, 2000));
    const seen = (await output(pinned)).split('\n').filter(Boolean);
    assert.equal(seen.at(-1), 'hello', 'a subPath is resolved once, as the kubelet does');
    assert.ok(!seen.includes('bonjour'));
  });

  test('a missing ConfigMap: ContainerCreating with FailedMount in the kubelet\'s words, then Running once it exists', async () => {
    const name = `late-${randomBytes(3).toString('hex')}`;
    const created = await createPod(node, 'cm-missing', { volumes: [{ name: 'cfg', configMap: { name } }], containers: [container('c', sleep, { volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] })] });
    const waiting = await waitPod(created, 'ContainerCreating', 30_000, (p) => (p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ContainerCreating' ? p : undefined));
    assert.equal(waiting.status!.phase, 'Pending');
    const e = await eventually('a FailedMount event', 30_000, async () => (await podEvents(created)).find((x) => x.reason === 'FailedMount'));
    assert.equal(e.type, 'Warning');
    assert.equal(e.message, `MountVolume.SetUp failed for volume "cfg" : configmap "${name}" not found`);
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name }, data: { k: 'v' } } });
    configMaps.push(name);
    await waitPod(created, 'Running once the ConfigMap exists', 40_000, running);
  });

  test('emptyDir is shared by the pod\'s containers; medium Memory is a tmpfs (mode 1777); secrets are files', async () => {
    const sname = `s-${randomBytes(3).toString('hex')}`;
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: sname }, stringData: { password: 'p4ss' } } });
    try {
      const created = await createPod(node, 'share', {
        restartPolicy: 'Never',
        volumes: [{ name: 'shared', emptyDir: {} }, { name: 'mem', emptyDir: { medium: 'Memory' } }, { name: 's', secret: { secretName: sname, defaultMode: 0o400 } }],
        initContainers: [container('writer', 'echo from-init > /shared/note', { volumeMounts: [{ name: 'shared', mountPath: '/shared' }] })],
        containers: [container('reader', 'cat /shared/note; grep " /mem " /proc/mounts | cut -d" " -f3; cat /s/password; echo; stat -L -c %a /s/password; stat -c %a /mem /shared', {
          volumeMounts: [{ name: 'shared', mountPath: '/shared' }, { name: 'mem', mountPath: '/mem' }, { name: 's', mountPath: '/s' }],
        })],
      });
      const pod = await waitPod(created, 'Succeeded', 60_000, done);
      assert.equal(pod.status!.phase, 'Succeeded', JSON.stringify(pod.status?.containerStatuses));
      // A tmpfs keeps its sticky bit (1777), as the kubelet leaves it; a disk emptyDir is 0777.
      assert.deepEqual((await output(pod)).split('\n').slice(0, 6), ['from-init', 'tmpfs', 'p4ss', '400', '1777', '777']);
    } finally {
      await core.deleteNamespacedSecret({ name: sname, namespace: NS }).catch(() => undefined);
    }
  });

  test('the environment has the kubernetes Service (what in-cluster clients use) and the namespace\'s Services, as on the kubelet', async () => {
    const name = `svc-${randomBytes(3).toString('hex')}`;
    const created = await core.createNamespacedService({ namespace: NS, body: { metadata: { name }, spec: { ports: [{ name: 'web', port: 8765, protocol: 'TCP' }] } } });
    const ip = created.spec!.clusterIP!;
    const v = name.toUpperCase().replace(/-/g, '_');
    try {
      const kube = await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
      const p = await createPod(node, 'svcenv', { restartPolicy: 'Never', containers: [container('c', `echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT; echo $${v}_SERVICE_HOST $${v}_SERVICE_PORT_WEB $${v}_PORT`)] });
      const pod = await waitPod(p, 'Succeeded', 60_000, done);
      assert.equal(pod.status!.phase, 'Succeeded', await output(pod));
      const [api, own] = (await output(pod)).split('\n');
      assert.equal(api, `${kube.spec!.clusterIP}:${kube.spec!.ports![0]!.port}`);
      assert.equal(own, `${ip} 8765 tcp://${ip}:8765`);
    } finally {
      await core.deleteNamespacedService({ name, namespace: NS }).catch(() => undefined);
    }
  });

  test('a non-root container reads a secret of mode 0440 through fsGroup, which is one of its groups', async () => {
    const sname = `s-${randomBytes(3).toString('hex')}`;
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: sname }, stringData: { key: 'for-the-group' } } });
    try {
      const created = await createPod(node, 'fsgroup', {
        restartPolicy: 'Never',
        securityContext: { runAsUser: 1000, fsGroup: 1001 },
        volumes: [{ name: 's', secret: { secretName: sname, defaultMode: 0o440 } }],
        containers: [container('c', 'id -G; stat -L -c "%a %g" /s/key; cat /s/key', { volumeMounts: [{ name: 's', mountPath: '/s' }] })],
      });
      const pod = await waitPod(created, 'Succeeded', 60_000, done);
      assert.equal(pod.status!.phase, 'Succeeded', await output(pod));
      const [groups, mode, content] = (await output(pod)).split('\n');
      assert.equal(content, 'for-the-group', 'readable through the group');
      // On both runtimes the process holds group 1001 and sees the file's real group.
      assert.equal(mode, '440 1001');
      assert.ok(groups!.split(' ').includes('1001'), `groups: ${groups}`);
    } finally {
      await core.deleteNamespacedSecret({ name: sname, namespace: NS }).catch(() => undefined);
    }
  });

  test('a hostPath of the wrong type and a subPath leading out of its volume are refused, and nothing outside is touched', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-hostpath-'));
    writeFileSync(join(dir, 'file'), 'host');
    const wrong = await createPod(node, 'hp', { volumes: [{ name: 'h', hostPath: { path: join(dir, 'file'), type: 'Directory' } }], containers: [container('c', sleep, { volumeMounts: [{ name: 'h', mountPath: '/h' }] })] });
    const ev = await eventually('a FailedMount event', 30_000, async () => (await podEvents(wrong)).find((e) => e.reason === 'FailedMount'));
    assert.equal(ev.message, `MountVolume.SetUp failed for volume "h" : hostPath type check failed: ${join(dir, 'file')} is not a directory, it's a File`);

    // The volume's content links out of it; a subPath through the link must not reach the host.
    symlinkSync('/etc', join(dir, 'etc-link'));
    const escape = await createPod(node, 'esc', {
      volumes: [{ name: 'h', hostPath: { path: dir, type: 'Directory' } }],
      containers: [container('c', sleep, { volumeMounts: [{ name: 'h', mountPath: '/h', subPath: 'etc-link/shadow-nodelet-test' }] })],
    });
    const waiting = await waitPod(escape, 'CreateContainerConfigError', 30_000, (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError' ? p.status.containerStatuses[0]!.state!.waiting! : undefined);
    assert.match(waiting.message ?? '', /failed to create subPath directory for volumeMount "h" of container "c"|failed to prepare subPath for volumeMount "h" of container "c"/);
    const { existsSync } = await import('node:fs');
    assert.ok(!existsSync('/etc/shadow-nodelet-test'), 'nothing was made outside the volume');
  });

  test('/etc/hosts is the kubelet\'s, with hostAliases; termination messages from the file and, on failure, from the log', async () => {
    const created = await createPod(node, 'files', {
      restartPolicy: 'Never',
      hostAliases: [{ ip: '192.0.2.10', hostnames: ['alias-one', 'alias-two'] }],
      containers: [container('c', 'cat /etc/hosts; echo custom message > /tmp/term; exit 3', { terminationMessagePath: '/tmp/term' })],
    });
    const pod = await waitPod(created, 'Failed', 60_000, done);
    const term = pod.status!.containerStatuses![0]!.state!.terminated!;
    assert.equal(term.exitCode, 3);
    assert.equal(term.message, 'custom message\n');
    const hosts = await output(pod);
    assert.match(hosts, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
    assert.match(hosts, new RegExp(`\\n${pod.status!.podIP!.replace(/\./g, '\\.')}\\t${pod.metadata!.name}\\n`));
    assert.match(hosts, /# Entries added by HostAliases\.\n192\.0\.2\.10\talias-one\talias-two\n/);

    const fallback = await createPod(node, 'fallback', { restartPolicy: 'Never', containers: [container('c', 'echo first; echo last words; exit 1', { terminationMessagePolicy: 'FallbackToLogsOnError' })] });
    const f = await waitPod(fallback, 'Failed', 60_000, done);
    assert.equal(f.status!.containerStatuses![0]!.state!.terminated!.message, 'first\nlast words\n');
  });
}
