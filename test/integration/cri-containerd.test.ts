// The CRI client against the test cluster's real containerd + runc + CNI bridge.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CriClient, checkRuntimeVersion } from '../../src/cri/client.js';
import { CriNotFoundError } from '../../src/cri/errors.js';
import type { ContainerConfig, PodSandboxConfig } from '../../src/cri/types.js';
import { clusterEnv, eventually, ipInCidr } from '../support/cluster.js';

const env = clusterEnv();
const cri = new CriClient(env.runtimeEndpoint);
const cleanup: string[] = [];
after(async () => {
  for (const id of cleanup) {
    await cri.stopPodSandbox(id).catch(() => undefined);
    await cri.removePodSandbox(id).catch(() => undefined);
  }
  cri.close();
});

function sandboxConfig(name: string): PodSandboxConfig {
  const uid = randomUUID();
  const logDir = join(env.podLogRoot, `crit_${name}_${uid}`);
  mkdirSync(logDir, { recursive: true });
  return {
    metadata: { name, uid, namespace: 'crit', attempt: 0 },
    hostname: name,
    log_directory: logDir,
    labels: { 'io.kubernetes.pod.uid': uid, 'nodelet.test/case': name },
    linux: { security_context: { namespace_options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
  };
}

function containerConfig(name: string, script: string, labels: Record<string, string> = {}): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image: env.testImage },
    command: ['sh', '-c', script],
    log_path: `${name}/0.log`,
    labels,
  };
}

test('Version answers CRI API 0.1.0 from containerd, and the version check accepts it', async () => {
  const v = await checkRuntimeVersion(cri);
  assert.equal(v.version, '0.1.0');
  assert.equal(v.runtime_name, 'containerd');
  assert.match(v.runtime_version, /^v?1\.\d+\.\d+/);
  const status = await cri.status();
  const ready = Object.fromEntries((status.status?.conditions ?? []).map((c) => [c.type, c.status]));
  assert.deepEqual(ready, { RuntimeReady: true, NetworkReady: true });
});

test('a sandbox gets an IP from the CNI bridge, runs containers, and is stopped and removed', async () => {
  const sbConfig = sandboxConfig('lifecycle');
  const sandboxId = await cri.runPodSandbox(sbConfig);
  cleanup.push(sandboxId);

  const sb = await cri.podSandboxStatus(sandboxId);
  assert.equal(sb.status?.state, 'SANDBOX_READY');
  assert.equal(sb.status?.metadata?.uid, sbConfig.metadata?.uid);
  const ip = sb.status?.network?.ip ?? '';
  assert.ok(ipInCidr(ip, env.podCidr), `sandbox IP ${ip} is not in the bridge range ${env.podCidr}`);

  // One container that exits 3 after a moment, one that runs until stopped.
  const exiting = await cri.createContainer(sandboxId, containerConfig('exits', 'sleep 1; exit 3', { role: 'exits' }), sbConfig);
  const sleeper = await cri.createContainer(sandboxId, containerConfig('sleeper', 'exec sleep 3600', { role: 'sleeper' }), sbConfig);
  assert.equal((await cri.containerStatus(exiting)).status?.state, 'CONTAINER_CREATED');
  await cri.startContainer(exiting);
  await cri.startContainer(sleeper);

  const running = await cri.containerStatus(exiting);
  assert.equal(running.status?.state, 'CONTAINER_RUNNING');
  assert.ok(Number(running.status?.started_at) > 0, 'startedAt is set');

  const exited = await eventually('container "exits" to exit', 15_000, async () => {
    const s = (await cri.containerStatus(exiting)).status;
    return s?.state === 'CONTAINER_EXITED' ? s : undefined;
  });
  assert.equal(exited.exit_code, 3);
  assert.equal(exited.reason, 'Error');
  assert.ok(Number(exited.finished_at) >= Number(exited.started_at));

  // Label filters select exactly the labelled container of this sandbox.
  const listed = await cri.listContainers({ pod_sandbox_id: sandboxId, label_selector: { role: 'sleeper' } });
  assert.deepEqual(listed.map((c) => c.id), [sleeper]);
  assert.equal(listed[0]?.state, 'CONTAINER_RUNNING');
  const all = await cri.listContainers({ pod_sandbox_id: sandboxId });
  assert.deepEqual(new Set(all.map((c) => c.id)), new Set([exiting, sleeper]));

  await cri.stopContainer(sleeper, 2);
  const stopped = (await cri.containerStatus(sleeper)).status;
  assert.equal(stopped?.state, 'CONTAINER_EXITED');
  assert.equal(stopped?.exit_code, 143, 'sleep dies of the SIGTERM StopContainer sends');

  await cri.stopPodSandbox(sandboxId);
  assert.equal((await cri.podSandboxStatus(sandboxId)).status?.state, 'SANDBOX_NOTREADY');
  await cri.removePodSandbox(sandboxId);
  await assert.rejects(cri.podSandboxStatus(sandboxId), CriNotFoundError);
  await assert.rejects(cri.containerStatus(sleeper), CriNotFoundError);
  // Both calls are idempotent, as the kubelet relies on.
  await cri.stopPodSandbox(sandboxId).catch((err) => assert.ok(err instanceof CriNotFoundError, String(err)));
  await cri.removePodSandbox(sandboxId);
});

test('ImageStatus and ListImages see the offline test images; a missing image has no status', async () => {
  const images = await cri.listImages();
  const tags = images.flatMap((i) => i.repo_tags);
  for (const ref of [env.pauseImage, env.testImage, env.testImage2]) {
    assert.ok(tags.includes(ref), `${ref} is listed (have ${tags.join(', ')})`);
  }
  const st = await cri.imageStatus({ image: env.testImage });
  assert.ok(st.image?.id.startsWith('sha256:'), `image id ${st.image?.id}`);
  assert.ok(st.image?.repo_tags.includes(env.testImage));
  assert.ok(Number(st.image?.size) > 0);
  const other = await cri.imageStatus({ image: env.testImage2 });
  assert.notEqual(other.image?.id, st.image?.id, 'busybox:1 and busybox:2 are different images');
  const missing = await cri.imageStatus({ image: 'nodelet.test/does-not-exist:1' });
  assert.equal(missing.image, null);
  const fs = await cri.imageFsInfo();
  assert.ok(fs.image_filesystems.length > 0);
});

test('a sandbox status filter by label finds only that pod', async () => {
  const sbConfig = sandboxConfig('filtered');
  const id = await cri.runPodSandbox(sbConfig);
  cleanup.push(id);
  const found = await cri.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': sbConfig.metadata!.uid! } });
  assert.deepEqual(found.map((s) => s.id), [id]);
  assert.equal(found[0]?.state, 'SANDBOX_READY');
});
