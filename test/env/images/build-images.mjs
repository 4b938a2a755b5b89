// Builds the test images offline as OCI image layout archives, ready for `ctr images import`
// (containerd) or nodelet's process runtime. No registry is involved.
//   node build-images.mjs OUTDIR PAUSE_BINARY BUSYBOX_BINARY [--critest]
// Writes OUTDIR/<name>_<tag>.tar for each image below, with an uncompressed layer and a
// reproducible digest (fixed mtimes and owners), so a rebuild yields the same image ID.
// --critest adds offline stand-ins for the images critest's image specs pull (same names, and the
// properties those specs check: tags, users, one image under two registries); they are busybox
// images of ours, not the upstream ones, so a reference pinned by upstream digest cannot be served.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, readFileSync, copyFileSync, chmodSync, linkSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [outDir, pauseBin, busyboxBin, ...flags] = process.argv.slice(2);
if (!outDir || !pauseBin || !busyboxBin || flags.some((f) => f !== '--critest')) {
  console.error('usage: build-images.mjs OUTDIR PAUSE_BINARY|- BUSYBOX_BINARY [--critest]   (- skips the pause image)');
  process.exit(2);
}
const PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

// Every applet the static busybox has, each a symlink to it (critest, for one, runs top and ipcs).
const applets = execFileSync(busyboxBin, ['--list'], { encoding: 'utf8' }).split('\n').filter((a) => a && a !== 'busybox');

const images = [
  { name: 'nodelet.test/pause', tag: '1', rootfs: (dir) => place(pauseBin, dir, 'pause'), config: { Entrypoint: ['/pause'] } },
  { name: 'nodelet.test/busybox', tag: '1', rootfs: (dir) => busybox(dir, '1'), config: { Cmd: ['sh'] } },
  // A second busybox with other content, so an image change in place is a real change of image ID.
  { name: 'nodelet.test/busybox', tag: '2', rootfs: (dir) => busybox(dir, '2'), config: { Cmd: ['sh'] } },
];

if (flags.includes('--critest')) {
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
    // One image known under two registries: one archive, two names.
    { ...bb('registry.k8s.io/pause', '3.9', 'critest pause'), alsoNamed: ['k8s.gcr.io/pause:3.9'] },
  );
}

function place(src, dir, rel) {
  const dst = join(dir, rel);
  copyFileSync(src, dst);
  chmodSync(dst, 0o755);
}

// Debian's static busybox has no pgrep applet, and critest's exec checks run `pgrep -f`: a small
// one in sh (full command line with -f, else the process name; extended regex; never itself).
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

function busybox(dir, version) {
  for (const d of ['bin', 'etc', 'tmp', 'proc', 'sys', 'dev', 'var', 'root']) mkdirSync(join(dir, d), { recursive: true });
  chmodSync(join(dir, 'tmp'), 0o1777);
  place(busyboxBin, dir, 'bin/busybox');
  // Hard links, as busybox's own images have them (masking one applet then masks only that one).
  for (const a of new Set(applets)) linkSync(join(dir, 'bin/busybox'), join(dir, 'bin', a));
  if (!applets.includes('pgrep')) {
    writeFileSync(join(dir, 'bin/pgrep'), PGREP);
    chmodSync(join(dir, 'bin/pgrep'), 0o755);
  }
  writeFileSync(join(dir, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www-data:/var/www:/bin/false\nuser1000:x:1000:1000::/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
  // Group 50000 holds user 1000 (critest's "predefined group" check).
  writeFileSync(join(dir, 'etc/group'), 'root:x:0:\nwww-data:x:33:\ntest-group:x:50000:user1000\nnobody:x:65534:\n');
  writeFileSync(join(dir, 'etc/nodelet-test-image'), `busybox ${version}\n`);
}

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');

function writeBlob(layout, buf) {
  const digest = sha256(buf);
  writeFileSync(join(layout, 'blobs/sha256', digest), buf);
  return { digest: `sha256:${digest}`, size: buf.length };
}

function tarDir(dir, file) {
  execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--format=posix',
    '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime', '-cf', file, '-C', dir, '.']);
}

mkdirSync(outDir, { recursive: true });
for (const img of images.filter((i) => pauseBin !== '-' || i.name !== 'nodelet.test/pause')) {
  const work = mkdtempSync(join(tmpdir(), 'nodelet-image-'));
  try {
    const rootfs = join(work, 'rootfs');
    mkdirSync(rootfs);
    img.rootfs(rootfs);
    const layerTar = join(work, 'layer.tar');
    tarDir(rootfs, layerTar);

    const layout = join(work, 'layout');
    mkdirSync(join(layout, 'blobs/sha256'), { recursive: true });
    const layerBuf = readFileSync(layerTar);
    const layer = writeBlob(layout, layerBuf);
    const config = writeBlob(layout, Buffer.from(JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: '1970-01-01T00:00:00Z',
      config: { Env: [PATH], WorkingDir: '/', ...img.config },
      rootfs: { type: 'layers', diff_ids: [layer.digest] },
      history: [{ created: '1970-01-01T00:00:00Z', created_by: 'nodelet test/env/images/build-images.mjs' }],
    })));
    const manifest = writeBlob(layout, Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
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
    console.log(`${ref} ${manifest.digest} -> ${join(outDir, base)}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
