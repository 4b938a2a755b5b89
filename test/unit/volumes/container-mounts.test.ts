// A container's mounts: volumeMounts with subPaths pinned and kept inside their volume, read-only
// volumes, /etc/hosts as the kubelet writes it, the termination-message file and its reading.
import { after, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { chmodSync, readdirSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerStatus } from '../../../src/cri/types.js';
import { logTail, readTerminationMessage } from '../../../src/runtime/termination-message.js';
import { etcHostsContent, expandSubPathExpr, makeMounts, type MountInputs } from '../../../src/volumes/container-mounts.js';
import { hostMounter, type Mounter } from '../../../src/volumes/mounter.js';

const pins: string[] = [];
after(() => {
  for (const p of pins.reverse()) spawnSync('umount', ['-l', p]);
});
import { PodPaths } from '../../../src/volumes/paths.js';

function setup(volumeMounts: NonNullable<V1Pod['spec']>['containers'][number]['volumeMounts'], extra: Partial<NonNullable<V1Pod['spec']>> = {}) {
  const root = mkdtempSync(join(tmpdir(), 'cm-'));
  const vol = join(root, 'pods/u/volumes/kubernetes.io~empty-dir/data');
  mkdirSync(join(vol, 'inner'), { recursive: true });
  const binds: Array<[string, string]> = [];
  const mounter: Mounter = {
    mountTmpfs: async () => undefined,
    bind: async (src, dst) => void binds.push([src, dst]),
    // The real pinning (nodelet-launch --subpath-bind), undone after the test.
    bindSubPath: async (base, subPath, pin, mode) => {
      await hostMounter.bindSubPath(base, subPath, pin, mode);
      pins.push(pin);
      binds.push([join(base, subPath), pin]);
    },
    unmount: async () => undefined,
    isMountPoint: async (d) => binds.some(([, dst]) => dst === d),
    mountsUnder: async () => [],
  };
  const pod: V1Pod = {
    metadata: { name: 'web', namespace: 'ns', uid: 'u' },
    spec: { containers: [{ name: 'c', image: 'i', volumeMounts, terminationMessagePath: '/dev/termination-log' }], ...extra },
  };
  const inputs: MountInputs = {
    pod,
    container: pod.spec!.containers[0]!,
    volumes: new Map([
      ['data', { name: 'data', plugin: 'kubernetes.io/empty-dir', path: vol, readOnly: false, remount: false }],
      ['cfg', { name: 'cfg', plugin: 'kubernetes.io/configmap', path: join(root, 'cfg'), readOnly: true, remount: true }],
    ]),
    paths: new PodPaths(root),
    mounter,
    env: new Map([['POD', 'web'], ['EMPTY', '']]),
    podIPs: ['10.0.0.7'],
    hostname: 'web',
    clusterDomain: 'cluster.local',
  };
  return { root, vol, binds, inputs };
}

test('volumeMounts map to CRI mounts; read-only volumes are read-only; propagation modes are the kubelet\'s', async () => {
  const { inputs, vol } = setup([
    { name: 'data', mountPath: '/data', mountPropagation: 'HostToContainer' },
    { name: 'cfg', mountPath: 'etc/cfg' },
    { name: 'data', mountPath: '/ro', readOnly: true },
  ]);
  const mounts = await makeMounts(inputs);
  assert.deepEqual(mounts.slice(0, 3).map((m) => [m.container_path, m.host_path, m.readonly, m.propagation]), [
    ['/data', vol, false, 'PROPAGATION_HOST_TO_CONTAINER'],
    ['/etc/cfg', join(inputs.paths.root, 'cfg'), true, 'PROPAGATION_PRIVATE'],
    ['/ro', vol, true, 'PROPAGATION_PRIVATE'],
  ]);
  assert.equal(mounts[3]!.container_path, '/etc/hosts');
  assert.equal(mounts[4]!.container_path, '/dev/termination-log');
  assert.equal(statSync(mounts[4]!.host_path!).mode & 0o777, 0o666);
  assert.match(mounts[4]!.host_path!, /pods\/u\/containers\/c\/[0-9a-f]{8}$/);
  await assert.rejects(makeMounts({ ...inputs, container: { name: 'c', volumeMounts: [{ name: 'nope', mountPath: '/x' }] } }), /cannot find volume "nope" to mount into container "c"/);
  await assert.rejects(makeMounts({ ...inputs, container: { name: 'c', volumeMounts: [{ name: 'data', mountPath: '/x', mountPropagation: 'Sideways' }] } }), /invalid MountPropagation mode: "Sideways"/);
});

test('a subPath is made if missing, pinned by a bind mount, and refused when it is absolute, has .. or leads out through a link', async () => {
  const { inputs, vol, binds, root } = setup([{ name: 'data', mountPath: '/sub', subPath: 'new/dir' }]);
  mkdirSync(join(vol, 'new'));
  const [m] = await makeMounts(inputs);
  assert.equal(m!.host_path, join(root, 'pods/u/volume-subpaths/data/c/0'));
  assert.deepEqual(binds, [[join(vol, 'new/dir'), m!.host_path]]);
  assert.ok(statSync(join(vol, 'new/dir')).isDirectory());
  writeFileSync(join(vol, 'new/dir/seen'), 'through the pin');
  assert.equal(readFileSync(join(m!.host_path!, 'seen'), 'utf8'), 'through the pin', 'the pin is the subPath');
  chmodSync(vol, 0o777);
  const [m2] = await makeMounts({ ...inputs, container: { name: 'c2', volumeMounts: [{ name: 'data', mountPath: '/sub2', subPath: 'made' }] } });
  assert.ok(m2);
  assert.equal(statSync(join(vol, 'made')).mode & 0o777, 0o777, 'a made subPath has the volume\'s mode, whatever the umask');

  const outside = mkdtempSync(join(tmpdir(), 'outside-'));
  writeFileSync(join(outside, 'secret'), 'host file');
  symlinkSync(outside, join(vol, 'escape'));
  const bad = (subPath: string) => makeMounts({ ...inputs, container: { name: 'bad', volumeMounts: [{ name: 'data', mountPath: '/x', subPath }] } });
  await assert.rejects(bad('escape/secret'), /failed to prepare subPath for volumeMount "data" of container "bad"/);
  await assert.rejects(bad('escape/nothere'), /failed to create subPath directory for volumeMount "data"/);
  await assert.rejects(bad('/etc'), /error SubPath `\/etc` must not be an absolute path/);
  await assert.rejects(bad('inner/../../x'), /must not contain '\.\.'/);
  assert.equal(binds.length, 2, 'nothing outside the volume was ever mounted');
  assert.deepEqual(readdirSync(outside), ['secret'], 'nor made');

  assert.equal(expandSubPathExpr('logs/$(POD)', inputs.env), 'logs/web');
  assert.throws(() => expandSubPathExpr('$(EMPTY)/$(NOPE)', inputs.env), /missing value for EMPTY, NOPE/);
});

test('/etc/hosts is the kubelet\'s: header, loopback, the pod\'s IPs and name (FQDN with a subdomain), host aliases; a container mounting its own gets none', async () => {
  const pod: V1Pod = { metadata: { namespace: 'ns' }, spec: { containers: [], subdomain: 'sub', hostAliases: [{ ip: '1.2.3.4', hostnames: ['a', 'b'] }] } };
  const text = etcHostsContent(pod, ['10.0.0.7'], 'web', 'cluster.local');
  assert.equal(text, '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n10.0.0.7\tweb.sub.ns.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n1.2.3.4\ta\tb\n');
  assert.match(etcHostsContent({ spec: { containers: [], hostNetwork: true } }, [], 'x', '', '127.0.0.1 node\n'), /^# Kubernetes-managed hosts file \(host network\)\.\n127\.0\.0\.1 node\n$/);
  const { inputs } = setup([{ name: 'data', mountPath: '/etc/hosts', subPath: 'hosts' }]);
  writeFileSync(join(inputs.volumes.get('data')!.path, 'hosts'), 'mine');
  const mounts = await makeMounts(inputs);
  assert.equal(mounts.filter((m) => m.container_path === '/etc/hosts').length, 1);
  const { inputs: i2 } = setup([]);
  const [hosts] = await makeMounts(i2);
  assert.match(readFileSync(hosts!.host_path!, 'utf8'), /10\.0\.0\.7\tweb\n$/);
});

test('termination messages: the file\'s last 4 KiB; with FallbackToLogsOnError and a failure, the log\'s last 80 lines / 2 KiB', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tm-'));
  const file = join(dir, 'msg');
  const log = join(dir, '0.log');
  writeFileSync(file, `${'x'.repeat(5000)}END`);
  const status = (exit: number) => ({ exit_code: exit, reason: 'Error', log_path: log, mounts: [{ container_path: '/dev/termination-log', host_path: file }] }) as unknown as ContainerStatus;
  const m = await readTerminationMessage(status(1), '/dev/termination-log', 'File');
  assert.equal(m.length, 4096);
  assert.ok(m.endsWith('END'));
  writeFileSync(file, '');
  const lines = Array.from({ length: 100 }, (_, i) => `2026-12-01T00:00:00.000000000Z stdout F line ${i}`);
  writeFileSync(log, `${lines.join('\n')}\n2026-12-01T00:00:00.0Z stderr P part\n2026-12-01T00:00:00.0Z stderr F ial\n`);
  const fallback = await readTerminationMessage(status(2), '/dev/termination-log', 'FallbackToLogsOnError');
  assert.equal(fallback.split('\n').filter(Boolean).length, 80);
  assert.ok(fallback.endsWith('line 99\npartial\n'));
  assert.equal(await readTerminationMessage(status(0), '/dev/termination-log', 'FallbackToLogsOnError'), '', 'a container that succeeded falls back on nothing');
  assert.equal(await readTerminationMessage(status(2), '/dev/termination-log', 'File'), '');
  assert.equal(Buffer.byteLength(logTail(`${'2026 stdout F '}${'y'.repeat(3000)}\n`, 80, 2048)), 2048);
});
