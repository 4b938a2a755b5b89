import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ContainerStatusResponse, Container, Image, ImageFsInfoResponse, ImageSpec } from '../../../src/cri/types.js';
import { CriNotFoundError } from '../../../src/cri/errors.js';
import {
  defaultImageGCPolicy,
  formatSize,
  ImageGCManager,
  imagesInUse,
  nodeObjectRef,
  planImageGC,
  spaceToFree,
  updateImageRecords,
  validateImageGCPolicy,
  type FsCapacity,
  type ImageGCPolicy,
  type ImageRecord,
} from '../../../src/images/image-gc-manager.js';
import { FakeClock } from '../../../src/util/clock.js';
import { MemoryRecorder } from '../runtime/deps.js';

const MIN = 60_000;
const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

function image(id: string, size: number, pinned = false): Image {
  return { id, size: String(size), pinned, repo_tags: [], repo_digests: [], uid: null, username: '', spec: null };
}

function container(id: string, imageId: string, extra: Partial<Container> = {}): Container {
  return {
    id,
    pod_sandbox_id: 'sb',
    metadata: { name: id, attempt: 0 },
    image: { image: `${imageId}-name`, annotations: {}, user_specified_image: '', runtime_handler: '' },
    image_ref: imageId,
    image_id: imageId,
    state: 'CONTAINER_EXITED',
    created_at: '0',
    labels: {},
    annotations: {},
    ...extra,
  } as Container;
}

/** The CRI calls the manager makes, in memory: images, containers (with their mounts), one image filesystem. */
class FakeCRI {
  images: Image[] = [];
  containers: Container[] = [];
  mounts = new Map<string, string[]>();
  removed: string[] = [];
  failRemove = new Map<string, string>();
  fs: FsCapacity = { capacityBytes: 1000, availableBytes: 600 };
  fsError?: string;
  fsInfo?: ImageFsInfoResponse;
  listError?: string;
  statusError?: string;
  /** Containers listed but gone by the time their status is asked (removed in between). */
  vanished = new Set<string>();
  mountpoints: string[] = [];

  async listImages(): Promise<Image[]> {
    if (this.listError) throw new Error(this.listError);
    return [...this.images];
  }
  async removeImage(spec: ImageSpec): Promise<void> {
    const why = this.failRemove.get(spec.image ?? '');
    if (why) throw new Error(why);
    this.removed.push(spec.image ?? '');
    this.images = this.images.filter((i) => i.id !== spec.image);
  }
  async imageFsInfo(): Promise<ImageFsInfoResponse> {
    const usage = { timestamp: '0', fs_id: { mountpoint: '/var/lib/images' }, used_bytes: { value: '123' }, inodes_used: { value: '0' } };
    return this.fsInfo ?? { image_filesystems: [usage], container_filesystems: [usage] };
  }
  async listContainers(): Promise<Container[]> {
    return [...this.containers];
  }
  async containerStatus(id: string): Promise<ContainerStatusResponse> {
    if (this.statusError) throw new Error(this.statusError);
    if (this.vanished.has(id)) throw new CriNotFoundError('ContainerStatus', 'unix:///fake', id);
    const mounts = (this.mounts.get(id) ?? []).map((img) => ({ container_path: '/m', host_path: '', image: { image: img } }));
    return { status: { id, mounts }, info: {} } as unknown as ContainerStatusResponse;
  }
  fsStats = (mountpoint: string): FsCapacity => {
    this.mountpoints.push(mountpoint);
    if (this.fsError) throw new Error(this.fsError);
    return this.fs;
  };
}

function setup(policy: Partial<ImageGCPolicy> = {}, extra: { gcPeriodMs?: number; detectPeriodMs?: number } = {}) {
  const clock = new FakeClock();
  const cri = new FakeCRI();
  const recorder = new MemoryRecorder();
  const m = new ImageGCManager({
    images: cri,
    runtime: cri,
    recorder,
    clock,
    nodeRef: () => nodeObjectRef('node-1', 'node-uid'),
    policy: { ...defaultImageGCPolicy, minAgeMs: 0, ...policy },
    fsStats: cri.fsStats,
    ...extra,
  });
  return { clock, cri, recorder, m };
}

const flush = () => new Promise((r) => setImmediate(r));

