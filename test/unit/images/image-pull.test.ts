import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { ImageService } from '../../../src/cri/services.js';
import type { AuthConfig, Image, ImageFsInfoResponse, ImageSpec, ImageStatusResponse } from '../../../src/cri/types.js';
import { ImageManager } from '../../../src/images/image-manager.js';
import { PullRecords } from '../../../src/images/pull-records.js';
import { Reasons, SyncError } from '../../../src/runtime/errors.js';
import { FakeClock } from '../../../src/util/clock.js';
import { MemoryRecorder } from '../runtime/deps.js';

/** A runtime whose "registry" wants a password for some images, and takes pullMs of fake time per pull. */
class RegistryRuntime implements ImageService {
  present = new Map<string, string>();
  passwords = new Map<string, string>();
  auths: Array<AuthConfig | undefined> = [];
  active = 0;
  maxActive = 0;
  constructor(private readonly clock: FakeClock, private readonly pullMs = 0, private readonly failWith?: string) {}

  async listImages(): Promise<Image[]> {
    return [];
  }
  async imageStatus(image: ImageSpec): Promise<ImageStatusResponse> {
    const name = image.image ?? '';
    const id = this.present.get(name) ?? ([...this.present.values()].includes(name) ? name : undefined);
    return { image: id ? ({ id, size: '4096' } as unknown as Image) : null, info: {} } as unknown as ImageStatusResponse;
  }
  async pullImage(image: ImageSpec, auth?: AuthConfig): Promise<string> {
    this.auths.push(auth);
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      if (this.pullMs) await this.clock.sleep(this.pullMs);
      const name = image.image ?? '';
      if (this.failWith) throw new Error(this.failWith);
      const want = this.passwords.get(name);
      if (want !== undefined && auth?.password !== want) throw new Error(`unexpected status from HEAD request to https://r.example.com/v2/${name}: 401 Unauthorized`);
      const id = `sha256:${name.length}${name.replace(/\W/g, '')}`;
      this.present.set(name, id);
      return id;
    } finally {
      this.active--;
    }
  }
  async removeImage(): Promise<void> {}
  async imageFsInfo(): Promise<ImageFsInfoResponse> {
    return { image_filesystems: [], container_filesystems: [] } as unknown as ImageFsInfoResponse;
  }
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (name: string, password: string, uid = `uid-${name}`): V1Secret => ({
  metadata: { name, namespace: 'ns', uid },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'r.example.com': { username: 'u', password } } })) },
});
const podWith = (uid: string, image: string, imagePullPolicy?: V1Container['imagePullPolicy']): { pod: V1Pod; c: V1Container } => {
  const c: V1Container = { name: 'c', image, imagePullPolicy };
  return { pod: { metadata: { name: uid, namespace: 'ns', uid }, spec: { containers: [c] } }, c };
};

async function outcome(p: Promise<string>): Promise<{ reason: string; message: string }> {
  try {
    return { reason: 'ok', message: await p };
  } catch (err) {
    assert.ok(err instanceof SyncError, String(err));
    return { reason: err.reason, message: err.message };
  }
}

test('pull: the pod\'s secret is sent; Pulled says how long, how long with waiting, and the size, as the kubelet', async () => {
  const clock = new FakeClock();
  const rt = new RegistryRuntime(clock, 1234);
  rt.passwords.set('r.example.com/app:1', 'pw');
  const recorder = new MemoryRecorder();
  const m = new ImageManager({ images: rt, recorder, clock, pullQPS: 0 });
  const { pod, c } = podWith('a', 'r.example.com/app:1');
  const done = m.ensureImageExists(pod, c, undefined, [secret('s', 'pw')]);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setImmediate(r));
    clock.step(100);
  }
  assert.equal((await outcome(done)).reason, 'ok');
  assert.equal(rt.auths[0]?.password, 'pw');
  assert.deepEqual(recorder.events.map((e) => `${e.reason} ${e.message}`), [
    'Pulling Pulling image "r.example.com/app:1"',
    'Pulled Successfully pulled image "r.example.com/app:1" in 1.3s (1.3s including waiting). Image size: 4096 bytes.',
  ]);
});

test('pull: each matching credential is tried in turn; when all fail, every message is in the error', async () => {
  const clock = new FakeClock();
  const rt = new RegistryRuntime(clock);
  rt.passwords.set('r.example.com/app:1', 'right');
  const m = new ImageManager({ images: rt, recorder: new MemoryRecorder(), clock, pullQPS: 0 });
  const { pod, c } = podWith('a', 'r.example.com/app:1');
  assert.equal((await outcome(m.ensureImageExists(pod, c, undefined, [secret('wrong', 'nope'), secret('right', 'right')]))).reason, 'ok');
  assert.deepEqual(rt.auths.map((a) => a?.password), ['nope', 'right']);

  const rt2 = new RegistryRuntime(clock, 0, 'boom');
  const m2 = new ImageManager({ images: rt2, recorder: new MemoryRecorder(), clock, pullQPS: 0 });
  const both = await outcome(m2.ensureImageExists(pod, c, undefined, [secret('x', '1'), secret('y', '2')]));
  assert.deepEqual(both, { reason: Reasons.ImagePull, message: 'boom' }, 'the same message twice is said once');
});

