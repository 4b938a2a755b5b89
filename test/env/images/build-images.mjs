// Builds the test images offline as OCI image layout archives, ready for `ctr images import`
// (containerd) or nodelet's process runtime. No registry is involved.
//   node build-images.mjs OUTDIR PAUSE_BINARY BUSYBOX_BINARY [--critest NNP_BINARY]
//        [--e2e AGNHOST_BINARY NNP_BINARY AGNHOST_SOURCE_DIR E2E_BUSYBOX_BINARY] [--hostile]
// Writes OUTDIR/<name>_<tag>.tar for each image below, with an uncompressed layer and a
// reproducible digest (fixed mtimes and owners), so a rebuild yields the same image ID, and
// OUTDIR/images.txt: one "<archive> <reference> <manifest digest>" line per image.
// --critest adds offline stand-ins for the images critest's image specs pull (same names, and the
// properties those specs check: tags, users, one image under two registries, a setuid nnp); they are
// busybox images of ours, not the upstream ones, so a reference pinned by upstream digest cannot be served.
// --e2e adds the images Kubernetes' [NodeConformance] specs run, under their upstream names,
// laid out as upstream lays them out (test/images/*/Dockerfile in k8s.io/kubernetes); see
// e2eImages below for what each holds and where it differs.
// --hostile adds the attack suite's images (test/support/suites/attacks.ts), for lab nodes only:
// links that aim the runtime's reads at the host, a uid past the range.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, readFileSync, copyFileSync, chmodSync, linkSync, renameSync, symlinkSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const args = process.argv.slice(2);
const [outDir, pauseBin, busyboxBin] = args;
const flags = { critest: undefined, e2e: undefined, hostile: false };
let bad = !outDir || !pauseBin || !busyboxBin;
for (let i = 3; i < args.length && !bad; i++) {
  if (args[i] === '--critest' && args[i + 1]) flags.critest = { nnp: args[++i] };
  else if (args[i] === '--hostile') flags.hostile = true;
  else if (args[i] === '--e2e' && args.slice(i + 1, i + 5).length === 4) {
    const [agnhost, nnp, agnhostSource, busybox] = args.slice(i + 1, i + 5);
    flags.e2e = { agnhost, nnp, agnhostSource, busybox };
    i += 4;
  } else bad = true;
}
if (bad) {
  console.error('usage: build-images.mjs OUTDIR PAUSE_BINARY|- BUSYBOX_BINARY [--critest NNP_BINARY] [--e2e AGNHOST_BINARY NNP_BINARY AGNHOST_SOURCE_DIR E2E_BUSYBOX_BINARY] [--hostile]   (- skips the pause images)');
  process.exit(2);
}
const PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

// Every applet a static busybox has, each a link to it (critest, for one, runs top and ipcs).
const appletsOf = (bin) => execFileSync(bin, ['--list'], { encoding: 'utf8' }).split('\n').filter((a) => a && a !== 'busybox');

const images = [
  { name: 'nodelet.test/pause', tag: '1', rootfs: (dir) => place(pauseBin, dir, 'pause'), config: { Entrypoint: ['/pause'] } },
  // With the keyctl probe the cluster setup builds beside the pause binary (the seccomp tests run it).
  { name: 'nodelet.test/busybox', tag: '1', rootfs: (dir) => { busybox(dir, '1'); const probe = join(dirname(pauseBin), 'keyctl-probe'); if (pauseBin !== '-' && existsSync(probe)) place(probe, dir, 'bin/keyctl-probe'); }, config: { Cmd: ['sh'] } },
  // A second busybox with other content, so an image change in place is a real change of image ID.
  { name: 'nodelet.test/busybox', tag: '2', rootfs: (dir) => busybox(dir, '2'), config: { Cmd: ['sh'] } },
];