const T = Date.UTC(2026, 0, 1);
const rec = (firstDetected: number, lastUsed = 0, size = 100, pinned = false): ImageRecord => ({ firstDetected, lastUsed, size, pinned });
const p8580: ImageGCPolicy = { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 2 * MIN, maxAgeMs: 0 };

test('planImageGC: the kubelet\'s decision, table-driven', () => {
  const old = T - 10 * MIN;
  const cases: Array<{ name: string; records: Record<string, ImageRecord>; inUse?: string[]; fs: FsCapacity; policy?: Partial<ImageGCPolicy>; beganGC?: number; byAge?: string[]; bySpace: string[]; enough?: boolean }> = [
    { name: 'under the high threshold (84%): nothing', records: { a: rec(old) }, fs: { capacityBytes: 1000, availableBytes: 160 }, bySpace: [] },
    { name: '85.1% is 85% (whole percent, rounded down)', records: { a: rec(old, 0, 60) }, fs: { capacityBytes: 1000, availableBytes: 151 }, bySpace: ['a'] },
    { name: 'at the high threshold (85%): frees to the low one', records: { a: rec(old, 0, 60) }, fs: { capacityBytes: 1000, availableBytes: 150 }, bySpace: ['a'] },
    {
      name: 'over: least recently used first, until enough (200 - 50 = 150 bytes)',
      records: { used2: rec(old, T - 2 * MIN, 100), never: rec(old, 0, 100), used1: rec(old, T - 5 * MIN, 100), used3: rec(old, T - MIN, 100) },
      fs: { capacityBytes: 1000, availableBytes: 50 },
      bySpace: ['never', 'used1'],
    },
    {
      name: 'ties of last use broken by first detection',
      records: { later: rec(old + MIN, 0, 300), earlier: rec(old, 0, 300) },
      fs: { capacityBytes: 1000, availableBytes: 50 },
      bySpace: ['earlier'],
    },
    { name: 'in use: never', records: { a: rec(old, 0, 500), b: rec(old, 0, 500) }, inUse: ['a'], fs: { capacityBytes: 1000, availableBytes: 50 }, bySpace: ['b'] },
    { name: 'pinned (the sandbox image): never', records: { pause: rec(old, 0, 500, true), b: rec(old, 0, 10) }, fs: { capacityBytes: 1000, availableBytes: 50 }, bySpace: ['b'], enough: false },
    { name: 'younger than minAge since first detected: never', records: { young: rec(T - MIN, 0, 500), ok: rec(T - 2 * MIN, 0, 500) }, fs: { capacityBytes: 1000, availableBytes: 50 }, bySpace: ['ok'] },
    { name: 'last used now: never', records: { now: rec(old, T, 500) }, fs: { capacityBytes: 1000, availableBytes: 50 }, bySpace: [], enough: false },
    { name: 'not enough to free', records: { a: rec(old, 0, 10), b: rec(old, 0, 20) }, fs: { capacityBytes: 1000, availableBytes: 50 }, bySpace: ['a', 'b'], enough: false },
    { name: 'available above capacity counts as capacity', records: { a: rec(old) }, fs: { capacityBytes: 1000, availableBytes: 5000 }, bySpace: [] },
    {
      name: 'maxAge: images unused for longer go whatever the usage, before the space step',
      records: { stale: rec(old, T - 61 * MIN), fresh: rec(old, T - 59 * MIN), never: rec(T - MIN) },
      fs: { capacityBytes: 1000, availableBytes: 900 },
      policy: { maxAgeMs: 60 * MIN },
      beganGC: T - 61 * MIN,
      byAge: ['never', 'stale'],
      bySpace: [],
    },
    { name: 'maxAge: nothing until maxAge has passed since GC began', records: { stale: rec(old, T - 120 * MIN) }, fs: { capacityBytes: 1000, availableBytes: 900 }, policy: { maxAgeMs: 60 * MIN }, beganGC: T - 60 * MIN, bySpace: [] },
    { name: 'maxAge 0: off', records: { stale: rec(old, 1) }, fs: { capacityBytes: 1000, availableBytes: 900 }, beganGC: 0, bySpace: [] },
    {
      name: 'maxAge and space: an image gone for age is not counted again',
      records: { stale: rec(old, T - 61 * MIN, 500), b: rec(old, T - 3 * MIN, 100), c: rec(old, T - 2 * MIN, 100) },
      fs: { capacityBytes: 1000, availableBytes: 100 },
      policy: { maxAgeMs: 60 * MIN },
      beganGC: 0,
      byAge: ['stale'],
      bySpace: ['b'],
    },
  ];
  for (const c of cases) {
    const plan = planImageGC({
      records: new Map(Object.entries(c.records)),
      inUse: new Set(c.inUse ?? []),
      fs: c.fs,
      now: T,
      beganGC: c.beganGC ?? T - 60 * MIN,
      policy: { ...p8580, ...c.policy },
    });
    assert.deepEqual(plan.byAge, c.byAge ?? [], `${c.name}: by age`);
    assert.deepEqual(plan.bySpace, c.bySpace, `${c.name}: by space`);
    assert.equal(plan.enough, c.enough ?? true, `${c.name}: enough`);
  }
});

