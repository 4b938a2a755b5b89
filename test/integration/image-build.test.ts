// nodelet's image as `make image` builds it (hack/build-image.sh, no container engine): two builds
// of one tag are the same bytes, another tag is another image on the same layers; the archive is a
// valid OCI layout; and its layers, unpacked in order into a root, hold a working nodelet: chrooted
// there, node runs the agent, every program the process runtime spawns runs, the entrypoint writes
// the pods' CNI network; and rooted there, the process runtime serves and runs a pod on a bridge
// network made by the image's own CNI plugins and iptables. As root (chroot, mounts, a bridge).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { closeSync, createReadStream, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';
import { CriClient } from '../../src/cri/client.js';
import type { ContainerConfig, PodSandboxConfig } from '../../src/cri/types.js';

const top = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const skip = process.getuid?.() !== 0 ? 'needs root (chroot, mounts, a bridge)' : false;
const work = mkdtempSync(join(tmpdir(), 'nodelet-image-it-'));
const rootfs = join(work, 'rootfs');
const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const TAG = 'it-1';
const TAG2 = 'it-2';
// The test pods' network: a bridge and range of their own (the cluster has 10.217/16, the DaemonSet 10.218/16).
const BRIDGE = 'nltimage0';
const POD_CIDR = '10.219.250.0/24';

interface Report {
  reference: string;
  archive: string;
  manifestDigest: string;
  imageId: string;
  compressedSize: number;
  uncompressedSize: number;
  layers: Array<{ name: string; digest: string; diffId: string; size: number; uncompressedSize: number }>;
}
interface Manifest {
  config: { digest: string };
  layers: Array<{ mediaType: string; digest: string; size: number }>;
}

interface Built {
  out: string;
  report: Report;
}
const builds: Record<'a' | 'b', Built> = {} as never;
/** The build of the other tag: started once the first two are done, it runs beside the checks of the first. */
let otherBuild: Promise<Built> | undefined;
let runtime: ChildProcess | undefined;

/** hack/build-image.sh into `out`; its report. */
function build(out: string, tag: string): Promise<Report> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(top, 'hack/build-image.sh'), ['--out', out, '--tag', tag], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`hack/build-image.sh --tag ${tag} exited ${code}: ${output}`));
      else resolve(JSON.parse(readFileSync(join(out, `nodelet_${tag}.json`), 'utf8')) as Report);
    });
  });
}

const sha256 = (buf: Buffer) => `sha256:${createHash('sha256').update(buf).digest('hex')}`;

async function sha256Stream(path: string, gunzip = false): Promise<string> {
  const h = createHash('sha256');
  await pipeline(gunzip ? createReadStream(path).pipe(createGunzip()) : createReadStream(path), async (src: AsyncIterable<Buffer>) => {
    for await (const chunk of src) h.update(chunk);
  });
  return `sha256:${h.digest('hex')}`;
}

/** A command in the image's root, with the image's PATH. */
function inImage(cmd: string[], env: Record<string, string> = {}, input?: string) {
  const r = spawnSync('chroot', [rootfs, ...cmd], { encoding: 'utf8', timeout: 60_000, env: { PATH, ...env }, input });
  return { code: r.status, out: r.stdout ?? '', err: (r.stderr ?? '') + (r.error?.message ?? '') };
}

function ok(cmd: string[], env: Record<string, string> = {}, input?: string): string {
  const r = inImage(cmd, env, input);
  assert.equal(r.code, 0, `${cmd.join(' ')} in the image exited ${r.code}: ${r.err}`);
  return r.out;
}

