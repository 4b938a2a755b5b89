// nodelet's process runtime as CRI clients see it: crictl against its socket, and its state
// surviving a crash of the runtime while containers run (with an agent on top duplicating nothing).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../../src/cri/client.js';
import { DEFAULT_DEVICE_RULES, v1DeviceRule } from '../../src/procruntime/devices.js';
import { cleanupAgent, startAgent, uniqueNodeName } from '../support/agent.js';
import { clusterEnv } from '../support/cluster.js';
import { container, createPod, getPod, running, waitPod } from '../support/kube.js';
import { processRuntime, type ProcessRuntimeHandle } from '../support/runtimes.js';

const env = clusterEnv();
// In the runtime's own environment (it inherits ours), so that a leak into containers shows.
process.env.NODELET_TEST_LEAK = 'leaked';
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
  execFileSync(env.crictl, ['--config', '/dev/null', '--timeout', '30s', '--runtime-endpoint', rt.endpoint, '--image-endpoint', rt.endpoint, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

test('Version and Status: nodelet-process, API 0.1.0, ready, and which isolation runs', async () => {
  const v = await cri.version('0.1.0');
  assert.deepEqual([v.version, v.runtime_name, v.runtime_api_version], ['0.1.0', 'nodelet-process', 'v1']);
  const st = await cri.status(true);
  assert.deepEqual(Object.fromEntries(st.status!.conditions.map((c) => [c.type, c.status])), { RuntimeReady: true, NetworkReady: true });
  assert.equal(JSON.parse(st.info.isolation!).mode, 'launcher');
});

test('crictl pull, images, runp, create, start, pods, ps, logs, exec, inspect, stop, rm, rmp', async () => {
  crictl('pull', env.testImage);
  assert.match(crictl('images'), /nodelet\.test\/busybox\s+1\s+[0-9a-f]{13}/);
  const logDir = join(tmp, 'logs');
  writeFileSync(join(tmp, 'pod.json'), JSON.stringify({ metadata: { name: 'cp', namespace: 'crictl', uid: 'crictl-uid-1', attempt: 0 }, hostname: 'cp-host', log_directory: logDir, linux: {} }));
  writeFileSync(
    join(tmp, 'ctr.json'),
    JSON.stringify({ metadata: { name: 'c' }, image: { image: env.testImage }, command: ['sh', '-c', "trap 'echo bye; exit 0' TERM; echo hello from $(hostname); echo oops >&2; while true; do sleep 0.2; done"], log_path: 'c/0.log', labels: { app: 'crictl' }, envs: [{ key: 'NODELET_SECRET', value: 'on-no-command-line' }] }),
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
  // A Secret's value reaches the container and its exec, and no command line on the host (the launcher reads it from a root-only file).
  assert.equal(crictl('exec', '-s', ctr, 'sh', '-c', 'echo $NODELET_SECRET').trim(), 'on-no-command-line');
  const cmdlines = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      return readFileSync(`/proc/${d}/cmdline`, 'utf8').includes('on-no-command-line');
    } catch {
      return false;
    }
  });
  assert.deepEqual(cmdlines, [], 'no process shows the value in its command line');
  const state = join(env.clusterDir, 'process-crictl', 'root', 'containers');
  const records = readdirSync(state).map((id) => join(state, id, 'container.json')).filter((f) => existsSync(f));
  assert.ok(records.length > 0);
  for (const f of records) assert.equal(statSync(f).mode & 0o077, 0, `${f} is root's only`);
  assert.equal(statSync(join(state, '..')).mode & 0o777, 0o700, "the runtime's root (images' setuid files, containers' roots) is root's only");
  // The exec is in the container's cgroups (its limits, its device allow-list), not the runtime's.
  assert.match(crictl('exec', '-s', ctr, 'cat', '/proc/self/cgroup'), new RegExp(`^\\d+:(memory)?:/nodelet-process/${ctr}$`, 'm'));
  // /sys as runc mounts it: a sysfs of its own, read-only, and under /sys/fs/cgroup the container's
  // own cgroups only (cgroup v1 here: its cgroup of each hierarchy it joined, on a read-only tmpfs).
  const sys = crictl('exec', '-s', ctr, 'sh', '-c', "grep -E ' /sys(/fs/cgroup)? ' /proc/mounts | cut -d' ' -f2-4; ls /sys/fs/cgroup; cat /sys/fs/cgroup/memory/cgroup.procs | wc -l").trim().split('\n');
  assert.match(sys[0]!, /^\/sys sysfs ro,/);
  if (existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes')) {
    assert.match(sys[1]!, /^\/sys\/fs\/cgroup tmpfs ro,/);
    assert.ok(sys.includes('memory') && sys.includes('devices'), sys.join(' '));
    // The container's own memory cgroup: its shell and the exec's, not the node's thousands.
    assert.ok(Number(sys.at(-1)) < 10, `processes in the container's memory cgroup: ${sys.at(-1)}`);
  }
  // cgroup v1 (this machine): runc's allow-list written to the container's devices cgroup (v2's
  // filter: launcher.test.ts, and the lab's attacks).
  const devices = `/sys/fs/cgroup/devices/nodelet-process/${ctr}/devices.list`;
  if (existsSync('/sys/fs/cgroup/devices/devices.list')) assert.deepEqual(readFileSync(devices, 'utf8').trim().split('\n').sort(), DEFAULT_DEVICE_RULES.map(v1DeviceRule).sort());
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
    // A container that ends at once (before its start time could even be read) is seen exited too.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const s = (await cri.containerStatus(id)).status!;
      if (s.state === 'CONTAINER_EXITED') return s;
      assert.ok(Date.now() < deadline, `container ${id} still ${s.state} 20 s after it started`);
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
  // An AppArmor profile it cannot apply is refused at create, never run without; Unconfined is what it gives.
  for (const security_context of [{ apparmor: { profile_type: 'RuntimeDefault' } }, { apparmor: { profile_type: 'Localhost', localhost_ref: 'k8s-deny-write' } }, { apparmor_profile: 'runtime/default' }])
    await assert.rejects(cri.createContainer(sb, { metadata: { name: 'aa' }, image: { image: env.testImage }, command: ['true'], log_path: 'a.log', linux: { security_context } } as never, sbConfig), /failed to apply AppArmor profile "(RuntimeDefault|localhost\/k8s-deny-write|runtime\/default)": the process runtime does not apply AppArmor profiles/);
  await cri.createContainer(sb, { metadata: { name: 'aa-unconfined' }, image: { image: env.testImage }, command: ['true'], log_path: 'u.log', linux: { security_context: { apparmor: { profile_type: 'Unconfined' } } } } as never, sbConfig);
  const missing = await cri.createContainer(sb, { metadata: { name: 'nocmd' }, image: { image: env.testImage }, command: ['/no/such'], log_path: 'n.log' }, sbConfig);
  await assert.rejects(cri.startContainer(missing), /failed to start container \w+: exec: "\/no\/such": stat \/no\/such: no such file or directory$/);
  const st = (await cri.containerStatus(missing)).status!;
  assert.deepEqual([st.state, st.exit_code, st.reason], ['CONTAINER_EXITED', 128, 'StartError']);
});