test('spaceToFree: the kubelet\'s integer arithmetic, and capacity 0 refused', () => {
  assert.deepEqual(spaceToFree({ capacityBytes: 1000, availableBytes: 50 }, p8580), { usagePercent: 95, over: true, bytesToFree: 150 });
  assert.deepEqual(spaceToFree({ capacityBytes: 1000, availableBytes: 151 }, p8580), { usagePercent: 85, over: true, bytesToFree: 49 });
  assert.deepEqual(spaceToFree({ capacityBytes: 1000, availableBytes: 160 }, p8580), { usagePercent: 84, over: false, bytesToFree: 40 });
  assert.deepEqual(spaceToFree({ capacityBytes: 999, availableBytes: 0 }, p8580), { usagePercent: 100, over: true, bytesToFree: 199 });
  // Beyond 2^53 bytes times 100: still exact.
  assert.deepEqual(spaceToFree({ capacityBytes: 2 ** 52, availableBytes: 2 ** 48 }, p8580), { usagePercent: 94, over: true, bytesToFree: Number((2n ** 52n * 20n) / 100n - 2n ** 48n) });
  assert.equal(spaceToFree({ capacityBytes: 0, availableBytes: 0 }, p8580), undefined);
});

test('formatSize: as the kubelet prints a capacity', () => {
  const cases: Array<[number, string]> = [
    [0, '0 B'],
    [1023, '1023 B'],
    [1024, '1.0 KiB'],
    [1536, '1.5 KiB'],
    [1024 + 51, '1.0 KiB'], // 1.0498
    [1024 + 52, '1.1 KiB'], // 1.0508
    [1024 * 1.25, '1.2 KiB'], // an exact half: to even, as Go
    [1024 * 1.75, '1.8 KiB'],
    [10 * GiB, '10.0 GiB'],
    [1.5 * MiB, '1.5 MiB'],
    [3 * 1024 * GiB, '3.0 TiB'],
    [5000 * 1024 * GiB, '5000.0 TiB'],
  ];
  for (const [bytes, text] of cases) assert.equal(formatSize(bytes), text, String(bytes));
});

test('validateImageGCPolicy: the kubelet\'s errors', () => {
  const cases: Array<[Partial<ImageGCPolicy>, string | undefined]> = [
    [{ highThresholdPercent: 2, lowThresholdPercent: 1 }, undefined],
    [{ highThresholdPercent: 80, lowThresholdPercent: 80 }, undefined],
    [{ highThresholdPercent: 0, lowThresholdPercent: 0 }, undefined],
    [{ highThresholdPercent: -1, lowThresholdPercent: 0 }, 'invalid HighThresholdPercent -1, must be in range [0-100]'],
    [{ highThresholdPercent: 101, lowThresholdPercent: 0 }, 'invalid HighThresholdPercent 101, must be in range [0-100]'],
    [{ highThresholdPercent: 100, lowThresholdPercent: -1 }, 'invalid LowThresholdPercent -1, must be in range [0-100]'],
    [{ highThresholdPercent: 100, lowThresholdPercent: 101 }, 'invalid LowThresholdPercent 101, must be in range [0-100]'],
    [{ highThresholdPercent: 1, lowThresholdPercent: 2 }, 'LowThresholdPercent 2 can not be higher than HighThresholdPercent 1'],
  ];
  for (const [p, err] of cases) {
    const policy = { ...defaultImageGCPolicy, ...p };
    if (err === undefined) assert.doesNotThrow(() => validateImageGCPolicy(policy));
    else {
      assert.throws(() => validateImageGCPolicy(policy), { message: err });
      assert.throws(() => setup(p), { message: err }, 'the constructor refuses it too');
    }
  }
  assert.deepEqual(defaultImageGCPolicy, { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 });
});

