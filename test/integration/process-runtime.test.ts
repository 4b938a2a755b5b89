// nodelet's process runtime as CRI clients see it: crictl against its socket, and its state
// surviving a crash of the runtime while containers run (with an agent on top duplicating nothing).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName } from '../support/agent.js';
import { clusterEnv } from '../support/cluster.js';
import { container, createPod, getPod, running, waitPod } from '../support/kube.js';
import { processRuntime, type ProcessRuntimeHandle } from '../support/runtimes.js';

const env = clusterEnv();
const tmp = mkdtempSync(join(tmpdir(), 'nodelet-proc-'));
let rt: ProcessRuntimeHandle;
let cri: CriClient;

before(async () => {
  rt = await processRuntime('crictl');
  cri = new CriClient(rt.endpoint);
});
after(async () => {
  for (const sb of await cri.listPodSandbox()) await cri.removePodSandbox(sb.id).catch(() => undefined);
  cri.close();
  await rt.stop();
});

const crictl = (...args: string[]) =>
  execFileSync(env.crictl, ['--config', '/dev/null', '--runtime-endpoint', rt.endpoint, '--image-endpoint', rt.endpoint, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

test('Version and Status: nodelet-process, API 0.1.0, ready, and which isolation runs', async () => {
  const v = await cri.version('0.1.0');
  assert.deepEqual([v.version, v.runtime_name, v.runtime_api_version], ['0.1.0', 'nodelet-process', 'v1']);
  const st = await cri.status(true);
  assert.deepEqual(Object.fromEntries(st.status!.conditions.map((c) => [c.type, c.status])), { RuntimeReady: true, NetworkReady: true });
  assert.equal(JSON.parse(st.info.isolation!).mode, 'bubblewrap');
});

test('crictl pull, images, runp, create, start, pods, ps, logs, exec, inspect, stop, rm, rmp', async () => {
  crictl('pull', env.testImage);
  assert.match(crictl('images'), /nodelet\.test\/busybox\s+1\s+[0-9a-f]{13}/);
  const logDir = join(tmp, 'logs');
  writeFileSync(join(tmp, 'pod.json'), JSON.stringify({ metadata: { name: 'cp', namespace: 'crictl', uid: 'crictl-uid-1', attempt: 0 }, hostname: 'cp-host', log_directory: logDir, linux: {} }));
  writeFileSync(
    join(tmp, 'ctr.json'),
    JSON.stringify({ metadata: { name: 'c' }, image: { image: env.testImage }, command: ['sh', '-c', "trap 'echo bye; exit 0' TERM; echo hello from $(hostname); echo oops >&2; while true; do sleep 0.2; done"], log_path: 'c/0.log', labels: { app: 'crictl' } }),
  );
  const pod = crictl('runp', join(tmp, 'pod.json')).trim();
  const ctr = crictl('create', pod, join(tmp, 'ctr.json'), join(tmp, 'pod.json')).trim();
  crictl('start', ctr);
  assert.match(crictl('pods'), new RegExp(`${pod.slice(0, 13)}.*Ready\\s+cp\\s+crictl`));
  assert.match(crictl('ps', '--label', 'app=crictl'), new RegExp(`${ctr.slice(0, 13)}.*Running\\s+c\\s`));
  const deadline = Date.now() + 5000;
  while (!crictl('logs', ctr).includes('hello') && Date.now() < deadline) execFileSync('sleep', ['0.1']);
  assert.equal(crictl('logs', ctr), 'hello from cp-host\n');
  const raw = readFileSync(join(logDir, 'c/0.log'), 'utf8');
  assert.match(raw, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z stdout F hello from cp-host$/m);
  assert.match(raw, /^\S+ stderr F oops$/m);
  // Log rotation: the log moved away, ReopenContainerLog makes a new one at once.
  renameSync(join(logDir, 'c/0.log'), join(logDir, 'c/0.log.1'));
  await cri.reopenContainerLog(ctr); // crictl has no command for it: the CRI call itself
  assert.ok(existsSync(join(logDir, 'c/0.log')), 'a new log file after ReopenContainerLog');
  const [host, pid, image] = crictl('exec', '-s', ctr, 'sh', '-c', 'echo $(hostname) $$; cat /etc/nodelet-test-image').trim().split(/\s+/);
  assert.equal(host, 'cp-host', 'exec sees the container\'s hostname');
  assert.ok(Number(pid) < 100, `and its own PID namespace (pid ${pid})`);
  assert.equal(`${image}`, 'busybox', 'and the image\'s files');
  crictl('stop', '-t', '5', ctr);
  const inspect = JSON.parse(crictl('inspect', ctr)) as { status: { state: string; exitCode: number; reason: string } };
  assert.deepEqual([inspect.status.state, inspect.status.exitCode, inspect.status.reason], ['CONTAINER_EXITED', 0, 'Completed']);
  assert.match(readFileSync(join(logDir, 'c/0.log'), 'utf8'), /stdout F bye$/m, 'SIGTERM reached the container, which exited on it');
  crictl('rm', ctr);
  crictl('rmp', '-f', pod);
  assert.equal(crictl('pods', '-q').trim(), '');
});

test('exit codes, the OCI entrypoint/cmd rules, env and working directory', async () => {
  const sbConfig = { metadata: { name: 'rules', namespace: 'crictl', uid: 'rules-uid', attempt: 0 }, log_directory: join(tmp, 'rules'), linux: {} };
  const sb = await cri.runPodSandbox(sbConfig);
  const runOnce = async (config: object) => {
    const id = await cri.createContainer(sb, { metadata: { name: `r${Math.random().toString(16).slice(2, 8)}` }, image: { image: env.testImage }, log_path: 'x.log', ...config }, sbConfig);
    await cri.startContainer(id);
    for (;;) {
      const s = (await cri.containerStatus(id)).status!;
      if (s.state === 'CONTAINER_EXITED') return s;
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const failed = await runOnce({ command: ['sh', '-c', 'exit 3'] });
  assert.deepEqual([failed.exit_code, failed.reason], [3, 'Error']);
  const ok = await runOnce({}); // the image's Cmd: sh, which ends at once on an empty stdin
  assert.deepEqual([ok.exit_code, ok.reason], [0, 'Completed']);
  const args = await runOnce({ args: ['sh', '-c', 'exit 5'] }); // args replace the image's Cmd
  assert.equal(args.exit_code, 5);
  const env2 = await runOnce({ command: ['sh', '-c', 'test "$GREETING" = hi && test "$(pwd)" = /etc && test -n "$PATH"'], envs: [{ key: 'GREETING', value: Buffer.from('hi') }], working_dir: '/etc' });
  assert.equal(env2.exit_code, 0, 'env, working dir and the image PATH');
  const missing = await cri.createContainer(sb, { metadata: { name: 'nocmd' }, image: { image: env.testImage }, command: ['/no/such'], log_path: 'n.log' }, sbConfig);
  await assert.rejects(cri.startContainer(missing), /failed to start container \w+: exec: "\/no\/such": stat \/no\/such: no such file or directory$/);
  const st = (await cri.containerStatus(missing)).status!;
  assert.deepEqual([st.state, st.exit_code, st.reason], ['CONTAINER_EXITED', 128, 'StartError']);
});

test('the runtime killed and restarted while 5 containers run: same IDs, still running; an agent on top duplicates nothing', async () => {
  const node = uniqueNodeName('it-proc');
  const agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint]);
  try {
    const pods = await Promise.all([0, 1, 2, 3, 4].map((i) => createPod(node, `proc${i}`, { containers: [container('c', 'while true; do sleep 0.5; done')] })));
    const before = await Promise.all(pods.map((p) => waitPod(p, 'Running', 30_000, running)));
    const ids = before.map((p) => p.status!.containerStatuses![0]!.containerID!);
    await rt.restart();
    const listed = await cri.listContainers({ state: { state: 'CONTAINER_RUNNING' } });
    for (const id of ids) assert.ok(listed.some((c) => `nodelet-process://${c.id}` === id), `${id} reported running after the restart`);
    await new Promise((r) => setTimeout(r, 4000)); // a few PLEG relists and syncs against the restarted runtime
    for (const [i, p] of before.entries()) {
      const now = await getPod(p);
      assert.ok(running(now));
      assert.equal(now.status!.containerStatuses![0]!.containerID, ids[i]);
      assert.equal(now.status!.containerStatuses![0]!.restartCount, 0);
      const all = await cri.listContainers({ label_selector: { 'io.kubernetes.pod.uid': p.metadata!.uid! } });
      assert.equal(all.length, 1, 'no duplicate container');
    }
  } finally {
    await cleanupAgent(agent, rt.endpoint);
  }
});
