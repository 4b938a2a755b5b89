// Builds nodelet's image for the DaemonSet without a container engine, as an OCI image layout
// archive that `ctr -n k8s.io images import`, `skopeo copy oci-archive:...` and nodelet's own
// process runtime (`nodelet images import`) read.
//   node hack/image/build-image.mjs [--name NAME] [--tag TAG] [--out DIR] [--source URL]
// NAME defaults to nodelet.test/nodelet, TAG to package.json's version, DIR to dist/image. Writes
// DIR/<last element of NAME>_<TAG>.tar (the name the process runtime's offline images use) and
// DIR/<same>.json: reference, digests, sizes, layers, and the Debian packages the files came from.
// Needs `make build` first (dist/src, dist/bin/nodelet-launch).
//
// Reproducible: the same inputs (this checkout's package.json, lock file, proto/, deploy/ and
// compiled dist/, the machine's Debian packages) give the same bytes, so the same manifest digest:
// files sorted, owners 0, modes normalised, every mtime and the config's `created` at
// SOURCE_DATE_EPOCH (default 0), pax headers without atime/ctime, layers gzipped by GNU gzip
// with no name or time (`gzip -n`; not Node's zlib, Chromium's fork, which picks its code paths by
// CPU feature and promises no byte-identical output across machines). No temporary name or date
// lands in the image. The tag is in the config (label and NODELET_IMAGE_VERSION), so each tag is
// a distinct image on the same layers.
//
// Four layers, least often changed first, so a new build of nodelet ships only the last one:
//   debian        the programs the agent and its process runtime run (listed in `debian` below),
//                 the CNI plugins of a bridge network, iptables, the libraries they link, /etc
//   node          /usr/bin/node and the libraries only it links
//   node_modules  /opt/nodelet/node_modules: `npm ci --omit=dev` of package-lock.json
//   nodelet       /opt/nodelet: package.json, dist/src, dist/bin/nodelet-launch, proto/, deploy/entrypoint.sh, deploy/cgroup-root.sh
//
// Where the Debian files come from: this machine's installed packages, each file copied from the
// file system and checked against the md5sum dpkg recorded for it at installation (a file that
// does not match, or that no package owns, stops the build), with the shared libraries each
// program links found by ldd. Not `apt-get download` + `dpkg-deb -x`: the build then works
// offline, takes the exact versions the tests on this machine ran against, and needs no package
// scripts run; the check against dpkg's records keeps local changes out all the same. Debian's
// package versions are listed in the .json.
import { createHash } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync, closeSync, copyFileSync, cpSync, createReadStream, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync,
  readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const top = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const pkg = JSON.parse(readFileSync(join(top, 'package.json'), 'utf8'));
// The image's Node.js is the machine's /usr/bin/node, whichever node runs this script.
const nodeVersion = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout?.trim().replace(/^v/, '');

// ---------------------------------------------------------------------------------------------
// Arguments

const opts = { name: 'nodelet.test/nodelet', tag: pkg.version, out: join(top, 'dist', 'image'), source: repositoryOf(pkg) };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const key = argv[i]?.replace(/^--/, '');
  if (!['name', 'tag', 'out', 'source'].includes(key) || argv[i + 1] === undefined) usage(`bad argument ${JSON.stringify(argv[i])}`);
  opts[key] = argv[++i];
}
if (!/^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/.test(opts.tag)) usage(`--tag ${JSON.stringify(opts.tag)} is not an image tag`);
if (!/^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(\/[a-z0-9]+([._-]+[a-z0-9]+)*)*$/.test(opts.name)) usage(`--name ${JSON.stringify(opts.name)} is not an image name (lower case, no tag)`);
const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? 0);
if (!Number.isInteger(epoch) || epoch < 0) usage(`SOURCE_DATE_EPOCH=${process.env.SOURCE_DATE_EPOCH} is not a number of seconds`);
const created = new Date(epoch * 1000).toISOString().replace(/\.000Z$/, 'Z');
const reference = `${opts.name}:${opts.tag}`;
const outDir = resolve(opts.out);
const baseName = `${opts.name.split('/').pop()}_${opts.tag}`;

function usage(why) {
  console.error(`build-image: ${why}\nusage: build-image.mjs [--name NAME] [--tag TAG] [--out DIR] [--source URL]`);
  process.exit(2);
}