test('imagesInUse and updateImageRecords: image_id else image_ref, image volumes, first detection kept, use now, gone forgotten', () => {
  const images = [image('i0', 1), image('i1', 2), image('i2', 3), image('vol', 4)];
  const noId = container('c2', 'i2', { image_id: '' });
  const noMeta = container('c3', 'i0', { metadata: null });
  const statuses = [{ mounts: [{ image: { image: 'vol' } }, { image: { image: 'not-an-image' } }] }] as unknown as Array<ContainerStatusResponse['status']>;
  const used = imagesInUse([container('c1', 'i1'), noId, noMeta], statuses, images);
  assert.deepEqual([...used].sort(), ['i1', 'i2', 'vol'], 'a container without metadata is not counted (the kubelet skips it)');
  const first = updateImageRecords(new Map(), images, used, 0, T);
  assert.deepEqual(first.get('i0'), { firstDetected: 0, lastUsed: 0, size: 1, pinned: false });
  assert.deepEqual(first.get('i1'), { firstDetected: 0, lastUsed: T, size: 2, pinned: false });
  // Later: i1 no longer used keeps its last use, i3 is new, i0 gone.
  const second = updateImageRecords(first, [image('i1', 5, true), image('i3', 1)], new Set(), T + MIN, T + 2 * MIN);
  assert.deepEqual([...second.keys()], ['i1', 'i3']);
  assert.deepEqual(second.get('i1'), { firstDetected: 0, lastUsed: T, size: 5, pinned: true });
  assert.deepEqual(second.get('i3'), { firstDetected: T + MIN, lastUsed: 0, size: 1, pinned: false });
});

test('garbageCollect: under the threshold nothing goes; over it the unused go LRU first down to the low threshold', async () => {
  const { clock, cri, m, recorder } = setup({ highThresholdPercent: 90, lowThresholdPercent: 80 });
  cri.images = [image('a', 300), image('b', 300), image('c', 300), image('in-use', 300), image('pause', 300, true), image('volume', 300)];
  cri.containers = [container('ca', 'a'), container('cb', 'b'), container('cx', 'in-use')];
  cri.mounts.set('cx', ['volume']); // an image volume of a container
  await m.detectImages();
  clock.step(MIN);
  cri.containers = [container('cb', 'b'), container('cx', 'in-use')];
  await m.detectImages(); // b used a minute after a
  clock.step(MIN);
  cri.containers = [container('cx', 'in-use')];
  cri.fs = { capacityBytes: 1000, availableBytes: 600 };
  await m.garbageCollect();
  assert.deepEqual(cri.removed, [], '40% used');
  assert.deepEqual(cri.mountpoints, ['/var/lib/images'], 'statfs of the image filesystem\'s mountpoint');
  assert.deepEqual(m.imageFsStats(), { mountpoint: '/var/lib/images', usedBytes: 123, capacityBytes: 1000, availableBytes: 600, time: clock.now() });
  cri.fs = { capacityBytes: 1000, availableBytes: 50 }; // 95%: 150 bytes to free
  await m.garbageCollect();
  assert.deepEqual(cri.removed, ['c'], 'never used first, and 300 bytes are enough');
  cri.fs = { capacityBytes: 1000, availableBytes: 0 }; // 200 bytes each round: one image of 300 each time
  await m.garbageCollect();
  await m.garbageCollect();
  assert.deepEqual(cri.removed, ['c', 'a', 'b']);
  assert.deepEqual([...m.imageRecords().keys()].sort(), ['in-use', 'pause', 'volume']);
  assert.deepEqual(recorder.events, []);
  await assert.rejects(m.garbageCollect(), /^Error: Insufficient free disk space/, 'in use, pinned, mounted as a volume: none may go');
  assert.deepEqual(cri.removed, ['c', 'a', 'b']);
  assert.equal(m.imageFsUnderPressure(1), true);
  assert.equal(m.imageFsUnderPressure(0), false);
});

