// The volume plugins and the volume manager over a fake mounter: contents, modes, the kubelet's
// error messages and events, and what is set up once or again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1ConfigMap, V1Pod, V1Secret, V1Volume } from '@kubernetes/client-node';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeClock } from '../../../src/util/clock.js';
import { formatMap } from '../../../src/volumes/downward-api.js';
import { checkHostPathType } from '../../../src/volumes/host-path.js';
import type { Mounter } from '../../../src/volumes/mounter.js';
import { PodPaths } from '../../../src/volumes/paths.js';
import { TokenManager } from '../../../src/volumes/token-manager.js';
import type { VolumeHost } from '../../../src/volumes/types.js';
import { VolumeManager, VolumesNotReadyError } from '../../../src/volumes/volume-manager.js';
import { MemoryRecorder } from '../runtime/deps.js';

class FakeMounter implements Mounter {
  mounts = new Map<string, string>();
  async mountTmpfs(dir: string, size?: number) {
    this.mounts.set(dir, `tmpfs size=${size ?? 0}`);
  }
  async bind(src: string, dst: string) {
    this.mounts.set(dst, `bind ${src}`);
  }
  async bindSubPath(base: string, subPath: string, pin: string) {
    this.mounts.set(pin, `subpath ${base} ${subPath}`);
  }
  async unmount(dir: string) {
    this.mounts.delete(dir);
  }
  async isMountPoint(dir: string) {
    return this.mounts.has(dir);
  }
  async mountsUnder(dir: string) {
    return [...this.mounts.keys()].filter((m) => m === dir || m.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length);
  }
}

function harness(objects: { cms?: Record<string, V1ConfigMap>; secrets?: Record<string, V1Secret> } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'vol-'));
  const mounter = new FakeMounter();
  const tokens: string[] = [];
  const host: VolumeHost = {
    paths: new PodPaths(root),
    mounter,
    objects: {
      getConfigMap: async (_ns, name) => objects.cms?.[name],
      getSecret: async (_ns, name) => objects.secrets?.[name],
    },
    tokens: new TokenManager({ requestToken: async (ns, sa, spec) => (tokens.push(`${ns}/${sa}/${spec.expirationSeconds}/${spec.audiences?.join() ?? ''}`), { token: `tok-${tokens.length}`, expirationTimestamp: new Date(Date.UTC(2026, 0, 1, 1)).toISOString() }) }, new FakeClock()),
    allocatable: () => ({ cpu: 2, memory: 4 * 2 ** 30 }),
  };
  const recorder = new MemoryRecorder();
  const vm = new VolumeManager({ host, recorder, logger: silentLogger() });
  return { root, mounter, host, recorder, vm, tokens };
}

