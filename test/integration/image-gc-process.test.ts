// Image garbage collection against the real process runtime on a filesystem of its own: a 64 MiB
// ext4 on a loop device holds the runtime's root, images imported into it fill it past the high
// threshold, and a GC round brings it under the low one: least recently used images first, the one
// a container uses kept. Needs root (losetup, mount).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ImageSpec, PodSandboxConfig } from '../../src/cri/types.js';
import { defaultImageGCPolicy, ImageGCManager, nodeObjectRef, spaceToFree, statfsCapacity } from '../../src/images/image-gc-manager.js';
import type { EventRecorder } from '../../src/kube/object-ref.js';
import { ProcessRuntime } from '../../src/procruntime/runtime.js';
import { FakeClock } from '../../src/util/clock.js';

const MIN = 60_000;
const work = mkdtempSync(join(tmpdir(), 'nodelet-imagegc-'));
const fsFile = join(work, 'fs.img');
const mnt = join(work, 'mnt');
const root = join(mnt, 'root');
let loopDev = '';
let mounted = false;
let rt: ProcessRuntime | undefined;
let sandbox = '';

const sh = (cmd: string, ...args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** An OCI image layout archive (outside the small filesystem) of one uncompressed layer with `bytes` of random data. */
function buildArchive(name: string, bytes: number): string {
  const dir = join(work, `build-${name}`);
  const rootfs = join(dir, 'rootfs');
  const layout = join(dir, 'layout');
  mkdirSync(rootfs, { recursive: true });
  mkdirSync(join(layout, 'blobs/sha256'), { recursive: true });
  writeFileSync(join(rootfs, 'data.bin'), randomBytes(bytes));
  execFileSync('tar', ['-cf', join(dir, 'layer.tar'), '-C', rootfs, '.']);
  const blob = (buf: Buffer) => {
    const digest = createHash('sha256').update(buf).digest('hex');
    writeFileSync(join(layout, 'blobs/sha256', digest), buf);
    return { digest: `sha256:${digest}`, size: buf.length };
  };
  const layer = blob(readFileSync(join(dir, 'layer.tar')));
  const config = blob(Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Cmd: ['/data.bin'] }, rootfs: { type: 'layers', diff_ids: [layer.digest] } })));
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
      }),
    ),
  );
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const ref = `nodelet.test/gc-${name}:1`;
  writeFileSync(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'io.containerd.image.name': ref } }] }));
  const file = join(work, `${name}.tar`);
  execFileSync('tar', ['-cf', file, '-C', layout, '.']);
  rmSync(dir, { recursive: true, force: true });
  return file;
}

before(() => {
  execFileSync('truncate', ['-s', '64M', fsFile]);
  execFileSync('mkfs.ext4', ['-q', fsFile]);
  loopDev = sh('losetup', '--find', '--show', fsFile);
  mkdirSync(mnt);
  execFileSync('mount', [loopDev, mnt]);
  mounted = true;
});

after(async () => {
  // Each step on its own, so that the filesystem is unmounted and the device detached whatever failed.
  const attempt = async (what: string, fn: () => unknown) => {
    try {
      await fn();
    } catch (err) {
      console.error(`cleanup: ${what}: ${(err as Error).message}`);
    }
  };
  if (rt && sandbox) await attempt('remove the sandbox', () => rt!.removePodSandbox(sandbox));
  if (rt) await attempt('stop the runtime', () => rt!.stop());
  if (mounted) await attempt('umount', () => execFileSync('umount', [mnt]));
  if (loopDev) await attempt('losetup -d', () => execFileSync('losetup', ['-d', loopDev]));
  rmSync(work, { recursive: true, force: true });
});

const usagePercent = async () => spaceToFree(await statfsCapacity(root), defaultImageGCPolicy)!.usagePercent;

test('image GC on a full image filesystem: down to the low threshold, least recently used first, the image in use kept', async () => {
  mkdirSync(root);
  rt = new ProcessRuntime({ root, cniConfDir: join(work, 'no-cni') });
  await rt.start();
  const runtime = rt;
  const { capacityBytes } = await statfsCapacity(root);
  // Sizes as shares of the filesystem: a created container's image also gets a flattened copy (its
  // rootfs), and an import needs room for the archive's blob besides the unpacked layer.
  const share = (f: number) => Math.floor(capacityBytes * f);
  const ids: Record<string, string> = {};
  for (const [name, f] of [['recent', 0.17], ['older', 0.17], ['inuse', 0.04], ['never', 0.04]] as const) {
    const [img] = await runtime.images.importArchive(buildArchive(name, share(f)));
    ids[name] = img!.id;
  }

  const clock = new FakeClock();
  const removed: string[] = [];
  const events: string[] = [];
  const recorder: EventRecorder = { event: (_ref, type, reason, message) => events.push(`${type} ${reason} ${message}`) };
  const manager = new ImageGCManager({
    images: {
      listImages: () => runtime.listImages(),
      imageFsInfo: () => runtime.imageFsInfo(),
      removeImage: async (spec: ImageSpec) => {
        await runtime.removeImage(spec);
        removed.push(spec.image ?? '');
      },
    },
    runtime,
    recorder,
    clock,
    nodeRef: () => nodeObjectRef('gc-node'),
  });

  // Pod on the node's namespaces (no CNI needed); containers are created only, never started.
  const sbConfig: PodSandboxConfig = {
    metadata: { name: 'gc', namespace: 'gc', uid: 'gc-uid', attempt: 0 },
    log_directory: join(work, 'logs'),
    linux: { security_context: { namespace_options: { network: 'NODE', ipc: 'NODE', pid: 'CONTAINER' } } },
  };
  sandbox = await runtime.runPodSandbox(sbConfig);
  const create = (name: string) => runtime.createContainer(sandbox, { metadata: { name }, image: { image: ids[name] }, command: ['/data.bin'], log_path: `${name}.log` }, sbConfig);

  // "older" used first, "recent" a minute later, "inuse" from then on; "never" never.
  const older = await create('older');
  await manager.detectImages();
  await runtime.removeContainer(older);
  const recent = await create('recent');
  clock.step(MIN);
  await manager.detectImages();
  await runtime.removeContainer(recent);
  await create('inuse');
  clock.step(3 * MIN); // past imageMinimumGCAge (2m) since all were first detected

  const usedBefore = await usagePercent();
  assert.ok(usedBefore >= 85, `the images fill the filesystem past the high threshold (${usedBefore}% used)`);
  await manager.garbageCollect();
  const fs = manager.imageFsStats()!;
  assert.equal(fs.mountpoint, join(root, 'images'), 'ImageFsInfo names the store on the loop filesystem');
  assert.equal(fs.capacityBytes, capacityBytes);
  assert.deepEqual(removed, [ids.never, ids.older], 'never used first, then the least recently used, until enough was freed');
  const left = (await runtime.listImages()).map((i) => i.id).sort();
  assert.deepEqual(left, [ids.recent!, ids.inuse!].sort(), 'the more recently used and the one in use remain');
  const afterGC = await usagePercent();
  assert.ok(afterGC <= 80, `usage down to the low threshold: ${usedBefore}% -> ${afterGC}%`);
  assert.deepEqual(events, []);

  // Under the threshold now: another round removes nothing.
  clock.step(5 * MIN);
  await manager.garbageCollect();
  assert.equal(removed.length, 2);
});