test('garbageCollect: not enough freed is the kubelet\'s FreeDiskSpaceFailed warning on the Node, and an error', async () => {
  const { cri, m, recorder } = setup({ highThresholdPercent: 90, lowThresholdPercent: 80 });
  cri.fs = { capacityBytes: 10 * GiB, availableBytes: (10 * GiB) / 20 };
  cri.images = [image('small', 500 * MiB)];
  const message =
    "Insufficient free disk space on the node's image filesystem (95% of 10.0 GiB used). Failed to free sufficient space by deleting unused images (freed 524288000 bytes)." +
    ' Investigate disk usage, as it could be used by active images, logs, volumes, or other data.';
  await assert.rejects(m.garbageCollect(), { message });
  assert.deepEqual(cri.removed, ['small']);
  assert.deepEqual(recorder.events, [{ ref: { apiVersion: 'v1', kind: 'Node', name: 'node-1', namespace: '', uid: 'node-uid' }, type: 'Warning', reason: 'FreeDiskSpaceFailed', message }]);
});

test('garbageCollect: a failed removal is collected and the next image tried; young images wait for minAge', async () => {
  const { clock, cri, m, recorder } = setup({ minAgeMs: 2 * MIN });
  cri.images = [image('a', 100), image('b', 100), image('c', 100)];
  cri.fs = { capacityBytes: 1000, availableBytes: 0 };
  await assert.rejects(m.garbageCollect(), /^Error: Insufficient free disk space .*\(100% of 1000 B used\).*\(freed 0 bytes\)/);
  assert.deepEqual(cri.removed, [], 'all first detected just now');
  clock.step(2 * MIN);
  cri.failRemove.set('a', 'rpc error: code = Unknown desc = disk on fire');
  await assert.rejects(m.garbageCollect(), { message: 'wanted to free 200 bytes, but freed 200 bytes space with errors in image deletion: rpc error: code = Unknown desc = disk on fire' });
  assert.deepEqual(cri.removed, ['b', 'c']);
  assert.deepEqual(recorder.reasons(), ['FreeDiskSpaceFailed'], 'a removal error is the round\'s error, no FreeDiskSpaceFailed');
  cri.failRemove.set('x', 'x failed');
  cri.images = [image('a', 10), image('x', 10)];
  await m.detectImages();
  clock.step(2 * MIN);
  await assert.rejects(m.garbageCollect(), /errors in image deletion: \[rpc error: code = Unknown desc = disk on fire, x failed\]$/);
});

test('garbageCollect: maxAge removes images unused for longer, before looking at the disk; its errors end the round', async () => {
  const { clock, cri, m } = setup({ maxAgeMs: 10 * MIN });
  cri.images = [image('a', 1), image('b', 1), image('c', 1)];
  cri.containers = [container('ca', 'a'), container('cb', 'b'), container('cc', 'c')];
  await m.detectImages();
  cri.containers = [container('cb', 'b'), container('cc', 'c')];
  clock.step(5 * MIN);
  await m.detectImages();
  cri.containers = [container('cc', 'c')];
  const began = clock.now() - 60 * MIN;
  clock.step(5 * MIN); // a unused for 10 min, exactly maxAge: stays
  await m.garbageCollect(began);
  assert.deepEqual(cri.removed, []);
  clock.step(1);
  await m.garbageCollect(clock.now() - 10 * MIN);
  assert.deepEqual(cri.removed, [], 'not before maxAge has passed since GC began');
  await m.garbageCollect(began);
  assert.deepEqual(cri.removed, ['a']);
  cri.failRemove.set('b', 'busy');
  clock.step(5 * MIN);
  cri.fs = { capacityBytes: 0, availableBytes: 0 };
  await assert.rejects(m.garbageCollect(began), { message: 'wanted to free images older than 10m0s, encountered errors in image deletion: busy' });
  assert.equal(cri.mountpoints.length, 3, 'the disk is not read after an age error');
});