function repositoryOf(p) {
  const r = typeof p.repository === 'string' ? p.repository : p.repository?.url;
  return process.env.IMAGE_SOURCE || r || undefined;
}

for (const f of ['dist/src/cli/main.js', 'dist/bin/nodelet-launch']) {
  if (!existsSync(join(top, f))) fail(`${f} is missing: run make build first`);
}
// The image lays /usr out merged, as Debian bookworm does: taking the host's files by their
// canonical paths is only right on a host laid out the same way.
for (const d of ['bin', 'sbin', 'lib', 'lib64']) {
  if (realpathSync(`/${d}`) !== `/usr/${d}`) fail(`/${d} is not a link to /usr/${d}: the build needs a merged-/usr Debian host`);
}

function fail(why) {
  console.error(`build-image: ${why}`);
  process.exit(1);
}

// ---------------------------------------------------------------------------------------------
// What dpkg knows: every packaged file's md5sum by its canonical path, and which package has it

const canonicalDirs = new Map();
/** A host path with its directories resolved (/lib/x → /usr/lib/x), the file itself not followed. */
function canonical(path) {
  const dir = dirname(path);
  let real = canonicalDirs.get(dir);
  if (real === undefined) {
    try {
      real = realpathSync(dir);
    } catch {
      real = null;
    }
    canonicalDirs.set(dir, real);
  }
  return real === null ? undefined : join(real, basename(path));
}

const dpkgSums = new Map(); // canonical path -> [{ pkg, md5 }]
for (const f of readdirSync('/var/lib/dpkg/info').filter((n) => n.endsWith('.md5sums'))) {
  const owner = f.slice(0, -'.md5sums'.length).replace(/:.*$/, '');
  for (const line of readFileSync(join('/var/lib/dpkg/info', f), 'utf8').split('\n')) {
    const m = /^([0-9a-f]{32}) +(.+)$/.exec(line);
    const path = m && canonical(`/${m[2]}`);
    if (!path) continue;
    const list = dpkgSums.get(path) ?? [];
    list.push({ pkg: owner, md5: m[1] });
    dpkgSums.set(path, list);
  }
}
const packagesUsed = new Set();

/** The package whose recorded md5sum `buf` matches at `path`; the build stops on anything else. */
function verifyPackaged(path, buf) {
  const sums = dpkgSums.get(path);
  if (!sums) fail(`${path} belongs to no installed Debian package`);
  const md5 = createHash('md5').update(buf).digest('hex');
  const match = sums.find((s) => s.md5 === md5);
  if (!match) fail(`${path} differs from what package ${sums.map((s) => s.pkg).join('/')} installed (md5 ${md5})`);
  packagesUsed.add(match.pkg);
  return match.pkg;
}

/** A package's files (not its directories), as dpkg lists them. */
function packageFiles(name) {
  const r = spawnSync('dpkg-query', ['-L', name], { encoding: 'utf8' });
  if (r.status !== 0) fail(`Debian package ${name} is not installed (hack/install-deps.sh installs it): ${r.stderr.trim()}`);
  return r.stdout.split('\n').filter((p) => p.startsWith('/') && existsSync(p) && !lstatSync(p).isDirectory());
}

// ---------------------------------------------------------------------------------------------
// Layers and what goes into them