function pod(volumes: V1Volume[], extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid: 'uid-1', labels: { b: '2', a: 'x"y' } },
    spec: {
      volumes,
      containers: [{ name: 'c', image: 'i', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/m/${v.name}` })), resources: { limits: { memory: '64Mi' }, requests: { cpu: '250m' } } }],
      ...extra,
    },
  };
}

test('configMap: every key (data then binaryData) as a file with the default mode, items at their paths with theirs', async () => {
  const cm: V1ConfigMap = { data: { one: '1', two: '2' }, binaryData: { bin: Buffer.from([0, 1, 2]).toString('base64') } };
  const h = harness({ cms: { cfg: cm } });
  const vols = await h.vm.mountPod(pod([{ name: 'all', configMap: { name: 'cfg', defaultMode: 0o644 } }, { name: 'some', configMap: { name: 'cfg', items: [{ key: 'two', path: 'x/y', mode: 0o400 }] } }]));
  const all = vols.get('all')!;
  assert.equal(all.path, join(h.root, 'pods/uid-1/volumes/kubernetes.io~configmap/all'));
  assert.equal(all.readOnly, true);
  assert.deepEqual(readdirSync(all.path).filter((n) => !n.startsWith('..')).sort(), ['bin', 'one', 'two']);
  assert.deepEqual([...readFileSync(join(all.path, 'bin'))], [0, 1, 2]);
  assert.equal(statSync(join(all.path, 'one')).mode & 0o777, 0o644);
  const some = vols.get('some')!.path;
  assert.equal(readFileSync(join(some, 'x/y'), 'utf8'), '2');
  assert.equal(statSync(join(some, 'x/y')).mode & 0o777, 0o400);
  assert.equal(h.mounter.mounts.size, 0, 'configMap volumes are on the disk');
});

test('a missing ConfigMap fails the volume with the kubelet\'s FailedMount event; optional ones are empty; a missing key is named', async () => {
  const h = harness({ cms: { cfg: { data: { a: '1' } } } });
  await assert.rejects(h.vm.mountPod(pod([{ name: 'v', configMap: { name: 'nope' } }])), VolumesNotReadyError);
  assert.deepEqual(h.recorder.events.map((e) => [e.type, e.reason, e.message]), [['Warning', 'FailedMount', 'MountVolume.SetUp failed for volume "v" : configmap "nope" not found']]);
  const opt = await h.vm.mountPod(pod([{ name: 'v', configMap: { name: 'nope', optional: true } }]));
  assert.deepEqual(readdirSync(opt.get('v')!.path).filter((n) => !n.startsWith('..')), []);
  await assert.rejects(h.vm.mountPod({ ...pod([{ name: 'k', configMap: { name: 'cfg', items: [{ key: 'missing', path: 'm' }] } }]), metadata: { name: 'q', namespace: 'ns', uid: 'uid-2' } }));
  assert.equal(h.recorder.events.at(-1)!.message, 'MountVolume.SetUp failed for volume "k" : configmap references non-existent config key: missing');
});

test('a volume set up once keeps its content when its ConfigMap goes away: an event, and the pod goes on', async () => {
  const cms: Record<string, V1ConfigMap> = { cfg: { data: { a: '1' } } };
  const h = harness({ cms });
  const p = pod([{ name: 'v', configMap: { name: 'cfg' } }]);
  const dir = (await h.vm.mountPod(p)).get('v')!.path;
  cms.cfg = { data: { a: '2' } };
  await h.vm.mountPod(p);
  assert.equal(readFileSync(join(dir, 'a'), 'utf8'), '2', 'set up again on each sync: edits reach the file');
  delete cms.cfg;
  await h.vm.mountPod(p);
  assert.equal(readFileSync(join(dir, 'a'), 'utf8'), '2');
  assert.equal(h.recorder.events.at(-1)!.reason, 'FailedMount');
});

test('secret: data decoded, on a tmpfs; a missing key in the kubelet\'s words', async () => {
  const h = harness({ secrets: { s: { data: { user: Buffer.from('admin').toString('base64') } } } });
  const v = (await h.vm.mountPod(pod([{ name: 's', secret: { secretName: 's' } }]))).get('s')!;
  assert.equal(readFileSync(join(v.path, 'user'), 'utf8'), 'admin');
  assert.match(h.mounter.mounts.get(v.path)!, /^tmpfs/);
  await assert.rejects(h.vm.mountPod({ ...pod([{ name: 'x', secret: { secretName: 's', items: [{ key: 'pw', path: 'pw' }] } }]), metadata: { name: 'q', namespace: 'ns', uid: 'u2' } }));
  assert.equal(h.recorder.events.at(-1)!.message, 'MountVolume.SetUp failed for volume "x" : references non-existent secret key: pw');
});

test('downwardAPI: labels as sorted key="value" lines, resources with divisors and the node\'s allocatable as the default limit', async () => {
  assert.equal(formatMap({ b: '2', a: 'x"y\n' }), 'a="x\\"y\\n"\nb="2"');
  const h = harness();
  const v = (await h.vm.mountPod(pod([{ name: 'd', downwardAPI: { items: [
    { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
    { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
    { path: 'cpu_request', resourceFieldRef: { containerName: 'c', resource: 'requests.cpu', divisor: '1m' } },
    { path: 'cpu_limit', resourceFieldRef: { containerName: 'c', resource: 'limits.cpu' } },
    { path: 'mem_limit', resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '1Mi' } },
  ] } }]))).get('d')!;
  const read = (f: string) => readFileSync(join(v.path, f), 'utf8');
  assert.equal(read('labels'), 'a="x\\"y"\nb="2"');
  assert.equal(read('name'), 'p');
  assert.equal(read('cpu_request'), '250');
  assert.equal(read('cpu_limit'), '2', 'no CPU limit: the node\'s allocatable');
  assert.equal(read('mem_limit'), '64');
});

test('projected: sources merged; the token is the pod\'s, 0600 and owned by the one user every container runs as', async () => {
  const h = harness({ cms: { 'kube-root-ca.crt': { data: { 'ca.crt': 'CA' } } } });
  const p = pod([{ name: 'kube-api-access-x', projected: { defaultMode: 0o644, sources: [
    { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
    { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
    { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
  ] } }], { securityContext: { runAsUser: 1234 } });
  const v = (await h.vm.mountPod(p)).get('kube-api-access-x')!;
  assert.equal(readFileSync(join(v.path, 'token'), 'utf8'), 'tok-1');
  assert.equal(readFileSync(join(v.path, 'ca.crt'), 'utf8'), 'CA');
  assert.equal(readFileSync(join(v.path, 'namespace'), 'utf8'), 'ns');
  const st = statSync(join(v.path, 'token'));
  assert.equal(st.mode & 0o777, 0o600);
  assert.equal(st.uid, 1234);
  assert.equal(statSync(join(v.path, 'ca.crt')).mode & 0o777, 0o644);
  assert.deepEqual(h.tokens, ['ns/default/3607/']);
  await h.vm.mountPod(p);
  assert.equal(h.tokens.length, 1, 'a token is kept until 80% of its life has passed');

  const bad = pod([{ name: 'b', projected: { sources: [{ configMap: { name: 'x' } }, { secret: { name: 'y' } }] } }]);
  bad.metadata!.uid = 'uid-b';
  await assert.rejects(h.vm.mountPod(bad));
  assert.equal(h.recorder.events.at(-1)!.message, 'MountVolume.SetUp failed for volume "b" : [configmap "x" not found, secret "y" not found]');
});

test('emptyDir: 0777 on the disk, or a tmpfs sized by sizeLimit; its content survives another sync; fsGroup on files made once', async () => {
  const h = harness();
  const p = pod([{ name: 'e', emptyDir: {} }, { name: 'm', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } }], { securityContext: { fsGroup: 2000 } });
  const vols = await h.vm.mountPod(p);
  const e = vols.get('e')!.path;
  assert.equal(statSync(e).mode & 0o7777, 0o2777);
  assert.equal(statSync(e).gid, 2000);
  writeFileSync(join(e, 'data'), 'kept');
  assert.equal(h.mounter.mounts.get(vols.get('m')!.path), `tmpfs size=${16 * 2 ** 20}`);
  await h.vm.mountPod(p);
  assert.equal(readFileSync(join(e, 'data'), 'utf8'), 'kept');
  await assert.rejects(h.vm.mountPod({ ...pod([{ name: 'h', emptyDir: { medium: 'Weird' } }]), metadata: { uid: 'u3', name: 'q', namespace: 'ns' } }));
  assert.match(h.recorder.events.at(-1)!.message, /unknown storage medium "Weird"/);
});

test('hostPath: each type checked or made, with the kubelet\'s messages', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hp-'));
  writeFileSync(join(dir, 'f'), '');
  assert.equal(await checkHostPathType(join(dir, 'f'), 'File'), undefined);
  assert.equal(await checkHostPathType(join(dir, 'f'), 'Directory'), `hostPath type check failed: ${join(dir, 'f')} is not a directory, it's a File`);
  assert.equal(await checkHostPathType(join(dir, 'nope'), 'Socket'), `hostPath type check failed, ${join(dir, 'nope')} is not a socket file, unable to determine its type: path "${join(dir, 'nope')}" does not exist`);
  assert.equal(await checkHostPathType(join(dir, 'new/deep'), 'DirectoryOrCreate'), undefined);
  assert.ok(statSync(join(dir, 'new/deep')).isDirectory());
  assert.equal(await checkHostPathType(join(dir, 'g'), 'FileOrCreate'), undefined);
  assert.ok(statSync(join(dir, 'g')).isFile());
  assert.equal(await checkHostPathType('/dev/null', 'CharDevice'), undefined);
  assert.equal(await checkHostPathType(dir, 'Sometimes'), 'Sometimes is an invalid volume type');
  // Under a file: a message in Go's words, not a thrown ENOTDIR (the bad-input drill's volume-hostpath-create-under-file).
  assert.equal(await checkHostPathType(join(dir, 'f/sub'), 'DirectoryOrCreate'), `mkdir ${join(dir, 'f/sub')}: not a directory`);
  assert.equal(await checkHostPathType(join(dir, 'f/sub'), 'Directory'), `hostPath type check failed, ${join(dir, 'f/sub')} is not a directory, unable to determine its type: path "${join(dir, 'f/sub')}" does not exist`);
  const h = harness();
  await assert.rejects(h.vm.mountPod(pod([{ name: 'h', hostPath: { path: `${dir}/../etc` } }])));
  assert.match(h.recorder.events.at(-1)!.message, /invalid HostPath `.*`: must not contain '\.\.'/);
});

test('only volumes some container mounts are set up; unsupported kinds say so; teardown unmounts and removes; orphans are cleaned', async () => {
  const h = harness();
  const p = pod([{ name: 'used', emptyDir: { medium: 'Memory' } }]);
  p.spec!.volumes!.push({ name: 'unused', emptyDir: {} });
  const vols = await h.vm.mountPod(p);
  assert.deepEqual([...vols.keys()], ['used']);
  const pvc = pod([{ name: 'claim', persistentVolumeClaim: { claimName: 'c' } }]);
  pvc.metadata!.uid = 'uid-pvc';
  await assert.rejects(h.vm.mountPod(pvc));
  assert.match(h.recorder.events.at(-1)!.message, /volume type persistentVolumeClaim is not supported by nodelet/);

  await h.vm.unmountPod('uid-1');
  assert.equal(h.mounter.mounts.size, 0);
  assert.ok(!existsSync(join(h.root, 'pods/uid-1/volumes/kubernetes.io~empty-dir/used')));
  assert.ok(existsSync(join(h.root, 'pods/uid-1')), 'the pod directory stays until the pod is gone');
  mkdirSync(join(h.root, 'pods/gone/containers/c'), { recursive: true });
  const removed = await h.vm.cleanupOrphans((uid) => uid === 'uid-pvc');
  assert.deepEqual(removed.sort(), ['gone', 'uid-1']);
  assert.deepEqual(readdirSync(join(h.root, 'pods')), ['uid-pvc']);
});

test('a pod directory holding a mount is never removed through it', async () => {
  const h = harness();
  const dir = join(h.root, 'pods/x');
  mkdirSync(join(dir, 'elsewhere'), { recursive: true });
  symlinkSync('/etc', join(dir, 'link'));
  h.mounter.mounts.set(join(dir, 'elsewhere'), 'bind /srv');
  await h.vm.unmountPod('x');
  // unmountPod releases only volumes and subpaths it knows; this mount is not one of them.
  await assert.rejects(h.vm.removePod('x'), /still has mounts/);
  assert.ok(existsSync('/etc/hostname') || existsSync('/etc'), 'the link target is untouched');
});