test('crictl stats and statsp; exec with a timeout kills what it ran; stop right after start; capabilities and a read-only root', async () => {
  const podJson = join(tmp, 'stats-pod.json');
  writeFileSync(podJson, JSON.stringify({ metadata: { name: 'st', namespace: 'crictl', uid: 'stats-uid', attempt: 0 }, log_directory: join(tmp, 'st'), linux: {} }));
  const pod = crictl('runp', podJson).trim();
  const make = (name: string, command: string[], extra: object = {}) => {
    const f = join(tmp, `${name}.json`);
    writeFileSync(f, JSON.stringify({ metadata: { name }, image: { image: env.testImage }, command, log_path: `${name}.log`, labels: { stats: name }, ...extra }));
    const id = crictl('create', pod, f, podJson).trim();
    crictl('start', id);
    return id;
  };
  // A busy loop, so there is CPU time to see.
  const busy = make('busy', ['sh', '-c', 'while true; do :; done']);
  await new Promise((r) => setTimeout(r, 1500));
  crictl('stats', '-o', 'json', '--id', busy); // a first reading, so that the second has a rate
  await new Promise((r) => setTimeout(r, 500));
  const stats = JSON.parse(crictl('stats', '-o', 'json', '--label', 'stats=busy')) as { stats: Array<{ attributes: { id: string }; cpu: { usageCoreNanoSeconds: { value: string }; usageNanoCores: { value: string } }; memory: { workingSetBytes: { value: string } }; writableLayer: { usedBytes: { value: string } } }> };
  assert.equal(stats.stats.length, 1, 'the label filter');
  const s = stats.stats[0]!;
  assert.equal(s.attributes.id, busy);
  assert.ok(Number(s.cpu.usageCoreNanoSeconds.value) > 100_000_000, `CPU used by a busy loop: ${s.cpu.usageCoreNanoSeconds.value} ns`);
  assert.ok(Number(s.cpu.usageNanoCores.value) > 100_000_000, `a busy loop uses a good part of a core: ${s.cpu.usageNanoCores.value}`);
  assert.ok(Number(s.memory.workingSetBytes.value) > 0);
  assert.ok(Number(s.writableLayer.usedBytes.value) >= 0);
  const sp = JSON.parse(crictl('statsp', '-o', 'json', '--id', pod)) as { stats: Array<{ attributes: { id: string }; linux: { containers: unknown[]; cpu: { usageCoreNanoSeconds: { value: string } } } }> };
  assert.equal(sp.stats[0]!.attributes.id, pod);
  assert.equal(sp.stats[0]!.linux.containers.length, 1);
  assert.ok(Number(sp.stats[0]!.linux.cpu.usageCoreNanoSeconds.value) > 0);
  crictl('stop', '-t', '0', busy);

  // ExecSync past its timeout: an error (DEADLINE_EXCEEDED), and the command is gone with it.
  const idle = make('idle', ['top']);
  assert.throws(() => crictl('exec', '-s', '--timeout', '1', idle, 'sleep', '4321'), (e: { stderr?: string }) => /DeadlineExceeded/.test(String(e.stderr)));
  assert.throws(() => crictl('exec', '-s', idle, 'pgrep', '-f', 'sleep 4321'), (e: { status?: number; stdout?: string }) => e.status === 1 && e.stdout === '');

  // Stopped the moment it started, a PID 1 with a SIGTERM handler still gets SIGTERM (not SIGKILL's 137).
  for (let i = 0; i < 3; i++) {
    const t = make(`top${i}`, ['top']);
    crictl('stop', '-t', '30', t);
    const st = JSON.parse(crictl('inspect', t)) as { status: { state: string; exitCode: number } };
    assert.equal(st.status.state, 'CONTAINER_EXITED');
    assert.notEqual(st.status.exitCode, 137, 'ended by SIGTERM, not killed after the grace period');
  }

  // containerd's default capabilities (0xa80425fb), NET_ADMIN (bit 12) only when added.
  // Both the container's process and what is exec'd into it (which must not keep the runtime's).
  const capEff = (id: string, proc = '1') => BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(crictl('exec', '-s', id, 'cat', `/proc/${proc}/status`))![1]}`);
  assert.equal(capEff(idle), 0xa80425fbn);
  assert.equal(capEff(idle, 'self'), 0xa80425fbn);
  const admin = make('admin', ['top'], { linux: { security_context: { capabilities: { add_capabilities: ['NET_ADMIN'], drop_capabilities: ['KILL'] } } } });
  assert.equal(capEff(admin), (0xa80425fbn | (1n << 12n)) & ~(1n << 5n));
  assert.equal(capEff(admin, 'self'), (0xa80425fbn | (1n << 12n)) & ~(1n << 5n));
  // An exec sees the container's environment, not the runtime's.
  const withEnv = make('env', ['top'], { envs: [{ key: 'GREETING', value: 'hi' }] });
  assert.equal(crictl('exec', '-s', withEnv, 'sh', '-c', 'echo "$GREETING:$NODELET_TEST_LEAK"').trim(), 'hi:');
  const ro = make('ro', ['top'], { linux: { security_context: { readonly_rootfs: true } } });
  assert.throws(() => crictl('exec', '-s', ro, 'touch', '/x'), (e: { stderr?: string }) => /Read-only file system/.test(String(e.stderr)));

  // runAsUser/runAsGroup: that user on the host as in the container, without capabilities; the
  // supplementary groups of a root container; a user the image does not know is refused at create.
  const u = make('user', ['top'], { linux: { security_context: { run_as_user: { value: 1000 }, run_as_group: { value: 50000 } } } });
  assert.equal(crictl('exec', '-s', u, 'sh', '-c', 'echo $(id -u):$(id -g)').trim(), '1000:50000');
  assert.equal(capEff(u), 0n);
  const hostStatus = readFileSync(`/proc/${(JSON.parse(crictl('inspect', u)) as { info: { pid: number } }).info.pid}/status`, 'utf8');
  assert.match(hostStatus, /^Uid:\s+1000\s/m, 'the process is uid 1000 on the host too');
  const g = make('groups', ['top'], { linux: { security_context: { supplemental_groups: [1234, 5678] } } });
  assert.deepEqual(crictl('exec', '-s', g, 'id', '-G').trim().split(' ').sort(), ['0', '1234', '5678']);
  const f = join(tmp, 'nouser.json');
  writeFileSync(f, JSON.stringify({ metadata: { name: 'nouser' }, image: { image: env.testImage }, command: ['top'], linux: { security_context: { run_as_username: 'nosuch' } } }));
  assert.throws(() => crictl('create', pod, f, podJson), (e: { stderr?: string }) => /InvalidArgument desc = user \\?"nosuch\\?" is not in the image's \/etc\/passwd/.test(String(e.stderr)));
  crictl('rmp', '-f', pod);
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

test('proot, where the launcher cannot make namespaces: start, exec, SIGTERM to the group, exit code, nothing left behind', async () => {
  const pr = await processRuntime('proot', ['--isolation', 'proot']);
  const c2 = new CriClient(pr.endpoint);
  try {
    const st = await c2.status(true);
    assert.match(JSON.stringify(st.info), /proot/, 'Status says which isolation runs');
    await c2.pullImage({ image: env.testImage });
    const sbConfig = { metadata: { name: 'pr', namespace: 'crictl', uid: 'proot-uid', attempt: 0 }, log_directory: join(tmp, 'proot'), linux: {} };
    const sb = await c2.runPodSandbox(sbConfig);
    const id = await c2.createContainer(
      sb,
      { metadata: { name: 'c' }, image: { image: env.testImage }, command: ['sh', '-c', "trap 'exit 7' TERM; echo started; while true; do sleep 0.2; done"], log_path: 'c.log' },
      sbConfig,
    );
    await c2.startContainer(id);
    const exec = await c2.execSync(id, ['cat', '/etc/nodelet-test-image'], 10);
    assert.equal(Buffer.from(exec.stdout).toString(), 'busybox 1\n', "the image's own files");
    assert.equal(Buffer.from(exec.stderr).toString(), '');
    await c2.stopContainer(id, 10);
    const s = (await c2.containerStatus(id)).status!;
    assert.deepEqual([s.state, s.exit_code], ['CONTAINER_EXITED', 7], "the command's own exit on SIGTERM, recorded by the monitor");
    const pid = Number(/"child-pid":\s*(\d+)/.exec(readFileSync(join(clusterEnv().clusterDir, 'process-proot', 'root', 'containers', id, 'status.json'), 'utf8'))![1]);
    await c2.removePodSandbox(sb);
    // Zombies aside (their reaping is the host init's business), nothing of its group is left.
    const live = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map((d) => {
        try {
          return readFileSync(`/proc/${d}/stat`, 'utf8');
        } catch {
          return '';
        }
      })
      .map((st) => st.slice(st.lastIndexOf(')') + 2).split(' '))
      .filter((f) => f[0] !== 'Z' && Number(f[2]) === pid);
    assert.deepEqual(live, [], 'no live process of its group is left');
  } finally {
    for (const sb of await c2.listPodSandbox()) await c2.removePodSandbox(sb.id).catch(() => undefined);
    c2.close();
    await pr.stop();
  }
});
