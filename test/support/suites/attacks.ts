// The attack suite (issue 33): real pods that try to reach outside what they may touch on a real
// node, run only in lab nodes (device nodes, hostile images and the like never run on the machine
// the tests live on). After each attack: it failed, and the node is as it was: a canary file
// outside every pod, the agent alive and its node Ready, a witness pod neither restarted nor
// touched. One suite, run once per runtime.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { V1Pod } from '@kubernetes/client-node';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { clusterEnv, eventually } from '../cluster.js';
import { container, core, createPod, getPod, NS, running, waitPod } from '../kube.js';
import type { LabNode } from '../lab-place.js';
import { labSh0 } from '../lab.js';
import type { TestRuntime } from '../runtimes.js';
import { casesOf, type SuiteOptions } from '../cases.js';

const CANARY = '/var/lib/nodelet-attacks/canary';
// The hostile images the lab's nodes hold (test/env/images/build-images.mjs --hostile).
const HOSTILE_PASSWD = 'nodelet.test/hostile-passwd:1';
const HOSTILE_UID = 'nodelet.test/hostile-uid:1';
const HOSTILE_DEVICES = 'nodelet.test/hostile-devices:1';
const HOSTILE_WHITEOUT = 'nodelet.test/hostile-whiteout:1';

export function attackSuite(lab: LabNode, makeRuntime: () => Promise<TestRuntime>, opts: SuiteOptions = {}): void {
  const test = casesOf(opts);
  const env = clusterEnv();
  let rt: TestRuntime;
  let agent: RunningAgent;
  let node: string;
  let witness: V1Pod;
  let canarySum: string;
  const sh = (script: string) => labSh0(lab.name, script);

  before(async () => {
    rt = await makeRuntime();
    node = uniqueNodeName(`atk-${rt.name}`);
    agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint], { place: rt.place });
    canarySum = await sh(`mkdir -p ${CANARY.replace(/\/[^/]+$/, '')} && head -c 4096 /dev/urandom > ${CANARY} && sha256sum ${CANARY}`);
    witness = await createPod(node, 'witness', { containers: [container('c', 'sleep 36000')] });
    witness = await waitPod(witness, 'running', 120_000, running);
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    await rt.stop();
  });

  const kubectl = (args: string[]) => {
    const r = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, out: r.stdout ?? '', err: r.stderr ?? '' };
  };

  /** The node as it was: the canary, the agent and its node, the witness pod. */
  async function nodeUnchanged(): Promise<void> {
    assert.equal(await sh(`sha256sum ${CANARY}`), canarySum, 'the canary outside every pod is unchanged');
    assert.equal(agent.process.exitCode, null, 'the agent is alive');
    const n = await core.readNode({ name: node });
    assert.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'the node is Ready');
    const w = await getPod(witness);
    const [before, now] = [witness.status!.containerStatuses![0]!, w.status!.containerStatuses![0]!];
    assert.equal(now.restartCount, 0, 'the witness pod did not restart');
    assert.deepEqual([now.containerID, now.state?.running?.startedAt], [before.containerID, before.state?.running?.startedAt], 'the witness runs the same container');
  }

  test("device nodes: a root container makes a node of the node's disk and can neither read nor write it, nor can an exec in it", async () => {
    // The node's disk: a loop device over a file of the node, its first bytes a marker.
    const dev = (await sh('modprobe loop 2>/dev/null; f=/var/lib/nodelet-attacks/disk; head -c 1048576 /dev/zero > $f; printf NODELET-DISK-MARKER | dd of=$f conv=notrunc 2>/dev/null; losetup -f --show $f')).trim();
    try {
      const [major, minor] = (await sh(`stat -c '%t %T' ${dev}`)).trim().split(' ').map((h) => parseInt(h, 16));
      const diskSum = await sh(`sha256sum ${dev}`);
      // mknod works, as runc allows it; opening the node is what must fail.
      const attack = (tag: string) =>
        `mknod /tmp/disk-${tag} b ${major} ${minor} && echo ${tag}-mknod-ok; ` +
        `dd if=/tmp/disk-${tag} bs=19 count=1 2>&1 | head -c 200; echo; ` +
        `echo OWNED | dd of=/tmp/disk-${tag} conv=notrunc 2>&1 | head -c 200; echo ${tag}-done`;
      const pod = await createPod(node, 'mknod-disk', { containers: [container('c', `${attack('start')}; sleep 36000`, { securityContext: { runAsUser: 0 } })] });
      await waitPod(pod, 'running', 120_000, running);
      const logs = await eventually('the attack to finish', 60_000, async () => {
        const l = kubectl(['logs', '-n', NS, pod.metadata!.name!]).out;
        return l.includes('start-done') ? l : undefined;
      });
      const exec = kubectl(['exec', '-n', NS, pod.metadata!.name!, '--', 'sh', '-c', attack('exec')]);
      assert.match(exec.out, /exec-done/, exec.err);
      for (const [what, out] of [['the container', logs], ['an exec', exec.out]] as const) {
        assert.match(out, /-mknod-ok/, `${what}: mknod is allowed, as with runc`);
        assert.doesNotMatch(out, /NODELET-DISK-MARKER/, `${what} read the node's disk`);
        assert.equal((out.match(/Operation not permitted/g) ?? []).length, 2, `${what}: reading and writing are refused by the device cgroup:\n${out}`);
      }
      assert.equal(await sh(`sha256sum ${dev}`), diskSum, "the node's disk is unchanged");
      await nodeUnchanged();
    } finally {
      await sh(`losetup -d ${dev}`).catch(() => undefined);
    }
  });

  test("hostile images: /etc/passwd a link to /dev/zero and /etc/group to /etc/shadow name the image's files, not the host's, and the runtime lives", async () => {
    const pod = await createPod(node, 'passwd-zero', { containers: [{ name: 'c', image: HOSTILE_PASSWD }] });
    if (rt.name === 'process') {
      // The image's root has no /dev/zero and no /etc/shadow: user 0 with no groups, as the image says nothing else.
      await waitPod(pod, 'running', 120_000, running);
      const logs = await eventually('its uid in its log', 30_000, async () => {
        const l = kubectl(['logs', '-n', NS, pod.metadata!.name!]).out;
        return l.includes('Uid:') ? l : undefined;
      });
      assert.match(logs, /^Uid:\s+0\s+0\s+0\s+0\n$/);
    } else {
      // runc reads the file in the container's view, where /dev/zero is the device: it finds no user and the start fails.
      await waitPod(pod, 'RunContainerError', 120_000, (p) => {
        const st = p.status?.containerStatuses?.[0];
        assert.equal(st?.state?.running, undefined, 'it runs');
        const said = `${st?.state?.waiting?.message} ${st?.lastState?.terminated?.message}`;
        return /unable to find user 0/.test(said) ? st : undefined;
      });
    }
    await nodeUnchanged();
  });

  test('hostile images: USER 4294967296 under runAsNonRoot never runs, as root or at all: CreateContainerError', async () => {
    const pod = await createPod(node, 'uid-2-32', { securityContext: { runAsNonRoot: true }, containers: [{ name: 'c', image: HOSTILE_UID }] });
    const waiting = await waitPod(pod, 'CreateContainerError', 120_000, (p) => {
      const st = p.status?.containerStatuses?.[0];
      assert.equal(st?.state?.running, undefined, `the container runs: ${kubectl(['logs', '-n', NS, pod.metadata!.name!]).out}`);
      return st?.state?.waiting?.reason === 'CreateContainerError' ? st.state.waiting : undefined;
    });
    if (rt.name === 'process') assert.match(waiting.message ?? '', /uids and gids must be in range 0-2147483647/);
    else assert.ok(waiting.message, 'containerd says why');
    await nodeUnchanged();
  });

  test('hostile images: a layer shipping the node\'s disk and memory as 0666 device nodes: opening them is refused by the device cgroup', async () => {
    const pod = await createPod(node, 'image-devices', { containers: [{ name: 'c', image: HOSTILE_DEVICES }] });
    await waitPod(pod, 'running', 120_000, running);
    const logs = await eventually('the image\'s attack to finish', 60_000, async () => {
      const l = kubectl(['logs', '-n', NS, pod.metadata!.name!]).out;
      return l.includes('/mem:') ? l : undefined;
    });
    assert.doesNotMatch(logs, /: read$/m, `a device node of the image was read:\n${logs}`);
    assert.equal((logs.match(/Operation not permitted/g) ?? []).length, 2, logs);
    await nodeUnchanged();
  });

  test('hostile images: whiteouts and a file laid over links an earlier layer left to the node\'s /etc change the image only', async () => {
    const etc = await sh('ls -A /etc | sort | sha256sum; test -s /etc/hostname && echo hostname-kept; test -e /etc/nodelet-attack-target && echo target-written || echo no-target');
    assert.match(etc, /hostname-kept/);
    assert.match(etc, /no-target/, 'a layer wrote a file of the node');
    const pod = await createPod(node, 'image-whiteout', { containers: [{ name: 'c', image: HOSTILE_WHITEOUT }] });
    await waitPod(pod, 'running', 120_000, running);
    // (The layers were applied when the image was unpacked, before or for this pod.)
    assert.equal(await sh('ls -A /etc | sort | sha256sum; test -s /etc/hostname && echo hostname-kept; test -e /etc/nodelet-attack-target && echo target-written || echo no-target'), etc, "the node's /etc is unchanged");
    await nodeUnchanged();
  });

  test('an exec probe that prints 20 MB: the runtime keeps a bounded part (containerd: refuses to send it), the agent 10 KiB of it in the event, and both live', async () => {
    const pod = await createPod(node, 'probe-flood', {
      containers: [container('c', 'sleep 36000', { livenessProbe: { exec: { command: ['sh', '-c', 'head -c 20000000 /dev/zero | tr "\\0" x; exit 1'] }, periodSeconds: 10, timeoutSeconds: 120, failureThreshold: 1 } })],
    });
    await waitPod(pod, 'running', 120_000, running);
    const events = await eventually('the probe\'s Unhealthy event', 240_000, async () => {
      const list = await core.listNamespacedEvent({ namespace: NS, fieldSelector: `involvedObject.name=${pod.metadata!.name!}` });
      return list.items.find((e) => e.reason === 'Unhealthy');
    }, 2000);
    assert.ok((events.message ?? '').length <= 10 * 1024 + 100, `the event holds ${events.message?.length} characters`);
    if (rt.name === 'process') assert.match(events.message ?? '', /^Liveness probe failed: x+/);
    // containerd keeps 16 MiB of the stream, which its 16 MiB gRPC message then cannot carry: the
    // probe errs, as it does under the kubelet.
    else assert.match(events.message ?? '', /^Liveness probe errored and resulted in unknown state: .*larger than max/);
    await nodeUnchanged();
  });

  test('subPath race (CVE-2021-25741): a container swaps the subPath between a directory and a link to / for 30 s while six others start on it; none sees the node', async () => {
    const victims = Array.from({ length: 6 }, (_, i) =>
      container(`v${i}`, 'if [ -e /mnt/var/lib/nodelet-attacks/canary ]; then echo ESCAPED; fi; echo started; sleep 2; exit 1', { volumeMounts: [{ name: 'v', mountPath: '/mnt', subPath: 'd' }] }),
    );
    const swapper = container('swapper', 'while true; do rm -rf /v/d; mkdir /v/d; rm -rf /v/d; ln -s / /v/d; done', { volumeMounts: [{ name: 'v', mountPath: '/v' }] });
    const pod = await createPod(node, 'subpath-race', { volumes: [{ name: 'v', emptyDir: {} }], containers: [swapper, ...victims] });
    const victimStarts = (p: V1Pod) => (p.status?.containerStatuses ?? []).filter((c) => c.name !== 'swapper').reduce((n, c) => n + c.restartCount + (c.state?.running || c.state?.terminated ? 1 : 0), 0);
    // The 30 s count from the first start of a victim (a lab node takes a while to start seven containers).
    await waitPod(pod, 'a victim started on the subPath', 180_000, (p) => (victimStarts(p) > 0 ? p : undefined));
    const until = Date.now() + 30_000;
    const escaped: string[] = [];
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, 3000));
      for (const v of victims) {
        for (const previous of [false, true]) {
          const out = kubectl(['logs', '-n', NS, pod.metadata!.name!, '-c', v.name, ...(previous ? ['--previous'] : [])]).out;
          if (out.includes('ESCAPED')) escaped.push(v.name);
        }
      }
    }
    const starts = victimStarts(await getPod(pod));
    assert.deepEqual(escaped, [], 'a container saw the node through its subPath');
    assert.ok(starts > 1, `the victims started on the subPath again and again (${starts})`);
    await nodeUnchanged();
  });
}
