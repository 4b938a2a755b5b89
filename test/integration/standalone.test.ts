// nodelet without any cluster: static pods on the process runtime, and `make run` end to end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { startAgent } from '../support/agent.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';

const env = clusterEnv();

function gone(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state === 'Z'; // a zombie waiting for its reaper is not running
  } catch {
    return true;
  }
}

const manifest = (greeting: string) => `apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: c
      image: ${env.testImage}
      command: [sh, -c, 'echo ${greeting}; while true; do sleep 0.5; done']
`;

test('static pods: started from a manifest, restarted with the new spec when it is edited, stopped when it is deleted; bad files reported and skipped', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-static-'));
  const pods = join(dir, 'pods');
  mkdirSync(pods);
  writeFileSync(join(pods, 'hello.yaml'), manifest('first'));
  writeFileSync(join(pods, 'broken.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec:\n  containers:\n    - name: c\n');
  writeFileSync(join(pods, 'other.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'other' }, spec: { containers: [{ name: 'c', image: env.testImage, command: ['sleep', '3600'] }] } }));
  const cfg = join(dir, 'nodelet.yaml');
  writeFileSync(cfg, `apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\nnodeName: standalone-test\nruntime: process\nprocessRuntime: {root: ${dir}/process, imagesDir: ${env.clusterDir}/images, socket: ${dir}/p.sock, cniConfDir: ${env.clusterDir}/cni/net.d}\nstaticPodPath: ${pods}\npodLogRoot: ${dir}/logs\n`);
  // No kubeconfig: standalone. (startAgent passes the cluster's; an empty one means none.)
  const agent = await startAgent('standalone-test', ['--config', cfg, '--kubeconfig', '', '--pod-log-root', join(dir, 'logs')]);
  const list = async () => ((await (await fetch(`http://127.0.0.1:${agent.localPort}/pods`)).json()) as { items: V1Pod[] }).items;
  const runningPod = (name: string, uid?: string) => async () => {
    const p = (await list()).find((x) => x.metadata?.name === name && (!uid || x.metadata?.uid !== uid));
    return p?.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready) ? p : undefined;
  };
  try {
    const first = await eventually('hello Running', 30_000, runningPod('hello-standalone-test'));
    assert.ok(await eventually('other Running', 30_000, runningPod('other-standalone-test')));
    assert.equal(first.metadata?.annotations?.['kubernetes.io/config.source'], 'file');
    assert.ok(!(await list()).some((p) => p.metadata?.name?.startsWith('broken')), 'the bad manifest is skipped');
    const skipped = agent.lines.find((l) => l.message === 'static pod manifest skipped');
    assert.equal(skipped?.file, join(pods, 'broken.yaml'));
    assert.equal(skipped?.error, 'spec.containers[0].image: required');
    const logOf = (p: V1Pod) => join(dir, 'logs', `default_${p.metadata!.name}_${p.metadata!.uid}`, 'c', '0.log');
    await eventually('first greeting', 10_000, async () => (existsSync(logOf(first)) && readFileSync(logOf(first), 'utf8').includes('first') ? true : undefined));

    writeFileSync(join(pods, 'hello.yaml'), manifest('second'));
    const second = await eventually('hello restarted with the new spec', 30_000, runningPod('hello-standalone-test', first.metadata!.uid));
    await eventually('second greeting', 10_000, async () => (existsSync(logOf(second)) && readFileSync(logOf(second), 'utf8').includes('second') ? true : undefined));
    assert.ok(!(await list()).some((p) => p.metadata?.uid === first.metadata!.uid), 'the old pod is gone');

    rmSync(join(pods, 'hello.yaml'));
    await eventually('hello stopped and gone', 30_000, async () => ((await list()).some((p) => p.metadata?.name === 'hello-standalone-test') ? undefined : true));
    const containers = () =>
      readdirSync(join(dir, 'process', 'containers')).flatMap((id) => {
        try {
          return [JSON.parse(readFileSync(join(dir, 'process', 'containers', id, 'container.json'), 'utf8')) as { state: string; config: { labels: Record<string, string> } }];
        } catch {
          return []; // removed meanwhile
        }
      });
    // Stopped within its grace period (2 s; sh as PID 1 ignores SIGTERM, so it is killed).
    await eventually('no container of the deleted pod running', 15_000, async () =>
      containers().some((c) => c.config.labels['io.kubernetes.pod.name'] === 'hello-standalone-test' && c.state === 'CONTAINER_RUNNING') ? undefined : true,
    );
    assert.ok(containers().some((c) => c.config.labels['io.kubernetes.pod.name'] === 'other-standalone-test' && c.state === 'CONTAINER_RUNNING'), 'the other pod runs on');
  } finally {
    await agent.stop();
    const reset = spawn(join(projectRoot, 'dist/src/cli/main.js'), ['runtime', 'reset', '--root', join(dir, 'process')], { stdio: 'ignore' });
    await new Promise((r) => reset.once('exit', r));
  }
});

test('make run: example pods Running, the crash loop backing off (NEXT counts down; /debug in Chromium shows it live), and Ctrl-C leaves no process behind', async () => {
  const runDir = mkdtempSync(join(tmpdir(), 'nodelet-run-'));
  const child = spawn('bash', [join(projectRoot, 'hack/run.sh')], {
    cwd: projectRoot,
    env: { ...process.env, NODELET_RUN_DIR: runDir, NODELET_RUN_PORT: '10257', KUBECONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, as a terminal's foreground job
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    await eventually('web Running in the live table', 120_000, async () => (/^web-\S+\s+1\/1\s+Running/m.test(out) ? true : undefined), 250);
    await eventually('crashloop in CrashLoopBackOff', 60_000, async () => (/^crashloop-\S+\s+0\/1\s+CrashLoopBackOff/m.test(out) ? true : undefined), 250);
    await eventually('with-init Running', 30_000, async () => (/^with-init-\S+\s+2\/2\s+Running/m.test(out) ? true : undefined), 250);
    const page = await (await fetch('http://127.0.0.1:8080/')).text();
    assert.equal(page, 'hello from a nodelet pod\n');
    assert.match(out, /live page: http:\/\/127\.0\.0\.1:10257\/debug/);
    await eventually('the crash loop\'s restart counted down in the NEXT column', 60_000, async () => (/^crashloop-\S+\s+0\/1\s+CrashLoopBackOff\s+\d+\s+restart in \d+s/m.test(out) ? true : undefined), 250);
    await debugPageInChromium('http://127.0.0.1:10257/debug');
  } finally {
    const agentPid = Number(readFileSync(join(runDir, 'nodelet.pid'), 'utf8'));
    const containerPids = readdirSync(join(runDir, 'process', 'containers'))
      .map((id) => (JSON.parse(readFileSync(join(runDir, 'process', 'containers', id, 'container.json'), 'utf8')) as { pid?: number }).pid)
      .filter((p): p is number => typeof p === 'number');
    assert.ok(containerPids.length >= 4, `container PIDs recorded: ${containerPids.length}`);
    process.kill(-child.pid!, 'SIGINT'); // Ctrl-C
    await Promise.race([exited, new Promise((_, rej) => setTimeout(() => rej(new Error('make run did not stop within 30 s')), 30_000))]);
    assert.ok(gone(agentPid), `nodelet (pid ${agentPid}) stopped`);
    for (const pid of containerPids) assert.ok(gone(pid), `container process ${pid} stopped`);
    assert.ok(!readFileSync('/proc/mounts', 'utf8').includes(runDir), 'no container root left mounted');
    assert.match(out, /stopped; logs in /);
  }
});

/**
 * The live page in a real browser: the crash-looping pod's countdown to its next start changes on
 * its own, and its sync timeline grows as the loop goes on; a screenshot is written.
 */
async function debugPageInChromium(url: string): Promise<void> {
  const { launchChromium } = await import('../support/browser.js');
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
    await page.goto(url);
    const row = page.locator('tr.pod', { hasText: 'crashloop-' });
    await row.waitFor({ timeout: 20_000 });
    await page.locator('#conn', { hasText: 'live' }).waitFor({ timeout: 10_000 });
    // A countdown ("start job in 17s"): read it twice a little apart; it must have moved.
    const countdown = async () => eventually('a countdown in the crash loop\'s NEXT cell', 60_000, async () => /start job in (\S+)/.exec((await row.locator('td.next').textContent()) ?? '')?.[1], 200);
    const first = await countdown();
    const changed = await eventually('the countdown to change', 10_000, async () => {
      const now = await countdown();
      return now !== first ? now : undefined;
    }, 300);
    assert.notEqual(changed, first);
    const marks = () => row.locator('td.timeline circle.mark').count();
    const before = await marks();
    assert.ok(before >= 1, 'the timeline has the syncs so far');
    await eventually('the timeline to grow', 90_000, async () => ((await marks()) > before ? true : undefined), 500);
    // Clicking the row shows its plan and history.
    await row.click();
    await page.locator('#detail pre.plan').waitFor({ timeout: 10_000 });
    assert.match((await page.locator('#detail pre.plan').textContent()) ?? '', /container job/);
    mkdirSync(join(projectRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: join(projectRoot, 'test-results', 'debug-page.png'), fullPage: true });
  } finally {
    await browser.close();
  }
}

test('with an API server, each static pod gets a mirror pod whose status is kept current; edits replace it, deletion removes it', async () => {
  const { core } = await import('../support/kube.js');
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-mirror-'));
  const pods = join(dir, 'pods');
  mkdirSync(pods);
  writeFileSync(join(pods, 'hello.yaml'), manifest('mirrored'));
  const node = `mirror-${Math.random().toString(16).slice(2, 8)}`;
  const agent = await startAgent(node, ['--static-pod-path', pods]);
  const name = `hello-${node}`;
  const mirror = () => core.readNamespacedPod({ name, namespace: 'default' }).catch(() => undefined);
  try {
    const first = await eventually('a Running mirror pod', 30_000, async () => {
      const m = await mirror();
      return m?.status?.phase === 'Running' && m.status.containerStatuses?.[0]?.ready ? m : undefined;
    });
    assert.ok(first.metadata?.annotations?.['kubernetes.io/config.mirror'], 'annotated as a mirror');
    assert.equal(first.metadata?.annotations?.['kubernetes.io/config.source'], 'file');
    assert.equal(first.metadata?.ownerReferences?.[0]?.kind, 'Node');
    assert.equal(first.spec?.nodeName, node);
    writeFileSync(join(pods, 'hello.yaml'), manifest('edited'));
    const second = await eventually('a new mirror for the edited manifest, Running', 40_000, async () => {
      const m = await mirror();
      return m && m.metadata?.uid !== first.metadata?.uid && m.status?.phase === 'Running' ? m : undefined;
    });
    assert.notEqual(second.metadata?.annotations?.['kubernetes.io/config.mirror'], first.metadata?.annotations?.['kubernetes.io/config.mirror']);
    rmSync(join(pods, 'hello.yaml'));
    await eventually('the mirror pod gone', 30_000, async () => ((await mirror()) ? undefined : true));
  } finally {
    const { cleanupAgent } = await import('../support/agent.js');
    await cleanupAgent(agent);
  }
});