if (flags.critest) {
  const staging = 'gcr.io/k8s-staging-cri-tools';
  const bb = (name, tag, content, config = {}) => ({ name, tag, rootfs: (dir) => busybox(dir, content), config: { Cmd: ['sh'], ...config } });
  images.push(
    bb(`${staging}/test-image-latest`, 'latest', 'critest latest'),
    bb(`${staging}/test-image-tag`, 'test', 'critest tag'),
    bb(`${staging}/test-image-tag`, 'all', 'critest all'),
    // Different tags, different images ...
    ...[1, 2, 3].map((n) => bb(`${staging}/test-image-${n}`, 'latest', `critest ${n}`)),
    // ... and different tags of one image (same content, so the same image ID).
    ...[1, 2, 3].map((n) => bb(`${staging}/test-image-tags`, String(n), 'critest tags')),
    bb(`${staging}/test-image-user-uid`, 'latest', 'critest uid', { User: '1002' }),
    bb(`${staging}/test-image-user-username`, 'latest', 'critest username', { User: 'www-data' }),
    bb(`${staging}/test-image-user-uid-group`, 'latest', 'critest uid-group', { User: '1003:1003' }),
    bb(`${staging}/test-image-user-username-group`, 'latest', 'critest username-group', { User: 'www-data:www-data' }),
    bb(`${staging}/test-image-predefined-group`, 'latest', 'critest predefined-group', { User: '1000' }),
    // critest's no_new_privs specs: nnp (prints its effective uid) setuid root, as upstream's image.
    { name: 'registry.k8s.io/e2e-test-images/nonewprivs', tag: '1.3', rootfs: (dir) => {
      busybox(dir, 'critest nonewprivs');
      mkdirSync(join(dir, 'usr/local/bin'), { recursive: true });
      place(flags.critest.nnp, dir, 'usr/local/bin/nnp');
      chmodSync(join(dir, 'usr/local/bin/nnp'), 0o6755);
    }, config: { Cmd: ['nnp'] } },
    // One image known under two registries: one archive, two names.
    { ...bb('registry.k8s.io/pause', '3.9', 'critest pause'), alsoNamed: ['k8s.gcr.io/pause:3.9'] },
    ...[
      ['registry.k8s.io/e2e-test-images/nginx', '1.14-2', 80, 'nginx'],
      ['registry.k8s.io/e2e-test-images/httpd', '2.4.39-4', 80, 'httpd'],
      [`${staging}/hostnet-nginx-amd64`, 'latest', 12003, 'nginx'],
    ].map(([name, tag, port, server]) => ({
      name,
      tag,
      rootfs: (dir) => {
        busybox(dir, `critest ${server} ${port}`);
        mkdirSync(join(dir, 'usr/sbin'), { recursive: true });
        writeFileSync(join(dir, 'usr/sbin/nginx'), webServer(port, server));
        chmodSync(join(dir, 'usr/sbin/nginx'), 0o755);
      },
      // nginx's title is in its command line ("master process"), which a spec looks for in /proc/1.
      config: { Cmd: ['/usr/sbin/nginx', 'master process'] },
    })),
  );
}

if (flags.hostile) {
  // Its uid from the kernel (busybox's id would read the image's /etc/passwd).
  const idThenSleep = { Cmd: ['sh', '-c', 'grep -m1 ^Uid: /proc/self/status; exec sleep 36000'] };
  images.push(
    // The user database as links: the host's endless /dev/zero, and the host's /etc/shadow (the image has neither).
    { name: 'nodelet.test/hostile-passwd', tag: '1', rootfs: (dir) => {
      busybox(dir, 'hostile passwd');
      rmSync(join(dir, 'etc/passwd'));
      rmSync(join(dir, 'etc/group'));
      symlinkSync('/dev/zero', join(dir, 'etc/passwd'));
      symlinkSync('/etc/shadow', join(dir, 'etc/group'));
    }, config: idThenSleep },
    // 2^32: uid 0 once cut to 32 bits.
    { name: 'nodelet.test/hostile-uid', tag: '1', rootfs: (dir) => busybox(dir, 'hostile uid'), config: { ...idThenSleep, User: '4294967296' } },
    // Device nodes shipped in a layer, open to all: the node's first disk and its memory.
    { name: 'nodelet.test/hostile-devices', tag: '1', rootfs: (dir) => busybox(dir, 'hostile devices'), moreLayers: () => [tarOf([
      { name: 'disk', type: 'block', mode: 0o666, major: 8, minor: 0 },
      { name: 'mem', type: 'char', mode: 0o666, major: 1, minor: 1 },
    ])], config: { Cmd: ['sh', '-c', 'for d in /disk /mem; do head -c 16 $d >/dev/null 2>/tmp/err && echo "$d: read" || echo "$d: $(cat /tmp/err)"; done; exec sleep 36000'] } },
    // Layers over links an earlier layer left: an opaque whiteout, a whiteout and a file, each
    // through a link to the node's /etc (a lab node's own, disposable).
    { name: 'nodelet.test/hostile-whiteout', tag: '1', rootfs: (dir) => {
      busybox(dir, 'hostile whiteout');
      symlinkSync('/etc', join(dir, 'e'));
      symlinkSync('/etc', join(dir, 'w'));
      symlinkSync('/etc/nodelet-attack-target', join(dir, 'g'));
    }, moreLayers: () => [tarOf([
      { name: 'e/.wh..wh..opq', type: 'file' },
      { name: 'w/.wh.hostname', type: 'file' },
      { name: 'g', type: 'file', content: 'written by an image layer\n' },
    ])], config: { Cmd: ['sh', '-c', 'ls -la /e /w /g 2>&1 | head -5; exec sleep 36000'] } },
  );
}