const work = mkdtempSync(join(tmpdir(), 'nodelet-image-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

class Layer {
  constructor(name, createdBy) {
    this.name = name;
    this.createdBy = createdBy;
    this.dir = join(work, 'layers', name);
    mkdirSync(this.dir, { recursive: true });
  }
  at(path) {
    return join(this.dir, path);
  }
  mkdir(path) {
    mkdirSync(this.at(path), { recursive: true });
  }
  write(path, content, mode = 0o644) {
    this.mkdir(dirname(path));
    writeFileSync(this.at(path), content);
    chmodSync(this.at(path), mode);
    placed.set(path, this.name);
  }
  link(path, target) {
    this.mkdir(dirname(path));
    symlinkSync(target, this.at(path));
    placed.set(path, this.name);
  }
}

/** Every path put in the image so far (by any layer): an upper layer takes nothing twice. */
const placed = new Map();

/**
 * A file of the host's Debian packages at its canonical path, checked against dpkg's record; a
 * link as a link (and what it points at). ELF programs and libraries wait in `unlinked` for
 * withLibraries(), which adds what they link.
 */
function take(layer, src) {
  const dst = canonical(src);
  if (!dst) fail(`${src} does not exist`);
  if (placed.has(dst)) return;
  const st = lstatSync(dst);
  if (st.isSymbolicLink()) {
    const target = readlinkSync(dst);
    layer.link(dst, target);
    take(layer, resolve(dirname(dst), target));
    return;
  }
  if (!st.isFile()) fail(`${dst} is neither a file nor a link`);
  const buf = readFileSync(dst);
  verifyPackaged(dst, buf);
  layer.write(dst, buf, st.mode & 0o111 ? 0o755 : 0o644);
  if (buf.subarray(0, 4).equals(Buffer.from('\x7fELF', 'latin1'))) unlinked.push(dst);
}
const unlinked = [];

/**
 * The libraries every ELF file taken so far links (and the dynamic loader), as ldd resolves them,
 * and theirs in turn: one ldd for many files (a static one has none).
 */
function withLibraries(layer) {
  while (unlinked.length > 0) {
    const r = spawnSync('ldd', unlinked.splice(0), { encoding: 'utf8', maxBuffer: 16 << 20 });
    const libs = r.stdout.split('\n')
      .map((l) => /=>\s*(\/\S+)/.exec(l)?.[1] ?? /^\s+(\/\S+)\s+\(/.exec(l)?.[1])
      .filter(Boolean);
    if (r.error) fail(`ldd: ${r.error.message}`);
    for (const lib of new Set(libs)) take(layer, lib);
  }
}

const isProgram = (p) => /^\/(usr\/)?s?bin\//.test(p);
const named = (...names) => (p) => isProgram(p) && names.includes(basename(p));

// The Debian packages and which of their files: first what src/ spawns (its users named), then
// what the CNI plugins and the entrypoint need, then what makes `kubectl exec` into the pod useful.
const debian = [
  // sh: the container wrapper (`setsid -f sh -c ...`, procruntime/container-start.ts), sysctls
  // (`nsenter ... sh -c`, sandbox-namespaces.ts), the entrypoint. /bin/sh itself is made below.
  ['dash', named('dash')],
  // cat, stty, sleep (procruntime/streams.ts, isolation.ts), cp and mkfifo (container-start.ts,
  // image-store.ts), env and true (isolation.ts, sandbox-namespaces.ts), mkdir, mv, ln, readlink
  // (the entrypoint); the rest of coreutils for whoever execs into the pod.
  ['coreutils', (p) => isProgram(p) || p.startsWith('/usr/libexec/coreutils/')],
  // setsid (container-start.ts, sandbox-namespaces.ts), nsenter (streams.ts, sandbox-namespaces.ts),
  // unshare (sandbox-namespaces.ts)
  ['util-linux', named('setsid', 'nsenter', 'unshare')],
  // mount, umount: overlay roots, volumes, subPaths, the pods' /dev/shm (container-start.ts, volumes/mounter.ts, runtime.ts)
  ['mount', named('mount', 'umount')],
  // script: a terminal for exec with tty (streams.ts)
  ['bsdutils', named('script')],
  // hostname: the pod's UTS name (`unshare --uts=... hostname NAME`, sandbox-namespaces.ts)
  ['hostname', named('hostname')],
  // GNU tar: image layers (--numeric-owner, registry/unpack.ts) and archives (image-store.ts)
  ['tar', named('tar')],
  // zstd: zstd-compressed layers (registry/unpack.ts)
  ['zstd', named('zstd')],
  ['grep', named('grep')],
  // The plugins of a bridge network (the entrypoint's conflist): the bridge, its addresses, lo, hostPorts.
  ['containernetworking-plugins', (p) => ['bridge', 'host-local', 'loopback', 'portmap'].includes(basename(p)) && p.startsWith('/usr/lib/cni/')],
  // iptables, which the bridge (ipMasq) and portmap plugins run: both backends, as Debian ships
  // them (the entrypoint picks the node's), with the extensions they load at run time (dlopen, so
  // not seen by ldd: taken whole).
  ['iptables', (p) => p.includes('/xtables/') || named('xtables-legacy-multi', 'xtables-nft-multi', ...iptablesCommands('legacy'), ...iptablesCommands('nft'))(p)],
];

function iptablesCommands(backend) {
  return ['iptables', 'ip6tables'].flatMap((t) => ['', '-save', '-restore'].map((s) => `${t}-${backend}${s}`));
}

function debianLayer(L) {
  for (const d of ['bin', 'sbin', 'lib', 'lib64']) {
    L.mkdir(`usr/${d}`);
    L.link(`/${d}`, `usr/${d}`);
  }
  for (const d of ['etc', 'opt', 'proc', 'sys', 'dev', 'run', 'tmp', 'root', 'var/tmp', 'var/lib', 'var/log', 'home']) L.mkdir(d);
  L.link('/var/run', '/run');

  for (const [name, wanted] of debian) {
    const files = packageFiles(name).filter(wanted);
    if (files.length === 0) fail(`nothing taken from Debian package ${name}`);
    for (const f of files) take(L, f);
  }
  withLibraries(L);
  L.link('/usr/bin/sh', 'dash');
  // Debian's alternatives, pointed at nft (Debian's default); the entrypoint points them at the
  // node's backend.
  for (const cmd of ['iptables', 'iptables-save', 'iptables-restore', 'ip6tables', 'ip6tables-save', 'ip6tables-restore']) {
    const backend = cmd.replace(/^(ip6?tables)/, '$1-nft');
    L.link(`/etc/alternatives/${cmd}`, `/usr/sbin/${backend}`);
    L.link(`/usr/sbin/${cmd}`, `/etc/alternatives/${cmd}`);
  }

  // The CA bundle as update-ca-certificates makes it from Debian's ca-certificates (every Mozilla
  // certificate, in name order), not the host's own file: that one holds the host's local CAs.
  const caDir = '/usr/share/ca-certificates/mozilla';
  const certs = readdirSync(caDir).filter((n) => n.endsWith('.crt')).sort();
  const bundle = certs.map((n) => {
    const buf = readFileSync(join(caDir, n));
    verifyPackaged(join(caDir, n), buf);
    return buf.toString('latin1').replace(/\n?$/, '\n');
  }).join('');
  L.write('/etc/ssl/certs/ca-certificates.crt', bundle);
  take(L, '/etc/os-release'); // the Node's osImage (src/kube/host.ts): in the pod, the image's
  L.write('/etc/passwd', 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
  L.write('/etc/group', 'root:x:0:\nnogroup:x:65534:\n');
  L.write('/etc/nsswitch.conf', 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n');
}

function nodeLayer(L) {
  take(L, '/usr/bin/node');
  withLibraries(L);
}

/**
 * `npm ci --omit=dev` into a copy of the manifest and lock file: exactly the locked production
 * dependencies, then `npm ls` to be sure none is missing. Started first: it runs while the lower
 * layers are assembled and compressed. --ignore-scripts: the one install script among them
 * (protobufjs') only prints a warning, and scripts are what could make the result depend on the machine.
 */
function npmInstall() {
  const stage = join(work, 'npm');
  mkdirSync(stage);
  for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(top, f), join(stage, f));
  const env = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  const npm = (args) => new Promise((ok) => {
    const child = spawn('npm', args, { cwd: stage, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (e) => ok({ code: -1, out: e.message }));
    child.on('exit', (code) => ok({ code, out }));
  });
  return (async () => {
    const ci = await npm(['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--loglevel=error']);
    if (ci.code !== 0) fail(`npm ci --omit=dev failed:\n${ci.out}`);
    const ls = await npm(['ls', '--omit=dev', '--all']);
    if (ls.code !== 0) fail(`npm ls --omit=dev finds the production dependencies incomplete:\n${ls.out}`);
    return join(stage, 'node_modules');
  })();
}

async function nodeModulesLayer(L) {
  const installed = await npmInstalled;
  // Without what only a compiler, an editor or a reader wants: TypeScript, source maps, docs
  // (license texts stay), the .bin links.
  const keep = (src) => {
    const n = basename(src);
    if (n === '.bin' && lstatSync(src).isDirectory()) return false;
    if (/\.[cm]?ts$/.test(n) || /\.map$/.test(n)) return false;
    if (/\.(md|markdown)$/i.test(n) && !/^(licen[cs]e|notice|copying)/i.test(n)) return false;
    return true;
  };
  cpSync(installed, L.at('/opt/nodelet/node_modules'), { recursive: true, filter: keep, verbatimSymlinks: true });
}

function nodeletLayer(L) {
  const from = (rel, to = rel) => {
    const st = statSync(join(top, rel));
    L.write(join('/opt/nodelet', to), readFileSync(join(top, rel)), st.mode & 0o111 ? 0o755 : 0o644);
  };
  from('package.json'); // nodelet's version (src/version.ts)
  for (const p of readdirSync(join(top, 'proto')).filter((n) => n.endsWith('.proto'))) from(join('proto', p)); // loaded at run time (cri/client.ts, procruntime/server.ts, prober/grpc.ts)
  from('dist/bin/nodelet-launch');
  from('deploy/entrypoint.sh');
  from('deploy/cgroup-root.sh');
  // The compiled agent: each dist/src/X.js whose src/X.ts exists (a file left in dist/ by a
  // source since removed is not part of this build); no source maps (their sources are not here).
  const walk = (rel) => {
    for (const e of readdirSync(join(top, 'dist', rel), { withFileTypes: true })) {
      const r = join(rel, e.name);
      if (e.isDirectory()) walk(r);
      else if (r.endsWith('.js') && existsSync(join(top, r.replace(/\.js$/, '.ts')))) from(join('dist', r));
    }
  };
  walk('src');
}

// ---------------------------------------------------------------------------------------------
// Deterministic tars, gzip, the OCI layout

/** Modes that do not depend on the umask or the copy: directories 0755 (but /tmp's and /root's), files 0755 or 0644. */
function normalise(dir, rel = '') {
  const special = { tmp: 0o1777, 'var/tmp': 0o1777, root: 0o700 };
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const r = join(rel, e.name);
    const p = join(dir, r);
    if (e.isDirectory()) {
      chmodSync(p, special[r] ?? 0o755);
      normalise(dir, r);
    } else if (e.isFile()) {
      chmodSync(p, statSync(p).mode & 0o111 ? 0o755 : 0o644);
    }
  }
}

function tarDir(dir, file) {
  const r = spawnSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', `--mtime=@${epoch}`, '--format=posix',
    '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime', '--no-acls', '--no-xattrs', '--no-selinux',
    '-cf', file, '-C', dir, '.'], { env: { ...process.env, LC_ALL: 'C' }, encoding: 'utf8' });
  if (r.status !== 0) fail(`tar of ${dir} failed: ${r.stderr}`);
}

function gzipFile(src, dst) {
  return new Promise((ok, ko) => {
    const out = openSync(dst, 'w');
    const child = spawn('gzip', ['-n', '-6', '-c', src], { stdio: ['ignore', out, 'inherit'] });
    child.on('error', ko);
    child.on('exit', (code) => {
      closeSync(out);
      code === 0 ? ok() : ko(new Error(`gzip of ${src} exited ${code}`));
    });
  });
}

function sha256File(path) {
  return new Promise((ok, ko) => {
    const h = createHash('sha256');
    createReadStream(path).on('data', (b) => h.update(b)).on('end', () => ok(h.digest('hex'))).on('error', ko);
  });
}

const npmInstalled = npmInstall();
const layers = [
  [new Layer('debian', 'Debian bookworm files: sh, coreutils, util-linux, tar, zstd, iptables, CNI plugins, CA certificates'), debianLayer],
  [new Layer('node', `Node.js ${nodeVersion}: /usr/bin/node`), nodeLayer],
  [new Layer('node_modules', 'npm ci --omit=dev: /opt/nodelet/node_modules'), nodeModulesLayer],
  [new Layer('nodelet', `nodelet ${pkg.version}: /opt/nodelet`), nodeletLayer],
];

const layout = join(work, 'layout');
const blobs = join(layout, 'blobs', 'sha256');
mkdirSync(blobs, { recursive: true });

function writeBlob(buf) {
  const digest = createHash('sha256').update(buf).digest('hex');
  writeFileSync(join(blobs, digest), buf);
  return { digest: `sha256:${digest}`, size: buf.length };
}

/** A layer's tar, its diff ID, its gzipped blob and digest. */
async function pack(layer) {
  normalise(layer.dir);
  const tar = join(work, `${layer.name}.tar`);
  tarDir(layer.dir, tar);
  const gz = `${tar}.gz`;
  await gzipFile(tar, gz);
  const [diffId, digest] = await Promise.all([sha256File(tar), sha256File(gz)]);
  renameSync(gz, join(blobs, digest));
  return { name: layer.name, createdBy: layer.createdBy, diffId: `sha256:${diffId}`, digest: `sha256:${digest}`, size: statSync(join(blobs, digest)).size, uncompressedSize: statSync(tar).size };
}

// Each layer is compressed while the next is assembled.
const packing = [];
for (const [layer, fill] of layers) {
  await fill(layer);
  packing.push(pack(layer));
}
const built = await Promise.all(packing);

const labels = {
  'org.opencontainers.image.title': 'nodelet',
  'org.opencontainers.image.description': pkg.description,
  'org.opencontainers.image.version': opts.tag,
  'org.opencontainers.image.licenses': pkg.license,
  ...(opts.source ? { 'org.opencontainers.image.source': opts.source } : {}),
};
const config = writeBlob(Buffer.from(JSON.stringify({
  created,
  architecture: 'amd64',
  os: 'linux',
  config: {
    Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', `NODELET_IMAGE_VERSION=${opts.tag}`],
    Entrypoint: ['/opt/nodelet/deploy/entrypoint.sh'],
    WorkingDir: '/opt/nodelet',
    Labels: labels,
  },
  rootfs: { type: 'layers', diff_ids: built.map((l) => l.diffId) },
  history: built.map((l) => ({ created, created_by: `hack/image/build-image.mjs: ${l.createdBy}` })),
})));
const manifest = writeBlob(Buffer.from(JSON.stringify({
  schemaVersion: 2,
  mediaType: 'application/vnd.oci.image.manifest.v1+json',
  config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
  layers: built.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: l.digest, size: l.size })),
  annotations: { 'org.opencontainers.image.version': opts.tag },
})));
writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
writeFileSync(join(layout, 'index.json'), JSON.stringify({
  schemaVersion: 2,
  mediaType: 'application/vnd.oci.image.index.v1+json',
  manifests: [{
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    ...manifest,
    platform: { architecture: 'amd64', os: 'linux' },
    annotations: { 'io.containerd.image.name': reference, 'org.opencontainers.image.ref.name': opts.tag },
  }],
}));