/** Mount points at or under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((l) => unescape(l.split(' ')[4] ?? ''))
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((x, y) => y.length - x.length);
}

before(async () => {
  if (skip) return;
  // Two builds of one tag at once, each into a directory of its own.
  const [a, b] = await Promise.all([build(join(work, 'a'), TAG), build(join(work, 'b'), TAG)]);
  builds.a = { out: join(work, 'a'), report: a };
  builds.b = { out: join(work, 'b'), report: b };
  otherBuild = build(join(work, 'other'), TAG2).then((report) => ({ out: join(work, 'other'), report }));
  otherBuild.catch(() => undefined); // awaited by its test
});

after(async () => {
  if (runtime?.pid && runtime.exitCode === null) {
    const exited = new Promise((r) => runtime!.once('exit', r));
    runtime.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (runtime.exitCode === null) runtime.kill('SIGKILL');
  }
  spawnSync('ip', ['link', 'del', BRIDGE]);
  for (const m of mountsUnder(work)) spawnSync('umount', ['-l', m]);
  // Nothing of the host may be mounted in there when it is removed.
  const left = mountsUnder(work);
  if (left.length === 0) rmSync(work, { recursive: true, force: true });
  else console.error(`image-build test: ${work} kept, still mounted: ${left.join(' ')}`);
});

test('two builds of one tag are the same bytes, in layers shared by what changes least often', { skip }, async (t) => {
  const { a, b } = builds;
  assert.equal(a.report.manifestDigest, b.report.manifestDigest);
  assert.equal(await sha256Stream(join(a.out, a.report.archive)), await sha256Stream(join(b.out, b.report.archive)), 'the archives are identical too');
  assert.equal(a.report.reference, `nodelet.test/nodelet:${TAG}`);
  assert.equal(a.report.archive, `nodelet_${TAG}.tar`);
  assert.deepEqual(a.report.layers.map((l) => l.name), ['debian', 'node', 'node_modules', 'nodelet']);
  assert.ok(a.report.compressedSize < 150e6, `compressed ${a.report.compressedSize} bytes`);
  t.diagnostic(`image: ${(a.report.compressedSize / 1e6).toFixed(1)} MB compressed, ${(a.report.uncompressedSize / 1e6).toFixed(1)} MB uncompressed`);
});

test('the archive is an OCI image layout: named for containerd, every blob its digest, the config as asked', { skip }, async () => {
  const { a } = builds;
  const layout = join(work, 'layout');
  mkdirSync(layout);
  assert.equal(spawnSync('tar', ['-xf', join(a.out, a.report.archive), '-C', layout]).status, 0);
  assert.deepEqual(JSON.parse(readFileSync(join(layout, 'oci-layout'), 'utf8')), { imageLayoutVersion: '1.0.0' });
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Array<{ digest: string; annotations: Record<string, string> }> };
  assert.equal(index.manifests.length, 1);
  assert.equal(index.manifests[0]!.digest, a.report.manifestDigest);
  assert.equal(index.manifests[0]!.annotations['io.containerd.image.name'], `nodelet.test/nodelet:${TAG}`);
  assert.equal(index.manifests[0]!.annotations['org.opencontainers.image.ref.name'], TAG);

  const blob = (digest: string) => join(layout, 'blobs', 'sha256', digest.replace('sha256:', ''));
  for (const name of readdirSync(join(layout, 'blobs', 'sha256'))) assert.equal(await sha256Stream(join(layout, 'blobs', 'sha256', name)), `sha256:${name}`);
  const manifest = JSON.parse(readFileSync(blob(a.report.manifestDigest), 'utf8')) as Manifest;
  const configText = readFileSync(blob(manifest.config.digest));
  assert.equal(sha256(configText), a.report.imageId);
  const config = JSON.parse(configText.toString()) as {
    created: string;
    config: { Entrypoint: string[]; WorkingDir: string; Env: string[]; Labels: Record<string, string> };
    rootfs: { diff_ids: string[] };
  };
  assert.equal(config.created, '1970-01-01T00:00:00Z');
  assert.deepEqual(config.config.Entrypoint, ['/opt/nodelet/deploy/entrypoint.sh']);
  assert.equal(config.config.WorkingDir, '/opt/nodelet');
  assert.ok(config.config.Env.includes(`PATH=${PATH}`));
  assert.ok(config.config.Env.includes(`NODELET_IMAGE_VERSION=${TAG}`));
  assert.equal(config.config.Labels['org.opencontainers.image.version'], TAG);
  for (const [i, layer] of manifest.layers.entries()) {
    assert.equal(layer.mediaType, 'application/vnd.oci.image.layer.v1.tar+gzip');
    assert.equal(await sha256Stream(blob(layer.digest), true), config.rootfs.diff_ids[i], `layer ${i}'s diff ID`);
  }

  // skopeo (what the test cluster pushes images with) reads it as an oci-archive.
  const skopeo = spawnSync('skopeo', ['inspect', `oci-archive:${join(a.out, a.report.archive)}`], { encoding: 'utf8' });
  if (skopeo.error) return;
  assert.equal(skopeo.status, 0, skopeo.stderr);
  assert.equal((JSON.parse(skopeo.stdout) as { Digest: string }).Digest, a.report.manifestDigest);

  // The layers, in order, into the root the tests below chroot into.
  mkdirSync(rootfs);
  for (const layer of manifest.layers) {
    const r = spawnSync('tar', ['-xzf', blob(layer.digest), '-C', rootfs, '--numeric-owner', '--same-permissions'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  }
});

test('chrooted in the image: node runs nodelet, and what the process runtime spawns is there and runs', { skip }, () => {
  assert.ok(existsSync(join(rootfs, 'usr/bin/node')), 'the layers were unpacked');
  assert.equal(ok(['/usr/bin/node', '/opt/nodelet/dist/src/cli/main.js', 'version']).trim(), `nodelet ${(JSON.parse(readFileSync(join(top, 'package.json'), 'utf8')) as { version: string }).version}`);
  assert.match(ok(['/opt/nodelet/dist/bin/nodelet-launch', '--version']), /^nodelet-launch /);
  // Every module of the agent loads: its production dependencies are complete.
  const loaded = ok(['/usr/bin/node', '--input-type=module', '-e', `
    import { readdirSync } from 'node:fs';
    import { join } from 'node:path';
    const files = [];
    const walk = (d) => { for (const e of readdirSync(d, { withFileTypes: true })) e.isDirectory() ? walk(join(d, e.name)) : e.name.endsWith('.js') && files.push(join(d, e.name)); };
    walk('/opt/nodelet/dist/src');
    for (const f of files) await import(f);
    console.log(files.length);`]);
  assert.ok(Number(loaded) > 100, `${loaded.trim()} modules loaded`);

  assert.match(ok(['iptables', '--version']), /^iptables v[\d.]+ \(nf_tables\)/);
  assert.match(ok(['iptables-legacy', '--version']), /^iptables v[\d.]+ \(legacy\)/);
  assert.match(ok(['ip6tables-nft-save', '--version']), /^ip6tables-nft-save v[\d.]+ \(nf_tables\)/);
  for (const plugin of ['bridge', 'host-local', 'loopback', 'portmap']) {
    const v = JSON.parse(ok([`/usr/lib/cni/${plugin}`], { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}')) as { supportedVersions: string[] };
    assert.ok(v.supportedVersions.includes('1.0.0'), `${plugin}: ${v.supportedVersions.join(',')}`);
  }
  assert.match(ok(['tar', '--version']), /^tar \(GNU tar\)/);
  assert.equal(ok(['sh', '-c', 'echo nodelet | zstd -q -c | zstd -d -q -c']), 'nodelet\n');
  for (const [cmd, says] of [['nsenter', 'util-linux'], ['setsid', 'util-linux'], ['unshare', 'util-linux'], ['script', 'util-linux'], ['mount', 'util-linux'], ['umount', 'util-linux'], ['stty', 'coreutils'], ['cat', 'coreutils'], ['cp', 'coreutils'], ['mkfifo', 'coreutils'], ['sleep', 'coreutils'], ['env', 'coreutils'], ['hostname', 'hostname']] as const) {
    assert.match(ok([cmd, '--version']), new RegExp(says), cmd);
  }
  assert.equal(ok(['sh', '-c', 'echo $0; true && sleep 0']), 'sh\n');

  // The system's CA bundle, without this machine's own CAs; users and groups; merged /usr.
  const bundle = readFileSync(join(rootfs, 'etc/ssl/certs/ca-certificates.crt'), 'utf8');
  assert.equal(bundle.split('BEGIN CERTIFICATE').length - 1, readdirSync('/usr/share/ca-certificates/mozilla').filter((n) => n.endsWith('.crt')).length);
  assert.equal(ok(['id', '-un']).trim(), 'root');
  assert.equal(ok(['readlink', '/bin', '/lib', '/var/run']), 'usr/bin\nusr/lib\n/run\n');
  assert.equal(ok(['stat', '-c', '%a', '/tmp']).trim(), '1777');

  // Lean: no npm, no docs, no headers, no tests.
  for (const absent of ['usr/lib/node_modules', 'usr/share/doc', 'usr/share/man', 'usr/include', 'opt/nodelet/dist/test', 'opt/nodelet/dist/bench', 'opt/nodelet/node_modules/.bin', 'opt/nodelet/dist/src/cli/main.js.map']) {
    assert.ok(!existsSync(join(rootfs, absent)), `/${absent} is in the image`);
  }
});

test('the entrypoint writes the pods\' CNI network once, then runs nodelet run with the arguments', { skip }, () => {
  const env = { NODELET_CNI_CONF_DIR: '/tmp/entry-net.d', NODELET_BRIDGE: 'nlt9', NODELET_POD_CIDR: '10.219.9.0/24', NODELET_IP_MASQ: 'false' };
  const r = inImage(['/opt/nodelet/deploy/entrypoint.sh', '--help'], env);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^nodelet [\d.]+: a Kubernetes node agent/, '`nodelet run --help`');
  assert.match(r.err, /iptables backend (nft|legacy)/);
  const file = join(rootfs, 'tmp/entry-net.d/10-nodelet.conflist');
  const conf = JSON.parse(readFileSync(file, 'utf8')) as { plugins: Array<Record<string, unknown> & { ipam?: Record<string, unknown> }> };
  assert.deepEqual(conf.plugins.map((p) => p.type), ['bridge', 'portmap']);
  assert.equal(conf.plugins[0]!.bridge, 'nlt9');
  assert.equal(conf.plugins[0]!.ipMasq, false);
  assert.deepEqual(conf.plugins[0]!.ipam, { type: 'host-local', ranges: [[{ subnet: '10.219.9.0/24' }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: '/var/lib/nodelet/cni/ipam' });
  assert.deepEqual(conf.plugins[1]!.capabilities, { portMappings: true });
  // A second start leaves it as it is; a bad value stops it before nodelet starts.
  const first = readFileSync(file, 'utf8');
  assert.equal(inImage(['/opt/nodelet/deploy/entrypoint.sh', '--help'], { ...env, NODELET_POD_CIDR: '10.219.10.0/24' }).code, 0);
  assert.equal(readFileSync(file, 'utf8'), first);
  const bad = inImage(['/opt/nodelet/deploy/entrypoint.sh', '--help'], { ...env, NODELET_CNI_CONF_DIR: '/tmp/other-net.d', NODELET_BRIDGE: 'x"y' });
  assert.equal(bad.code, 2);
  assert.match(bad.err, /NODELET_BRIDGE=x"y is not an interface name/);
});

// The runtime runs in a mount namespace of its own whose root is the image's, made as a container
// runtime makes a container's: the root bound on itself, /proc, /sys and a few devices, pivot_root (not
// chroot: an exec joins the container's mount namespace at that namespace's root, which under a
// chroot is the host's). Everything mounted there ends with the namespace.
const ENTER_IMAGE = `set -e
root=$1; shift
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
# The host's /sys with its cgroups, as the DaemonSet mounts them: the runtime keeps each
# container's devices there (no cgroups, no container).
mkdir -p "$root/sys"
mount --rbind /sys "$root/sys"
for d in null zero full random urandom tty; do : >"$root/dev/$d"; mount --bind "/dev/$d" "$root/dev/$d"; done
mkdir -p "$root/.host"
cd "$root"
pivot_root . .host
cd /
umount -l /.host
rmdir /.host
exec "$@"`;

test('in the image: the process runtime serves and runs a pod on a bridge network of the image\'s CNI plugins and iptables', { skip }, async () => {
  mkdirSync(join(rootfs, 'etc/cni/net.d'), { recursive: true });
  writeFileSync(join(rootfs, 'etc/cni/net.d/10-image-it.conflist'), JSON.stringify({
    cniVersion: '1.0.0',
    name: 'nodelet-image-it',
    plugins: [
      { type: 'bridge', bridge: BRIDGE, isGateway: true, ipMasq: true, ipam: { type: 'host-local', ranges: [[{ subnet: POD_CIDR }]], dataDir: '/var/lib/nodelet/cni/ipam' } },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  }));
  // The test's busybox image, as the runtime's offline source.
  const images = join(rootfs, 'var/lib/nodelet/images');
  const bb = spawnSync(process.execPath, [join(top, 'test/env/images/build-images.mjs'), images, '-', '/bin/busybox'], { encoding: 'utf8' });
  assert.equal(bb.status, 0, bb.stderr);

  const log = openSync(join(work, 'runtime.log'), 'a');
  runtime = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', ENTER_IMAGE, 'sh', rootfs,
    '/usr/bin/node', '--max-semi-space-size=8', '/opt/nodelet/dist/src/cli/main.js', 'runtime', 'serve', '--socket', '/run/nodelet-it.sock',
    '--root', '/var/lib/nodelet/process', '--images-dir', '/var/lib/nodelet/images', '--log-format', 'json'], { stdio: ['ignore', log, log], env: { PATH } });
  closeSync(log);
  const runtimeLog = () => readFileSync(join(work, 'runtime.log'), 'utf8');
  const cri = new CriClient(`unix://${join(rootfs, 'run/nodelet-it.sock')}`, { statusTimeoutMs: 1000 });
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const v = await cri.version('0.1.0').catch(() => undefined);
      if (v) break;
      assert.ok(Date.now() < deadline && runtime.exitCode === null, `the runtime did not serve: ${runtimeLog()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(runtimeLog(), /"isolation":"launcher"/, 'namespaces by nodelet-launch, not proot');

    await cri.pullImage({ image: 'nodelet.test/busybox:1' });
    const uid = randomUUID();
    mkdirSync(join(rootfs, 'var/log/pods/image-it'), { recursive: true });
    const sbConfig: PodSandboxConfig = { metadata: { name: 'image-it', uid, namespace: 'image-it', attempt: 0 }, hostname: 'image-it', log_directory: '/var/log/pods/image-it', linux: {} };
    const sandbox = await cri.runPodSandbox(sbConfig);
    try {
      const ip = (await cri.podSandboxStatus(sandbox)).status?.network?.ip ?? '';
      assert.match(ip, /^10\.219\.250\.\d+$/, `the pod's IP from the image's bridge and host-local: ${ip}`);
      // The bridge plugin masquerades through the image's iptables.
      assert.match(ok(['iptables', '-t', 'nat', '-S', 'POSTROUTING']), /nodelet-image-it/);

      const config: ContainerConfig = { metadata: { name: 'c', attempt: 0 }, image: { image: 'nodelet.test/busybox:1' }, command: ['sh', '-c', 'echo started; exec sleep 60'], log_path: 'c/0.log' };
      const ctr = await cri.createContainer(sandbox, config, sbConfig);
      await cri.startContainer(ctr);
      const exec = await cri.execSync(ctr, ['sh', '-c', 'hostname; ip -4 -o addr show eth0; cat /etc/nodelet-test-image'], 10);
      assert.equal(exec.exit_code, 0, exec.stderr.toString());
      const [host, addr, image] = exec.stdout.toString().trim().split('\n');
      assert.equal(host, 'image-it');
      assert.match(addr ?? '', new RegExp(`inet ${ip.replace(/\./g, '\\.')}/24`));
      assert.equal(image, 'busybox 1');
      await cri.stopContainer(ctr, 2);
      const st = await cri.containerStatus(ctr);
      assert.equal(st.status?.state, 'CONTAINER_EXITED');
      assert.match(readFileSync(join(rootfs, 'var/log/pods/image-it/c/0.log'), 'utf8'), / stdout F started$/m);
      await cri.removeContainer(ctr);
    } finally {
      await cri.stopPodSandbox(sandbox);
      await cri.removePodSandbox(sandbox);
    }
    assert.doesNotMatch(ok(['iptables', '-t', 'nat', '-S', 'POSTROUTING']), /nodelet-image-it/, 'CNI DEL took its rules away');
  } finally {
    cri.close();
  }
});

test('another tag is another image: its version in the config, on the same layers', { skip }, async () => {
  const { a } = builds;
  const other = await otherBuild!;
  assert.notEqual(other.report.manifestDigest, a.report.manifestDigest);
  assert.notEqual(other.report.imageId, a.report.imageId);
  assert.deepEqual(other.report.layers.map((l) => l.digest), a.report.layers.map((l) => l.digest), 'the tag is in the config only');
  const layout = join(work, 'other-layout');
  mkdirSync(layout);
  assert.equal(spawnSync('tar', ['-xf', join(other.out, other.report.archive), '-C', layout]).status, 0);
  const config = JSON.parse(readFileSync(join(layout, 'blobs', 'sha256', other.report.imageId.replace('sha256:', '')), 'utf8')) as { config: { Env: string[]; Labels: Record<string, string> } };
  assert.ok(config.config.Env.includes(`NODELET_IMAGE_VERSION=${TAG2}`));
  assert.equal(config.config.Labels['org.opencontainers.image.version'], TAG2);
  assert.equal(other.report.reference, `nodelet.test/nodelet:${TAG2}`);
});