if (flags.e2e) {
  const e2e = 'registry.k8s.io/e2e-test-images';
  const { agnhost, nnp, agnhostSource, busybox: e2eBusybox } = flags.e2e;
  // busybox 1.37 as upstream builds it (hack/build-busybox.sh), as in the upstream images.
  const bb = (dir, content, files = {}) => busybox(dir, content, files, e2eBusybox);
  images.push(
    // The sandbox image the specs also run as a container.
    { name: 'registry.k8s.io/pause', tag: '3.10.2', needsPause: true, rootfs: (dir) => place(pauseBin, dir, 'pause'), config: { Entrypoint: ['/pause'] } },
    // Upstream: busybox 1.37's own image.
    { name: `${e2e}/busybox`, tag: '1.37.0-2', rootfs: (dir) => bb(dir, 'e2e busybox'), config: { Cmd: ['sh'] } },
    // Upstream: busybox with USER 1234.
    { name: `${e2e}/nonroot`, tag: '1.5', rootfs: (dir) => bb(dir, 'e2e nonroot'), config: { Cmd: ['sh'], User: '1234' } },
    // Upstream: alpine with nnp (prints its effective uid) setuid root in /usr/local/bin.
    { name: `${e2e}/nonewprivs`, tag: '1.4', rootfs: (dir) => {
      bb(dir, 'e2e nonewprivs');
      mkdirSync(join(dir, 'usr/local/bin'), { recursive: true });
      place(nnp, dir, 'usr/local/bin/nnp');
      chmodSync(join(dir, 'usr/local/bin/nnp'), 0o6755);
    }, config: { Cmd: ['nnp'] } },
    // Upstream: alpine with /agnhost, /agnhost-2 linking to it, curl, nc, bash and a shell, the
    // porter's TLS key pair at /localhost.{crt,key} (the https hooks' server), and the user and
    // group the supplemental-group specs look for. Here: busybox's applets (nc among them) and
    // Debian's curl and bash with the libraries they link.
    { name: `${e2e}/agnhost`, tag: '2.66.1', rootfs: (dir) => {
      bb(dir, 'e2e agnhost', {
        passwd: 'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n',
        group: 'root:x:0:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\nnobody:x:65534:\n',
      });
      place(agnhost, dir, 'agnhost');
      symlinkSync('agnhost', join(dir, 'agnhost-2'));
      mkdirSync(join(dir, 'uploads'));
      hostBinary(dir, '/usr/bin/curl');
      hostBinary(dir, '/bin/bash');
      for (const f of ['localhost.crt', 'localhost.key']) copyFileSync(join(agnhostSource, 'porter', f), join(dir, f));
    }, config: { Entrypoint: ['/agnhost'], Cmd: ['pause'] } },
    // Upstream: nginx (the node e2e suite's static and mirror pods, its long-running containers).
    // Here: the same stand-in as critest's nginx, busybox's httpd on port 80 under nginx's name.
    ...['1.27.0-2', '1.28.0-2'].map((tag) => ({ name: `${e2e}/nginx`, tag, rootfs: (dir) => {
      bb(dir, `e2e nginx ${tag}`);
      mkdirSync(join(dir, 'usr/sbin'), { recursive: true });
      writeFileSync(join(dir, 'usr/sbin/nginx'), webServer(80, 'nginx'));
      chmodSync(join(dir, 'usr/sbin/nginx'), 0o755);
    }, config: { Cmd: ['/usr/sbin/nginx', 'master process'] } })),
    // Upstream: Debian with dnsutils, for `hostname -f` through glibc's resolver. Here: Debian's
    // dash (as sh), hostname, getent and cat with the libraries they link, and an nsswitch.conf.
    { name: `${e2e}/glibc-dns-testing`, tag: '2.1.1', rootfs: (dir) => {
      for (const d of ['etc', 'tmp', 'proc', 'sys', 'dev', 'root']) mkdirSync(join(dir, d), { recursive: true });
      chmodSync(join(dir, 'tmp'), 0o1777);
      hostBinary(dir, '/bin/dash', '/bin/sh');
      for (const b of ['/bin/hostname', '/usr/bin/getent', '/bin/cat']) hostBinary(dir, b);
      writeFileSync(join(dir, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
      writeFileSync(join(dir, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
      writeFileSync(join(dir, 'etc/group'), 'root:x:0:\nnobody:x:65534:\n');
    }, config: { Cmd: ['sh'] } },
  );
}

// A host binary at `dst` (default: its own path) with every shared library it links (ldd), each at
// its own path, so it runs in an image with no libc of its own.
function hostBinary(dir, src, dst = src) {
  const copy = (from, to) => {
    const at = join(dir, to);
    if (existsSync(at)) return;
    mkdirSync(dirname(at), { recursive: true });
    copyFileSync(from, at); // follows links: the library's file under the name programs load
    chmodSync(at, 0o755);
  };
  copy(src, dst);
  const libs = execFileSync('ldd', [src], { encoding: 'utf8' }).split('\n')
    .map((l) => /=>\s*(\/\S+)/.exec(l)?.[1] ?? /^\s*(\/\S+)\s+\(/.exec(l)?.[1])
    .filter(Boolean);
  for (const lib of libs) copy(lib, lib);
}

function place(src, dir, rel) {
  const dst = join(dir, rel);
  copyFileSync(src, dst);
  chmodSync(dst, 0o755);
}

// Debian's static busybox has no pgrep applet, and critest's exec checks run `pgrep -f`: a small
// one in sh (full command line with -f, else the process name; extended regex; never itself).
// Debian's busybox has no ipcs: the shared memory segments of the caller's IPC namespace, read
// from /proc/sysvipc/shm in util-linux's columns (critest's IPC specs look for a segment's ID).
const IPCS = `#!/bin/sh
echo "------ Shared Memory Segments --------"
echo "key        shmid      owner      perms      bytes      nattch     status"
awk 'NR > 1 { printf "0x%08x %-10s %-10s %-10s %-10s %-10s\\n", $1, $2, $8, $3, $4, $7 }' /proc/sysvipc/shm
`;

// critest's web server images (nginx, and one on the host's network) cannot be had offline:
// busybox's httpd stands in, under their name, with nginx's pid file, a page on the port and a
// first log line naming the server, as theirs do.
const webServer = (port, name) => `#!/bin/sh
echo "${name}: serving on port ${port}" >&2
mkdir -p /var/run /usr/share/nginx/html
[ -f /usr/share/nginx/html/index.html ] || echo '<h1>Welcome to nginx!</h1>' > /usr/share/nginx/html/index.html
echo $$ > /var/run/nginx.pid
httpd -f -p ${port} -h /usr/share/nginx/html &
trap 'kill $!; exit 0' TERM INT
wait
`;

const PGREP = `#!/bin/sh
full=
[ "$1" = -f ] && { full=1; shift; }
[ $# -eq 1 ] || { echo "usage: pgrep [-f] PATTERN" >&2; exit 2; }
self=$(tr '\\0' ' ' </proc/$$/cmdline)
status=1
for d in /proc/[0-9]*; do
  pid=\${d#/proc/}
  [ "$pid" = "$$" ] && continue
  line=$({ tr '\\0' ' ' <"$d/cmdline"; } 2>/dev/null) || continue
  [ -n "$line" ] || continue
  [ "$line" = "$self" ] && continue
  [ -n "$full" ] && line=\${line% } || line=$({ cat "$d/comm"; } 2>/dev/null)
  if printf '%s\\n' "$line" | grep -Eq -- "$1"; then echo "$pid"; status=0; fi
done
exit $status
`;

function busybox(dir, version, files = {}, bin = busyboxBin) {
  const applets = appletsOf(bin);
  for (const d of ['bin', 'etc', 'tmp', 'proc', 'sys', 'dev', 'var', 'root']) mkdirSync(join(dir, d), { recursive: true });
  chmodSync(join(dir, 'tmp'), 0o1777);
  place(bin, dir, 'bin/busybox');
  // Hard links, as busybox's own images have them (masking one applet then masks only that one).
  for (const a of new Set(applets)) linkSync(join(dir, 'bin/busybox'), join(dir, 'bin', a));
  if (!applets.includes('pgrep')) {
    writeFileSync(join(dir, 'bin/pgrep'), PGREP);
    chmodSync(join(dir, 'bin/pgrep'), 0o755);
  }
  if (!applets.includes('ipcs')) {
    writeFileSync(join(dir, 'bin/ipcs'), IPCS);
    chmodSync(join(dir, 'bin/ipcs'), 0o755);
  }
  writeFileSync(join(dir, 'etc/passwd'), files.passwd ?? 'root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www-data:/var/www:/bin/false\nuser1000:x:1000:1000::/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
  // Group 50000 holds user 1000 (critest's "predefined group" check).
  writeFileSync(join(dir, 'etc/group'), files.group ?? 'root:x:0:\nwww-data:x:33:\ntest-group:x:50000:user1000\nnobody:x:65534:\n');
  writeFileSync(join(dir, 'etc/nodelet-test-image'), `busybox ${version}\n`);
}

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');

function writeBlob(layout, buf) {
  const digest = sha256(buf);
  writeFileSync(join(layout, 'blobs/sha256', digest), buf);
  return { digest: `sha256:${digest}`, size: buf.length };
}

// A layer written entry by entry (ustar), for what cannot be made on this machine's disk: device
// nodes (never made here; a lab node unpacks them) and entries a layer lays over an earlier one's.
// Entries: {name, type: 'file'|'dir'|'symlink'|'block'|'char', mode, content, link, major, minor}.
function tarOf(entries) {
  const blocks = [];
  for (const e of entries) {
    const h = Buffer.alloc(512);
    const content = Buffer.from(e.content ?? '');
    const put = (off, len, str) => h.write(str, off, len, 'utf8');
    const octal = (off, len, n) => put(off, len, n.toString(8).padStart(len - 1, '0'));
    put(0, 100, e.name);
    octal(100, 8, e.mode ?? (e.type === 'dir' ? 0o755 : 0o644));
    octal(108, 8, 0);
    octal(116, 8, 0);
    octal(124, 12, e.type === 'file' ? content.length : 0);
    octal(136, 12, 0);
    h.fill(' ', 148, 156);
    put(156, 1, { file: '0', symlink: '2', char: '3', block: '4', dir: '5' }[e.type]);
    if (e.link) put(157, 100, e.link);
    put(257, 6, 'ustar\0');
    put(263, 2, '00');
    octal(329, 8, e.major ?? 0);
    octal(337, 8, e.minor ?? 0);
    let sum = 0;
    for (const b of h) sum += b;
    put(148, 7, `${sum.toString(8).padStart(6, '0')}\0`);
    blocks.push(h);
    if (e.type === 'file' && content.length) blocks.push(content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function tarDir(dir, file) {
  execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--format=posix',
    '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime', '-cf', file, '-C', dir, '.']);
}

mkdirSync(outDir, { recursive: true });
const built = [];
for (const img of images.filter((i) => pauseBin !== '-' || !(i.needsPause || i.name === 'nodelet.test/pause'))) {
  const work = mkdtempSync(join(tmpdir(), 'nodelet-image-'));
  try {
    const rootfs = join(work, 'rootfs');
    mkdirSync(rootfs);
    img.rootfs(rootfs);
    const layerTar = join(work, 'layer.tar');
    tarDir(rootfs, layerTar);

    const layout = join(work, 'layout');
    mkdirSync(join(layout, 'blobs/sha256'), { recursive: true });
    const layers = [readFileSync(layerTar), ...(img.moreLayers?.() ?? [])].map((buf) => writeBlob(layout, buf));
    const config = writeBlob(layout, Buffer.from(JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: '1970-01-01T00:00:00Z',
      config: { Env: [PATH], WorkingDir: '/', ...img.config },
      rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
      history: [{ created: '1970-01-01T00:00:00Z', created_by: 'nodelet test/env/images/build-images.mjs' }],
    })));
    const manifest = writeBlob(layout, Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
      layers: layers.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...l })),
    })));
    const ref = `${img.name}:${img.tag}`;
    const names = [ref, ...(img.alsoNamed ?? [])];
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(join(layout, 'index.json'), JSON.stringify({
      schemaVersion: 2,
      manifests: names.map((n) => ({
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        ...manifest,
        annotations: { 'io.containerd.image.name': n, 'org.opencontainers.image.ref.name': img.tag },
      })),
    }));
    const base = `${img.name.split('/').pop()}_${img.tag}.tar`;
    const tmpOut = join(outDir, `.${base}.tmp`);
    tarDir(layout, tmpOut);
    renameSync(tmpOut, join(outDir, base));
    for (const n of names) built.push(`${base} ${n} ${manifest.digest}`);
    console.log(`${ref} ${manifest.digest} -> ${join(outDir, base)}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
writeFileSync(join(outDir, 'images.txt'), `${built.join('\n')}\n`);