mkdirSync(outDir, { recursive: true });
const archive = join(outDir, `${baseName}.tar`);
tarDir(layout, join(outDir, `.${baseName}.tar.tmp`));
renameSync(join(outDir, `.${baseName}.tar.tmp`), archive);

const versions = spawnSync('dpkg-query', ['-W', '-f', '${Package} ${Version}\\n', ...[...packagesUsed].sort()], { encoding: 'utf8' }).stdout
  .split('\n').filter(Boolean).map((l) => l.split(' '));
const report = {
  reference,
  archive: basename(archive),
  manifestDigest: manifest.digest,
  imageId: config.digest,
  compressedSize: built.reduce((n, l) => n + l.size, 0) + config.size,
  uncompressedSize: built.reduce((n, l) => n + l.uncompressedSize, 0),
  archiveSize: statSync(archive).size,
  created,
  layers: built.map(({ createdBy, ...l }) => l),
  node: nodeVersion,
  debianPackages: Object.fromEntries(versions),
};
writeFileSync(join(outDir, `${baseName}.json`), `${JSON.stringify(report, null, 2)}\n`);

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
const shown = relative(process.cwd(), archive);
console.log(`${reference} ${manifest.digest} -> ${shown.startsWith('..') ? archive : shown}`);
for (const l of built) console.log(`  layer ${l.name.padEnd(12)} ${mb(l.size).padStart(9)} compressed ${mb(l.uncompressedSize).padStart(9)} uncompressed`);
console.log(`  image        ${mb(report.compressedSize).padStart(9)} compressed ${mb(report.uncompressedSize).padStart(9)} uncompressed (${versions.length} Debian packages, Node.js ${nodeVersion})`);
if (!opts.source) console.log('  (no org.opencontainers.image.source label: package.json has no repository; set IMAGE_SOURCE or --source)');