test('pull: over registryPullQPS/registryBurst a pull is refused at once ("pull QPS exceeded"), not queued', async () => {
  const clock = new FakeClock();
  const rt = new RegistryRuntime(clock);
  const m = new ImageManager({ images: rt, recorder: new MemoryRecorder(), clock, pullQPS: 1, pullBurst: 1 });
  const a = podWith('a', 'r.example.com/a:1', 'Always');
  const b = podWith('b', 'r.example.com/b:1', 'Always');
  assert.equal((await outcome(m.ensureImageExists(a.pod, a.c))).reason, 'ok');
  assert.deepEqual(await outcome(m.ensureImageExists(b.pod, b.c)), { reason: Reasons.ImagePull, message: 'pull QPS exceeded' });
  clock.step(1000);
  const c = podWith('c', 'r.example.com/c:1', 'Always');
  assert.equal((await outcome(m.ensureImageExists(c.pod, c.c))).reason, 'ok');
});

test('pull: serialized pulls wait for each other (the wait is in "including waiting"); parallel ones stop at maxParallelImagePulls', async () => {
  for (const [serializePulls, maxParallelPulls, want] of [[true, 0, 1], [false, 2, 2], [false, 0, 4]] as const) {
    const clock = new FakeClock();
    const rt = new RegistryRuntime(clock, 1000);
    const recorder = new MemoryRecorder();
    const m = new ImageManager({ images: rt, recorder, clock, pullQPS: 0, serializePulls, maxParallelPulls });
    const pulls = [0, 1, 2, 3].map((i) => {
      const p = podWith(`p${i}`, `r.example.com/i${i}:1`);
      return m.ensureImageExists(p.pod, p.c);
    });
    for (let i = 0; i < 100; i++) {
      await new Promise((r) => setImmediate(r));
      clock.step(100);
    }
    for (const p of pulls) assert.equal((await outcome(p)).reason, 'ok');
    assert.equal(rt.maxActive, want, `serialize=${serializePulls} max=${maxParallelPulls}`);
    if (serializePulls) {
      const last = recorder.events.filter((e) => e.reason === 'Pulled').at(-1)!.message;
      assert.match(last, / in 1s \(4s including waiting\)\./);
    }
  }
});

test('pull: a registry that says it is unavailable gives RegistryUnavailable, worded as the kubelet', async () => {
  const clock = new FakeClock();
  const rt = new RegistryRuntime(clock, 0, 'RegistryUnavailable: dial tcp 127.0.0.1:1: connect: connection refused');
  const m = new ImageManager({ images: rt, recorder: new MemoryRecorder(), clock, pullQPS: 0 });
  const { pod, c } = podWith('a', 'r.example.com/app:1');
  assert.deepEqual(await outcome(m.ensureImageExists(pod, c)), {
    reason: Reasons.RegistryUnavailable,
    message: 'image pull failed for r.example.com/app:1 because the registry is unavailable: dial tcp 127.0.0.1:1: connect: connection refused',
  });
});

test('pull records: an image pulled with a secret serves only pods that hold that secret or its credential; anonymous and preloaded images serve all', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pull-records-'));
  try {
    const clock = new FakeClock();
    const rt = new RegistryRuntime(clock);
    rt.passwords.set('r.example.com/private:1', 'pw');
    rt.present.set('r.example.com/preloaded:1', 'sha256:preloaded');
    const recorder = new MemoryRecorder();
    const m = new ImageManager({ images: rt, recorder, clock, pullQPS: 0, pullRecords: new PullRecords(dir) });
    const run = (uid: string, image: string, secrets: V1Secret[] = [], policy?: V1Container['imagePullPolicy']) => {
      const p = podWith(uid, image, policy);
      return outcome(m.ensureImageExists(p.pod, p.c, undefined, secrets));
    };
    assert.equal((await run('owner', 'r.example.com/private:1', [secret('s', 'pw')])).reason, 'ok');
    assert.equal(rt.auths.length, 1);
    // Without the secret: pulled again, and the registry says no.
    const stranger = await run('stranger', 'r.example.com/private:1');
    assert.equal(stranger.reason, Reasons.ImagePull);
    assert.match(stranger.message, /401 Unauthorized/);
    // With the same secret, or another secret holding the same credential: no pull.
    const before = rt.auths.length;
    assert.equal((await run('friend', 'r.example.com/private:1', [secret('s', 'pw')])).reason, 'ok');
    assert.equal((await run('twin', 'r.example.com/private:1', [secret('copy', 'pw', 'uid-copy')])).reason, 'ok');
    assert.equal(rt.auths.length, before);
    assert.ok(recorder.events.some((e) => e.message === 'Container image "r.example.com/private:1" already present on machine and can be accessed by the pod'));
    // Never may not pull it, and says it is not present rather than that it is refused.
    assert.equal((await run('never', 'r.example.com/private:1', [], 'Never')).reason, Reasons.ImageNeverPull);
    // Preloaded (never pulled by nodelet) and anonymously pulled images: open to all.
    assert.equal((await run('p1', 'r.example.com/preloaded:1')).reason, 'ok');
    assert.equal((await run('p2', 'r.example.com/open:1')).reason, 'ok');
    const pulls = rt.auths.length;
    assert.equal((await run('p3', 'r.example.com/open:1')).reason, 'ok');
    assert.equal(rt.auths.length, pulls);
    // The records survive a restart.
    const m2 = new ImageManager({ images: rt, recorder, clock, pullQPS: 0, pullRecords: new PullRecords(dir) });
    const p = podWith('later', 'r.example.com/private:1');
    assert.equal((await outcome(m2.ensureImageExists(p.pod, p.c))).reason, Reasons.ImagePull);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