test('garbageCollect: the image filesystem\'s errors, and capacity 0 as InvalidDiskCapacity', async () => {
  const { cri, m, recorder } = setup();
  cri.fs = { capacityBytes: 0, availableBytes: 0 };
  await assert.rejects(m.garbageCollect(), { message: 'invalid capacity 0 on image filesystem' });
  assert.deepEqual(recorder.events.map((e) => [e.type, e.reason, e.message]), [['Warning', 'InvalidDiskCapacity', 'invalid capacity 0 on image filesystem']]);
  cri.fsError = 'ENOENT: no such file or directory';
  await assert.rejects(m.garbageCollect(), { message: 'get filesystem info: Failed to get the info of the filesystem with mountpoint: ENOENT: no such file or directory' });
  cri.fsInfo = { image_filesystems: [], container_filesystems: [] };
  await assert.rejects(m.garbageCollect(), { message: 'imageFs information is unavailable' });
  cri.fsInfo = undefined;
  cri.images = [image('a', 1)];
  cri.containers = [container('c', 'a')];
  cri.statusError = 'rpc error: code = Unavailable';
  await assert.rejects(m.garbageCollect(), { message: 'get container status: runtime container status: rpc error: code = Unavailable' });
  cri.listError = 'runtime down';
  await assert.rejects(m.garbageCollect(), { message: 'runtime down' });
});

test('detectImages: a container removed between the list and its status holds no image; the pass goes on', async () => {
  const { cri, m } = setup();
  cri.images = [image('a', 1), image('b', 1)];
  cri.containers = [container('gone', 'a'), container('cb', 'b')];
  cri.vanished.add('gone');
  assert.deepEqual([...(await m.detectImages())].sort(), ['a', 'b'], 'as listed: its image was in use when listed');
});

test('deleteUnusedImages: every unused image old enough, whatever the usage', async () => {
  const { cri, m } = setup();
  cri.images = [image('a', 1), image('b', 1), image('pause', 1, true)];
  cri.containers = [container('cb', 'b')];
  await m.deleteUnusedImages();
  assert.deepEqual(cri.removed, ['a']);
});

test('start: detection and GC every 5 min on the clock; ImageGCFailed on the Node from the second failure in a row; the loop goes on; stop', async () => {
  const { clock, cri, m, recorder } = setup();
  let lists = 0;
  const list = cri.listImages.bind(cri);
  cri.listImages = () => (lists++, list());
  cri.images = [image('a', 300)];
  cri.fs = { capacityBytes: 1000, availableBytes: 0 };
  cri.failRemove.set('a', 'cannot');
  m.start();
  await flush();
  assert.equal(lists, 2, 'detection and a GC round at once');
  assert.deepEqual(recorder.reasons(), [], 'a first failure is logged only');
  clock.step(5 * MIN - 1);
  await flush();
  assert.equal(lists, 2);
  clock.step(1);
  await flush();
  assert.equal(lists, 4);
  const message = 'wanted to free 200 bytes, but freed 0 bytes space with errors in image deletion: cannot';
  assert.deepEqual(recorder.events.map((e) => [e.ref.kind, e.ref.uid, e.type, e.reason, e.message]), [['Node', 'node-uid', 'Warning', 'ImageGCFailed', message]]);
  cri.failRemove.clear();
  clock.step(5 * MIN);
  await flush();
  assert.deepEqual(cri.removed, ['a'], 'the loop went on');
  assert.equal(recorder.events.length, 1, 'a round that succeeds records nothing');
  cri.failRemove.set('b', 'cannot');
  cri.images = [image('b', 300)];
  clock.step(5 * MIN);
  await flush();
  assert.equal(recorder.reasons().filter((r) => r === 'ImageGCFailed').length, 1, 'after a success, one failure again is only logged');
  await m.stop();
  assert.equal(clock.pendingTimers(), 0);
  clock.step(60 * MIN);
  await flush();
  assert.equal(lists, 8);
});

test('start: with highThresholdPercent 100 and no maxAge only detection runs, as the kubelet disables image GC', async () => {
  const { clock, cri, m } = setup({ highThresholdPercent: 100, lowThresholdPercent: 80 }, { detectPeriodMs: MIN });
  cri.images = [image('a', 100)];
  cri.fs = { capacityBytes: 1000, availableBytes: 0 };
  m.start();
  await flush();
  clock.step(MIN);
  await flush();
  assert.deepEqual(cri.mountpoints, [], 'no GC round read the disk');
  assert.deepEqual([...m.imageRecords().keys()], ['a'], 'images were detected');
  assert.equal(m.imageRecords().get('a')!.firstDetected, clock.now() - MIN);
  await m.stop();
});
