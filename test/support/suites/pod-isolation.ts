// A pod's network and namespaces on the real cluster: each pod a network namespace of its own on
// the cluster's bridge (so pods can listen on one port at once), reached by the agent's probes and
// by kubectl port-forward; containers of a pod sharing IPC, UTS and, when asked, PID; hostIPC,
// hostPID and sysctls as the kubelet passes them; seccomp profiles (RuntimeDefault, Unconfined,
// Localhost), no_new_privs and the bounding set applied to containers and to what is exec'd in
// them; mount propagation of hostPath volumes. One suite, run once per runtime.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { V1Pod } from '@kubernetes/client-node';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { clusterEnv, eventually, freePort } from '../cluster.js';
import { container, core, createPod, deletePod, NS, podGone, running, waitPod } from '../kube.js';
import { agentCgroupRoot, CGROUP_ROOT_SCRIPT } from '../cgroups.js';
import type { TestRuntime } from '../runtimes.js';
import { casesOf, type SuiteOptions } from '../cases.js';

const POD_PIDS = 64;

export function podIsolationSuite(makeRuntime: () => Promise<TestRuntime>, opts: SuiteOptions = {}): void {
  const test = casesOf(opts);
  const env = clusterEnv();
  let rt: TestRuntime;
  let agent: RunningAgent;
  let node: string;

  before(async () => {
    rt = await makeRuntime();
    node = uniqueNodeName(`it-iso-${rt.name}`);
    // The cgroups the node's daemons would run in, beside its kubepods: held to what is reserved for them.
    const root = agentCgroupRoot(node);
    await nodeSh(`sh ${CGROUP_ROOT_SCRIPT} make ${root}/system && sh ${CGROUP_ROOT_SCRIPT} make ${root}/runtime`);
    // A file of the checkout: a lab node reads the host's root.
    const dir = join(env.clusterDir, 'test-agents');
    mkdirSync(dir, { recursive: true });
    const config = join(dir, `${node}.yaml`);
    writeFileSync(
      config,
      [
        'apiVersion: nodelet.io/v1alpha1',
        'kind: NodeletConfiguration',
        'enforceNodeAllocatable: [pods, system-reserved, kube-reserved-compressible]',
        `systemReservedCgroup: ${root}/system`,
        `kubeReservedCgroup: ${root}/runtime`,
        'systemReserved: {cpu: 100m, memory: 32Mi}',
        'kubeReserved: {cpu: 50m, memory: 16Mi}',
        '',
      ].join('\n'),
    );
    // Each pod held to 64 processes (podPidsLimit): far more than any case here starts, fewer than the pids case tries.
    agent = await startAgent(node, ['--config', config, '--runtime-endpoint', rt.endpoint, '--pod-max-pids', String(POD_PIDS)], { place: rt.place });
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    await rt.stop();
  });

  const kubectl = (args: string[]) => {
    const r = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', timeout: 30_000 });
    return { code: r.status, out: r.stdout ?? '', err: r.stderr ?? '' };
  };
  const exec = (pod: V1Pod, c: string, script: string) => kubectl(['exec', '-n', NS, pod.metadata!.name!, '-c', c, '--', 'sh', '-c', script]);

  test('two pods serve on port 8080 at once, each on its own IP, reached by their readiness probes and by kubectl port-forward', async () => {
    // One listens on every address (probes reach it by the pod IP); the other only on its own
    // localhost, which port-forward reaches inside the pod's network namespace.
    const web = (name: string, addr: string) =>
      createPod(node, name, {
        containers: [
          container('web', `mkdir -p /www && echo "I am ${name} on $(hostname)" > /www/index.html && exec httpd -f -p ${addr}8080 -h /www`, {
            readinessProbe: addr ? { exec: { command: ['wget', '-qO-', 'http://127.0.0.1:8080/'] }, periodSeconds: 1 } : { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
          }),
        ],
      });
    const [a, b] = await Promise.all([web('net-a', ''), web('net-b', '127.0.0.1:')]);
    const ra = await waitPod(a, 'running and ready', 60_000, running);
    const rb = await waitPod(b, 'running and ready', 60_000, running);
    assert.notEqual(ra.status!.podIP, rb.status!.podIP);
    for (const p of [ra, rb]) assert.ok(rt.checkPodIP(p.status!.podIP!, p.status!.hostIP!), `pod IP ${p.status!.podIP} from the bridge`);
    // The node reaches the first by its IP; the second's listener is on its own loopback only.
    assert.equal(await (await fetch(`http://${ra.status!.podIP}:8080/`)).text(), `I am net-a on ${ra.metadata!.name}\n`);
    await assert.rejects(fetch(`http://${rb.status!.podIP}:8080/`, { signal: AbortSignal.timeout(5000) }));
    for (const p of [ra, rb]) {
      const local = await freePort();
      const pf = spawn(env.kubectl, ['--kubeconfig', env.kubeconfig, 'port-forward', '-n', NS, `pod/${p.metadata!.name}`, `${local}:8080`], { stdio: ['ignore', 'pipe', 'pipe'] });
      try {
        const body = await eventually('an answer through port-forward', 20_000, async () => {
          const res = await fetch(`http://127.0.0.1:${local}/`).catch(() => undefined);
          return res?.ok ? res.text() : undefined;
        });
        assert.equal(body, `I am ${p === ra ? 'net-a' : 'net-b'} on ${p.metadata!.name}\n`);
      } finally {
        pf.kill('SIGTERM');
      }
    }
    // The pod's DNS config is its resolv.conf (the kubelet's ClusterFirst falls back to Default here).
    const dns = await createPod(node, 'dns', { dnsPolicy: 'None', dnsConfig: { nameservers: ['192.0.2.53'], searches: ['example.test'], options: [{ name: 'ndots', value: '2' }] }, containers: [container('c', 'cat /etc/resolv.conf; sleep 3600')] });
    await waitPod(dns, 'running', 60_000, running);
    const resolv = exec(dns, 'c', 'cat /etc/resolv.conf');
    assert.match(resolv.out, /nameserver 192\.0\.2\.53/);
    assert.match(resolv.out, /search example\.test/);
    assert.match(resolv.out, /options ndots:2/);
  });

  test('namespaces as asked: the pod\'s containers share IPC and UTS; shareProcessNamespace shares PID; hostPID, hostIPC and hostNetwork the node\'s; sysctls are the pod\'s', async () => {
    const loop = 'trap "exit 0" TERM; while true; do sleep 0.2; done';
    const shared = await createPod(node, 'ns-shared', {
      shareProcessNamespace: true,
      securityContext: { sysctls: [{ name: 'kernel.shm_rmid_forced', value: '1' }, { name: 'net.ipv4.ip_local_port_range', value: '40000 50000' }] },
      containers: [container('a', `echo marker-a >/dev/null; exec sleep 3601`), container('b', loop, { securityContext: { runAsUser: 1000 } })],
    });
    const sp = await waitPod(shared, 'running', 60_000, running);
    // b (not root) sees a's process; each sees the pod's hostname; the sysctls are set in the pod only.
    assert.match(exec(sp, 'b', 'ps -o args').out, /sleep 3601/);
    assert.equal(exec(sp, 'b', 'hostname').out.trim(), sp.metadata!.name);
    assert.equal(exec(sp, 'a', 'cat /proc/sys/kernel/shm_rmid_forced').out.trim(), '1');
    assert.equal(exec(sp, 'a', 'cat /proc/sys/net/ipv4/ip_local_port_range').out.trim().replace(/\s+/g, ' '), '40000 50000');
    assert.notEqual(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().replace(/\s+/g, ' '), '40000 50000');
    // Both containers are in one IPC namespace: a POSIX shared memory file made by a is seen by b.
    assert.equal(exec(sp, 'a', 'echo from-a > /dev/shm/x && echo ok').out.trim(), 'ok');
    assert.equal(exec(sp, 'b', 'cat /dev/shm/x').out.trim(), 'from-a');

    // Without shareProcessNamespace each container has a PID namespace of its own.
    const own = await createPod(node, 'ns-own', { containers: [container('a', 'exec sleep 3602'), container('b', loop)] });
    const op = await waitPod(own, 'running', 60_000, running);
    assert.doesNotMatch(exec(op, 'b', 'ps -o args').out, /sleep 3602/);

    const host = await createPod(node, 'ns-host', { hostPID: true, hostIPC: true, hostNetwork: true, containers: [container('c', loop)] });
    const hp = await waitPod(host, 'running', 60_000, running);
    assert.equal(exec(hp, 'c', 'hostname').out.trim(), hostname());
    assert.ok(Number(exec(hp, 'c', 'ps -o pid | wc -l').out.trim()) > 20, 'the node\'s processes are seen');
    const ipc = spawnSync('readlink', ['/proc/self/ns/ipc'], { encoding: 'utf8' }).stdout.trim();
    assert.equal(exec(hp, 'c', 'readlink /proc/self/ns/ipc').out.trim(), ipc);
  });

  test('/sys is the pod\'s, as runc mounts it: a read-only sysfs of the pod\'s network devices (not the node\'s), and under /sys/fs/cgroup the container\'s own cgroup, in the container and in exec', async () => {
    const script = [
      "grep ' /sys ' /proc/mounts | cut -d' ' -f3,4 | cut -d, -f1",
      'ls /sys/class/net | sort | tr "\\n" " "; echo',
      'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\\n" " "; echo',
      'cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes',
      // Its own cgroup may not be changed: v1 the memory hierarchy's, v2 the cgroup2 root.
      'if [ -d /sys/fs/cgroup/memory ]; then d=/sys/fs/cgroup/memory; else d=/sys/fs/cgroup; fi; mkdir $d/probe 2>/dev/null && echo writable || echo read-only',
    ].join('; ');
    const created = await createPod(node, 'sysfs', {
      containers: [container('c', `{ ${script}; } > /tmp/out; exec sleep 3600`, { resources: { limits: { memory: '64Mi' } } })],
    });
    const pod = await waitPod(created, 'running', 60_000, running);
    const inContainer = await eventually('the container\'s own view', 20_000, async () => {
      const out = exec(pod, 'c', 'cat /tmp/out').out;
      return out.split('\n').length > 5 ? out : undefined;
    }, 250);
    const inExec = exec(pod, 'c', script).out;
    for (const [who, out] of [['container', inContainer], ['exec', inExec]] as const) {
      const [mount, sysNet, procNet, limit, rw] = out.split('\n');
      assert.equal(mount, 'sysfs ro', `${who}: /sys is a sysfs of its own, read-only`);
      assert.equal(sysNet, procNet, `${who}: /sys/class/net lists the pod's network devices (${procNet}), not the node's (${sysNet})`);
      assert.equal(limit, '67108864', `${who}: /sys/fs/cgroup shows the container's own memory limit`);
      assert.equal(rw, 'read-only', `${who}: /sys/fs/cgroup`);
    }
  });

  test('OOM scores as the kubelet\'s: Guaranteed -997, BestEffort 1000, Burstable between, in the container and in exec; the agent itself -999', async () => {
    const show = 'cat /proc/self/oom_score_adj > /tmp/adj; exec sleep 3600';
    const pods = {
      Guaranteed: await createPod(node, 'oom-guaranteed', { containers: [container('c', show, { resources: { limits: { cpu: '100m', memory: '64Mi' } } })] }),
      BestEffort: await createPod(node, 'oom-besteffort', { containers: [container('c', show)] }),
      Burstable: await createPod(node, 'oom-burstable', { containers: [container('c', show, { resources: { requests: { memory: '64Mi' } } })] }),
    };
    // Where the runtimes may not lower a score (no CAP_SYS_RESOURCE, as on the machine the tests
    // live on), containerd keeps a container at its own score, and so does the process runtime.
    const canLower = rt.place !== undefined || (BigInt(`0x${/^CapEff:\s+(\w+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]}`) & (1n << 24n)) !== 0n;
    for (const [qos, created] of Object.entries(pods)) {
      const pod = await waitPod(created, 'running', 60_000, running);
      assert.equal(pod.status!.qosClass, qos);
      const inContainer = await eventually(`${qos}: its own score`, 20_000, async () => exec(pod, 'c', 'cat /tmp/adj').out.trim() || undefined, 250);
      for (const [who, out] of [['container', inContainer], ['exec', exec(pod, 'c', 'cat /proc/self/oom_score_adj').out]] as const) {
        const adj = Number(out.trim());
        if (qos === 'Guaranteed') assert.equal(adj, canLower ? -997 : 0, `${qos} ${who}`);
        else if (qos === 'BestEffort') assert.equal(adj, 1000, `${qos} ${who}`);
        else assert.ok(adj >= 3 && adj <= 999, `${qos} ${who}: ${out}`);
      }
    }
    if (!rt.place) assert.equal(readFileSync(`/proc/${agent.process.pid}/oom_score_adj`, 'utf8').trim(), canLower ? '-999' : '0', 'the agent');
  });

  /** A shell script's output on the node the agent runs on (this machine, or its lab node). */
  const nodeSh = async (script: string): Promise<string> => {
    if (!rt.place) return spawnSync('sh', ['-c', script], { encoding: 'utf8' }).stdout ?? '';
    const child = rt.place.spawn(['sh', '-c', script]);
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString('utf8')));
    await new Promise((resolve) => child.once('exit', resolve));
    return out;
  };

  test('pod cgroups as the kubelet\'s: kubepods/<qos>/pod<UID> under the cgroup root with the pod\'s limits (the sum of its containers\'), its containers inside, removed with the pod', async () => {
    const v2 = (await nodeSh('test -f /sys/fs/cgroup/cgroup.controllers && echo v2')).trim() === 'v2';
    const kubepods = `${agentCgroupRoot(node)}/kubepods`;
    // A file of a cgroup in the controller's hierarchy (v1) or the unified one (v2).
    const file = (cg: string, v1: [string, string], v2file: string) => (v2 ? `/sys/fs/cgroup${cg}/${v2file}` : `/sys/fs/cgroup/${v1[0]}${cg}/${v1[1]}`);
    const readCg = async (cg: string, v1: [string, string], v2file: string) => (await nodeSh(`cat ${file(cg, v1, v2file)} 2>&1`)).trim();
    const sleeper = (name: string, resources: object) => container(name, 'exec sleep 3600', { resources });
    const created = {
      guaranteed: await createPod(node, 'cg-guaranteed', { terminationGracePeriodSeconds: 1, containers: [sleeper('a', { limits: { cpu: '100m', memory: '64Mi' } }), sleeper('b', { limits: { cpu: '200m', memory: '64Mi' } })] }),
      burstable: await createPod(node, 'cg-burstable', { terminationGracePeriodSeconds: 1, containers: [sleeper('a', { requests: { cpu: '100m' }, limits: { memory: '64Mi' } }), sleeper('b', { requests: { cpu: '100m' } })] }),
      besteffort: await createPod(node, 'cg-besteffort', { terminationGracePeriodSeconds: 1, containers: [sleeper('a', {})] }),
    };
    const pods = { guaranteed: '', burstable: '', besteffort: '' };
    for (const [qos, p] of Object.entries(created) as Array<[keyof typeof pods, V1Pod]>) {
      const pod = await waitPod(p, 'running', 60_000, running);
      pods[qos] = `${kubepods}${qos === 'guaranteed' ? '' : `/${qos}`}/pod${pod.metadata!.uid}`;
      // Its containers' processes are in cgroups under the pod's.
      const procs = await nodeSh(`cat ${file(pods[qos], ['memory', '*/cgroup.procs'], '*/cgroup.procs')} 2>/dev/null`);
      assert.ok(procs.trim().split('\n').filter(Boolean).length >= pod.spec!.containers.length, `${qos}: processes under ${pods[qos]}: ${JSON.stringify(procs)}`);
    }
    const unlimited = v2 ? 'max' : '9223372036854771712';
    // Guaranteed: 128Mi, shares of 300m (307; weight 12 on v2), quota 30 ms per 100 ms.
    assert.equal(await readCg(pods.guaranteed, ['memory', 'memory.limit_in_bytes'], 'memory.max'), '134217728');
    assert.equal(await readCg(pods.guaranteed, ['cpu', 'cpu.shares'], 'cpu.weight'), v2 ? '12' : '307');
    assert.equal(await readCg(pods.guaranteed, ['cpu', 'cpu.cfs_quota_us'], 'cpu.max'), v2 ? '30000 100000' : '30000');
    // Burstable: one container without a memory limit leaves the pod unlimited; shares from 200m.
    assert.equal(await readCg(pods.burstable, ['memory', 'memory.limit_in_bytes'], 'memory.max'), unlimited);
    assert.equal(await readCg(pods.burstable, ['cpu', 'cpu.shares'], 'cpu.weight'), v2 ? '8' : '204');
    assert.equal(await readCg(`${kubepods}/burstable`, ['cpu', 'cpu.shares'], 'cpu.weight'), v2 ? '8' : '204', 'the Burstable class: its pods\' requests');
    assert.equal(await readCg(pods.besteffort, ['cpu', 'cpu.shares'], 'cpu.weight'), v2 ? '1' : '2');
    assert.equal(await readCg(`${kubepods}/besteffort`, ['cpu', 'cpu.shares'], 'cpu.weight'), v2 ? '1' : '2');
    if (v2) assert.ok((await readCg(pods.guaranteed, ['', ''], '*/memory.oom.group')).split('\n').includes('1'), 'memory.oom.group: an OOM ends the whole container');
    await Promise.all(Object.values(created).map((p) => deletePod(p, 1)));
    await Promise.all(Object.values(created).map((p) => podGone(p, 60_000)));
    await eventually('the pods\' cgroups to be removed', 30_000, async () => ((await nodeSh(Object.values(pods).map((cg) => `test -d ${file(cg, ['memory', ''], '')} && echo ${cg}`).join('; '))).trim() === '' ? true : undefined), 500);
  });

  test('reserved cgroups as the kubelet enforces them: systemReservedCgroup held to systemReserved (cpu shares, memory), kubeReservedCgroup to kubeReserved\'s cpu alone (kube-reserved-compressible); the Node\'s SuccessfulNodeAllocatableEnforcement events', async () => {
    const v2 = (await nodeSh('test -f /sys/fs/cgroup/cgroup.controllers && echo v2')).trim() === 'v2';
    const root = agentCgroupRoot(node);
    const readCg = async (cg: string, v1: [string, string], v2file: string) => (await nodeSh(`cat ${v2 ? `/sys/fs/cgroup${cg}/${v2file}` : `/sys/fs/cgroup/${v1[0]}${cg}/${v1[1]}`} 2>&1`)).trim();
    assert.equal(await readCg(`${root}/system`, ['memory', 'memory.limit_in_bytes'], 'memory.max'), String(32 * 2 ** 20));
    assert.equal(await readCg(`${root}/system`, ['cpu', 'cpu.shares'], 'cpu.weight'), v2 ? '4' : '102');
    assert.equal(await readCg(`${root}/runtime`, ['cpu', 'cpu.shares'], 'cpu.weight'), v2 ? '2' : '51');
    assert.equal(await readCg(`${root}/runtime`, ['memory', 'memory.limit_in_bytes'], 'memory.max'), v2 ? 'max' : '9223372036854771712', 'compressible only: its memory is left alone');
    const messages = await eventually('the enforcement events', 20_000, async () => {
      const list = await core.listEventForAllNamespaces({ fieldSelector: `involvedObject.kind=Node,involvedObject.name=${node},reason=SuccessfulNodeAllocatableEnforcement` });
      const m = list.items.map((e) => e.message).sort();
      return m.length >= 3 ? m : undefined;
    });
    assert.deepEqual(messages, ['Updated Node Allocatable limit across pods', `Updated limits on kube reserved cgroup ${root}/runtime`, `Updated limits on system reserved cgroup ${root}/system`]);
  });

  test('podPidsLimit: the pod cgroup\'s pids.max, and a pod that starts 100 processes gets no more than that', async () => {
    const v2 = (await nodeSh('test -f /sys/fs/cgroup/cgroup.controllers && echo v2')).trim() === 'v2';
    // The loop in a subshell: a shell that cannot fork gives up, and the container's own goes on.
    const script = '( i=0; while [ $i -lt 100 ]; do sleep 600 & i=$((i+1)); done ) 2>/dev/null; exec sleep 3600';
    const created = await createPod(node, 'pids', { terminationGracePeriodSeconds: 1, containers: [container('c', script)] });
    const pod = await waitPod(created, 'running', 60_000, running);
    const cg = `${v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/pids'}${agentCgroupRoot(node)}/kubepods/besteffort/pod${pod.metadata!.uid}`;
    assert.equal((await nodeSh(`cat ${cg}/pids.max`)).trim(), String(POD_PIDS));
    // Refused forks counted by the kernel, and no more processes than the limit (without it all 100 would run).
    // The kernel counts a refused fork in the cgroup of the process that tried (v1: the container's own, under the pod's).
    const refused = await eventually('a fork refused at the pod\'s limit', 30_000, async () => {
      const n = [...(await nodeSh(`cat ${cg}/pids.events ${cg}/*/pids.events 2>/dev/null`)).matchAll(/^max (\d+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
      return n > 0 ? n : undefined;
    }, 500);
    const current = Number((await nodeSh(`cat ${cg}/pids.current`)).trim());
    assert.ok(refused > 0 && current <= POD_PIDS && current > 10, `pids.current ${current}, refused ${refused}`);
    await deletePod(created, 1);
  });

  test('an OOM in a container: reported OOMKilled with exit code 137 as the kubelet reports it; on v2 the whole container ends (memory.oom.group), not only the process the kernel picked', async (t) => {
    // A memory hog, however bounded, runs in lab nodes only.
    if (!rt.place) return t.skip('memory hogs run in lab nodes only');
    const v2 = (await nodeSh('test -f /sys/fs/cgroup/cgroup.controllers && echo v2')).trim() === 'v2';
    if (!v2) return t.skip('the lab nodes are cgroup v2');
    const created = await createPod(node, 'oom', {
      restartPolicy: 'Never',
      // The shell outlives the hog unless the whole container is killed.
      containers: [container('hog', 'tail /dev/zero; echo survived; exec sleep 3600', { resources: { limits: { memory: '32Mi' } } })],
    });
    const pod = await waitPod(created, 'its container to end with its hog', 120_000, (p) => (p.status?.containerStatuses?.[0]?.state?.terminated ? p : undefined));
    const state = pod.status!.containerStatuses![0]!.state!;
    assert.ok(state.terminated, `the container ended with its hog: ${JSON.stringify(state)}`);
    assert.equal(state.terminated.reason, 'OOMKilled');
    assert.equal(state.terminated.exitCode, 137);
    assert.equal((await waitPod(pod, 'Failed', 30_000, (p) => (p.status?.phase === 'Failed' ? p : undefined))).status!.phase, 'Failed');
  });

  test('seccomp: RuntimeDefault refuses keyctl and new user namespaces, Unconfined allows them, a Localhost profile applies, a missing one fails the container in the runtime\'s words', async () => {
    const probe = 'keyctl-probe; unshare -U true && echo userns-allowed || echo userns-refused; grep "^Seccomp:" /proc/self/status; sleep 3600';
    const profileDir = join(env.clusterDir, 'test-agents', node, 'seccomp');
    mkdirSync(profileDir, { recursive: true });
    // Everything allowed but mkdir and mkdirat, which fail with EACCES (13).
    writeFileSync(join(profileDir, 'no-mkdir.json'), JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO', errnoRet: 13 }] }));
    const pod = await createPod(node, 'seccomp', {
      containers: [
        container('default', probe, { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }),
        container('unconfined', probe, { securityContext: { seccompProfile: { type: 'Unconfined' } } }),
        container('local', 'sleep 3600', { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'no-mkdir.json' } } }),
      ],
    });
    const p = await waitPod(pod, 'running', 60_000, running);
    const logs = (c: string) => eventually(`${c}'s probe output`, 20_000, async () => {
      const r = kubectl(['logs', '-n', NS, p.metadata!.name!, '-c', c]);
      return /Seccomp:/.test(r.out) ? r.out : undefined;
    });
    const def = await logs('default');
    assert.match(def, /keyctl: Operation not permitted/);
    assert.match(def, /userns-refused/);
    assert.match(def, /Seccomp:\s+2/);
    const unc = await logs('unconfined');
    assert.doesNotMatch(unc, /keyctl: Operation not permitted/);
    assert.match(unc, /userns-allowed/);
    assert.match(unc, /Seccomp:\s+0/);
    // What is exec'd runs under the container's profile too.
    assert.match(exec(p, 'default', 'keyctl-probe').out, /keyctl: Operation not permitted/);
    const mk = exec(p, 'local', 'mkdir /tmp/x; echo rc=$?');
    assert.match(mk.out + mk.err, /Permission denied/);
    assert.match(mk.out, /rc=1/);
    assert.match(exec(p, 'local', 'echo hi > /tmp/file && cat /tmp/file').out, /hi/);

    const missing = await createPod(node, 'seccomp-missing', { containers: [container('c', 'sleep 3600', { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'not-there.json' } } })] });
    const waiting = await waitPod(missing, 'CreateContainerError', 60_000, (x) => (x.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerError' ? x.status.containerStatuses[0]!.state!.waiting! : undefined));
    assert.match(waiting.message ?? '', /seccomp.*not-there\.json.*no such file or directory/);
  });

  test('security context: allowPrivilegeEscalation false sets no_new_privs (a setuid binary stays the user), unset leaves it off; dropping ALL empties the bounding set, in the container and in exec', async () => {
    const nnp = 'registry.k8s.io/e2e-test-images/nonewprivs:1.4';
    const pod = await createPod(node, 'nnp', {
      restartPolicy: 'Never',
      containers: [
        { name: 'escalates', image: nnp, securityContext: { runAsUser: 1000 } },
        { name: 'held', image: nnp, securityContext: { runAsUser: 1000, allowPrivilegeEscalation: false } },
        container('dropped', 'grep -E "^(CapBnd|NoNewPrivs):" /proc/self/status; sleep 3600', { securityContext: { capabilities: { drop: ['ALL'] }, allowPrivilegeEscalation: false } }),
      ],
    });
    const logs = (c: string, want: RegExp) => eventually(`${c}'s output`, 30_000, async () => {
      const r = kubectl(['logs', '-n', NS, pod.metadata!.name!, '-c', c]);
      return want.test(r.out) ? r.out : undefined;
    });
    assert.match(await logs('escalates', /Effective uid/), /Effective uid: 0\n/);
    assert.match(await logs('held', /Effective uid/), /Effective uid: 1000\n/);
    const dropped = await logs('dropped', /CapBnd/);
    assert.match(dropped, /CapBnd:\s+0000000000000000/);
    assert.match(dropped, /NoNewPrivs:\s+1/);
    const p = await waitPod(pod, 'dropped running', 30_000, (x) => (x.status?.containerStatuses?.find((c) => c.name === 'dropped')?.state?.running ? x : undefined));
    const inExec = exec(p, 'dropped', 'grep -E "^(CapBnd|NoNewPrivs):" /proc/self/status').out;
    assert.match(inExec, /CapBnd:\s+0000000000000000/);
    assert.match(inExec, /NoNewPrivs:\s+1/);
  });

  test('mount propagation: a HostToContainer volume sees what the host mounts under it after the start, a None one does not, in the container and in exec', async (t) => {
    // The host directory is a shared mount of its own, as the kubelet's pod directories are on a node.
    const dir = join(env.clusterDir, 'test-agents', node, `propagation-${process.pid}`);
    mkdirSync(join(dir, 'sub'), { recursive: true });
    const sh = (cmd: string) => assert.equal(spawnSync('sh', ['-c', cmd], { stdio: 'inherit' }).status, 0, cmd);
    sh(`mount --bind '${dir}' '${dir}' && mount --make-rshared '${dir}'`);
    t.after(() => {
      spawnSync('umount', ['-l', join(dir, 'sub')]);
      spawnSync('umount', ['-l', dir]);
    });
    const vol = (name: string) => ({ name, hostPath: { path: dir, type: 'Directory' } });
    const pod = await createPod(node, 'propagation', {
      volumes: [vol('h2c'), vol('none')],
      containers: [
        container('c', 'sleep 3600', {
          volumeMounts: [
            { name: 'h2c', mountPath: '/h2c', mountPropagation: 'HostToContainer' },
            { name: 'none', mountPath: '/none', mountPropagation: 'None' },
          ],
        }),
      ],
    });
    const p = await waitPod(pod, 'running', 60_000, running);
    // Mounted on the host only now.
    sh(`mount -t tmpfs propagation-test '${join(dir, 'sub')}' && echo from-host > '${join(dir, 'sub', 'flag')}'`);
    const seen = await eventually('the host\'s mount in /h2c', 10_000, async () => (/from-host/.test(exec(p, 'c', 'cat /h2c/sub/flag 2>&1').out) ? true : undefined));
    assert.ok(seen);
    assert.match(exec(p, 'c', 'ls -A /none/sub; echo end').out, /^end/, 'a None (rprivate) volume does not see it');
  });
}
