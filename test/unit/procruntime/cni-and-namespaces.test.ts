// The process runtime's pods' networks and namespaces, the pure parts: which CNI configuration is
// used, how a list of plugins is run (results chained, capabilities passed, DEL in reverse),
// which sysctls a pod may set, and what a container's launch joins.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cni, findPlugin, loadNetworkList, podIPs, type PluginRunner } from '../../../src/procruntime/cni.js';
import { criMounts, invalidMount } from '../../../src/procruntime/container-files.js';
import { execArgv, launchArgv, type LaunchSpec } from '../../../src/procruntime/isolation.js';
import { procStart } from '../../../src/procruntime/procfs.js';
import { launchNamespaces, sysctlPath, sysctlRefusal } from '../../../src/procruntime/sandbox-namespaces.js';

test('the network configuration is the first valid file by name; a .conf is a list of one; none is an error naming the directory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cni-'));
  assert.deepEqual(loadNetworkList(dir), { error: `no network config found in ${dir}` });
  writeFileSync(join(dir, '20-b.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'b', plugins: [{ type: 'bridge' }, { type: 'portmap' }] }));
  writeFileSync(join(dir, '10-a.conf'), JSON.stringify({ cniVersion: '0.4.0', name: 'a', type: 'ptp' }));
  writeFileSync(join(dir, '05-broken.conflist'), '{not json');
  writeFileSync(join(dir, 'README'), 'not a config');
  const l = loadNetworkList(dir);
  assert.ok('list' in l);
  assert.deepEqual(l.list, { cniVersion: '0.4.0', name: 'a', plugins: [{ cniVersion: '0.4.0', name: 'a', type: 'ptp' }] });
});

test('ADD runs each plugin with the previous result and the capabilities it declares; DEL runs them in reverse with the cached result; a CNI error is the call\'s', async () => {
  const bin = mkdtempSync(join(tmpdir(), 'nodelet-cni-bin-'));
  for (const p of ['bridge', 'portmap']) {
    writeFileSync(join(bin, p), '#!/bin/sh\n');
    chmodSync(join(bin, p), 0o755);
  }
  assert.equal(findPlugin(['/nonexistent', bin], 'bridge'), join(bin, 'bridge'));
  assert.equal(findPlugin([bin], '../bridge'), undefined, 'a type is a name, never a path');
  const calls: Array<{ plugin: string; command: string; conf: Record<string, unknown>; env: Record<string, string> }> = [];
  const result = { cniVersion: '1.0.0', interfaces: [{ name: 'br' }, { name: 'eth0', sandbox: '/ns' }], ips: [{ address: 'fd00::5/64', interface: 1 }, { address: '10.0.0.5/24', interface: 1 }, { address: '10.9.9.9/24', interface: 0 }] };
  const runner: PluginRunner = async (path, env, stdin) => {
    const conf = JSON.parse(stdin) as Record<string, unknown>;
    calls.push({ plugin: path.split('/').pop()!, command: env.CNI_COMMAND!, conf, env });
    if (path.endsWith('portmap') && env.CNI_COMMAND === 'ADD') return { code: 0, stdout: JSON.stringify(conf.prevResult), stderr: '' };
    return { code: 0, stdout: env.CNI_COMMAND === 'ADD' ? JSON.stringify(result) : '', stderr: '' };
  };
  const cni = new Cni([bin], runner);
  const list = { cniVersion: '1.0.0', name: 'net', plugins: [{ type: 'bridge', bridge: 'br0' }, { type: 'portmap', capabilities: { portMappings: true } }] };
  const a = { containerId: 'sb1', netns: '/ns', ifname: 'eth0', args: 'K8S_POD_NAME=p', capabilities: { portMappings: [{ hostPort: 80, containerPort: 8080, protocol: 'tcp', hostIP: '' }] } };
  const got = await cni.add(list, a);
  assert.deepEqual(podIPs(got), ['10.0.0.5', 'fd00::5'], 'the pod\'s interface, IPv4 first');
  assert.deepEqual(calls.map((c) => `${c.command} ${c.plugin}`), ['ADD bridge', 'ADD portmap']);
  assert.equal(calls[0]!.conf.prevResult, undefined);
  assert.equal(calls[0]!.conf.runtimeConfig, undefined, 'bridge asked for no capability');
  assert.deepEqual(calls[1]!.conf.runtimeConfig, { portMappings: a.capabilities.portMappings });
  assert.equal(calls[1]!.conf.capabilities, undefined);
  assert.deepEqual(calls[1]!.conf.prevResult, result);
  assert.equal(calls[0]!.conf.name, 'net');
  assert.deepEqual([calls[0]!.env.CNI_NETNS, calls[0]!.env.CNI_IFNAME, calls[0]!.env.CNI_CONTAINERID, calls[0]!.env.CNI_ARGS, calls[0]!.env.CNI_PATH], ['/ns', 'eth0', 'sb1', 'K8S_POD_NAME=p', bin]);
  calls.length = 0;
  await cni.del(list, a, got);
  assert.deepEqual(calls.map((c) => `${c.command} ${c.plugin}`), ['DEL portmap', 'DEL bridge']);
  assert.deepEqual(calls[0]!.conf.prevResult, got);

  const failing = new Cni([bin], async () => ({ code: 1, stdout: JSON.stringify({ code: 11, msg: 'failed to allocate for range 0', details: '10.0.0.0/30 is full' }), stderr: '' }));
  await assert.rejects(failing.add(list, a), /plugin type="bridge" failed \(add\): failed to allocate for range 0: 10\.0\.0\.0\/30 is full/);
  await assert.rejects(new Cni(['/nonexistent']).add(list, a), /failed to find plugin "bridge" in path \[\/nonexistent\]/);
});

test('sysctls: only namespaced ones, and only in a namespace the pod has of its own (runc\'s rule)', () => {
  const own = { net: '/n', ipc: '/i', uts: '/u' };
  assert.equal(sysctlRefusal('kernel.shm_rmid_forced', own), undefined);
  assert.equal(sysctlRefusal('net.ipv4.ip_local_port_range', own), undefined);
  assert.equal(sysctlRefusal('fs.mqueue.msg_max', own), undefined);
  assert.equal(sysctlRefusal('vm.swappiness', own), 'sysctl "vm.swappiness" is not in a separate kernel namespace');
  assert.equal(sysctlRefusal('net.ipv4.tcp_syncookies', { ipc: '/i' }), 'sysctl "net.ipv4.tcp_syncookies" not allowed in host network namespace');
  assert.equal(sysctlRefusal('kernel.msgmax', { net: '/n' }), 'sysctl "kernel.msgmax" not allowed in host IPC namespace');
  assert.match(sysctlRefusal('net.ipv4.x/../../../y', own)!, /is not a valid name/);
  assert.match(sysctlRefusal('net.ipv4..tcp', own)!, /is not a valid name/);
  // A slash is a dot of a name: net.ipv4.conf.eno2/100.rp_filter is /proc/sys/net/ipv4/conf/eno2.100/rp_filter.
  assert.equal(sysctlRefusal('net.ipv4.conf.eno2/100.rp_filter', own), undefined);
  assert.equal(sysctlPath('net.ipv4.conf.eno2/100.rp_filter'), 'net/ipv4/conf/eno2.100/rp_filter');
  assert.equal(sysctlPath('kernel.shm_rmid_forced'), 'kernel/shm_rmid_forced');
});

test('a container joins the pod\'s namespaces (the launcher, as root, before the user switch); its PID namespace is its own, the pod\'s or the node\'s as asked', () => {
  const ns = { net: '/sb/ns/net', ipc: '/sb/ns/ipc', uts: '/sb/ns/uts', shm: '/sb/ns/shm', pidHolder: { pid: process.pid, pidStart: undefined as string | undefined }, ips: [] };
  const sandbox = { namespaces: ns, config: {} };
  const own = launchNamespaces(sandbox, { linux: { security_context: { namespace_options: { pid: 'CONTAINER' } } } } as never);
  assert.ok(own && typeof own === 'object');
  const spec = (user?: { uid: number; gid: number; groups: number[] }, n = own): LaunchSpec => ({ rootfs: '/r', argv: ['app'], env: [], cwd: '/', hostname: 'p', mounts: [], statusFd: 3, user, namespaces: n });
  const after = (argv: string[], flag: string) => argv[argv.indexOf(flag) + 1];
  const argv = launchArgv('launcher', spec());
  assert.equal(after(argv, '--join-net'), '/sb/ns/net');
  assert.equal(after(argv, '--join-ipc'), '/sb/ns/ipc');
  assert.equal(after(argv, '--join-uts'), '/sb/ns/uts');
  assert.ok(argv.includes('--unshare-pid') && !argv.includes('--join-pid'));
  assert.ok(!argv.includes('--unshare-ipc') && !argv.includes('--unshare-uts') && !argv.includes('--hostname'), 'IPC and UTS are the pod\'s');
  assert.equal(after(argv, '--shm'), '/sb/ns/shm');
  assert.deepEqual(argv.slice(argv.indexOf('--')), ['--', 'app']);

  // The pod's PID namespace: its holder is started with a start time that must still match.
  ns.pidHolder.pidStart = readStart(process.pid);
  const shared = launchNamespaces(sandbox, { linux: { security_context: { namespace_options: { pid: 'POD' } } } } as never);
  assert.ok(shared && typeof shared === 'object' && shared.pid === 'POD');
  const root = launchArgv('launcher', spec(undefined, shared));
  assert.equal(after(root, '--join-pid'), `/proc/${process.pid}/ns/pid`);
  assert.ok(!root.includes('--unshare-pid'));
  const user = launchArgv('launcher', spec({ uid: 1000, gid: 1001, groups: [5, 6] }, shared));
  assert.deepEqual([after(user, '--uid'), after(user, '--gid'), after(user, '--groups')], ['1000', '1001', '5,6']);
  // A privileged container's /sys writable (as containerd 1.7 and later), its OOM score, its v1 cgroups shown.
  assert.ok(!argv.includes('--sys-rw'));
  const priv = launchArgv('launcher', { ...spec(undefined, shared), capabilities: { privileged: true }, oomScoreAdj: -997, cgroupViews: ['/sys/fs/cgroup/memory/x/c1'] });
  assert.ok(priv.includes('--sys-rw'));
  assert.equal(after(priv, '--oom-score-adj'), '-997');
  assert.equal(after(priv, '--cgroup-view'), '/sys/fs/cgroup/memory/x/c1');

  ns.pidHolder.pidStart = 'not-its-start';
  assert.match(String(launchNamespaces(sandbox, { linux: { security_context: { namespace_options: { pid: 'POD' } } } } as never)), /PID namespace is gone/);
  const node = launchNamespaces({ namespaces: { ips: [] }, config: {} }, { linux: { security_context: { namespace_options: { pid: 'NODE' } } } } as never);
  const onNode = launchArgv('launcher', spec(undefined, node as never));
  assert.ok(!onNode.some((a) => a.startsWith('--join-') || a.startsWith('--unshare-')), 'nothing to join or make: the node\'s network, IPC, UTS and PID');
  assert.equal(launchNamespaces({ config: {} }, {} as never), undefined, 'a sandbox without namespaces (proot\'s)');
  const legacy = launchArgv('launcher', { ...spec(), namespaces: undefined });
  assert.ok(['--unshare-pid', '--unshare-ipc', '--unshare-uts'].every((f) => legacy.includes(f)) && after(legacy, '--hostname') === 'p', 'a container of a sandbox without namespaces makes its own');
  // TARGET: an ephemeral container joins the running target's PID namespace; a target gone is the start's error.
  const target = { linux: { security_context: { namespace_options: { pid: 'TARGET', target_id: 'app' } } } } as never;
  const joinedTarget = launchNamespaces(sandbox, target, (id) => (id === 'app' ? { pid: process.pid, pidStart: readStart(process.pid) } : undefined));
  assert.ok(joinedTarget && typeof joinedTarget === 'object' && joinedTarget.pid === 'POD' && joinedTarget.podPid === process.pid);
  assert.match(String(launchNamespaces(sandbox, target, () => undefined)), /target container "app" is not running/);
});

test('binds carry their propagation and read-only kind; one bidirectional bind makes the root rshared, as containerd', () => {
  const spec = (mounts: LaunchSpec['mounts']): LaunchSpec => ({ rootfs: '/r', argv: ['app'], env: [['A', 'b=c']], cwd: '/w', hostname: 'p', mounts, statusFd: 3, maskedPaths: ['/proc/kcore'], readonlyPaths: ['/proc/sys'], noNewPrivs: true, readonlyRootfs: true });
  const binds = (argv: string[]) => argv.flatMap((a, i) => (a === '--bind' ? [argv.slice(i + 1, i + 4)] : []));
  const plain = launchArgv('launcher', spec([{ hostPath: '/h', containerPath: '/c', readonly: true }]));
  assert.deepEqual(binds(plain), [['/h', '/c', 'ro,private']]);
  assert.ok(!plain.includes('--rootfs-propagation'));
  assert.ok(plain.includes('--nnp') && plain.includes('--rootfs-ro'));
  assert.equal(plain[plain.indexOf('--mask') + 1], '/proc/kcore');
  assert.equal(plain[plain.indexOf('--readonly') + 1], '/proc/sys');
  assert.equal(plain[plain.indexOf('--env') + 1], 'A=b=c');
  assert.equal(plain[plain.indexOf('--cwd') + 1], '/w');
  const both = launchArgv('launcher', spec([
    { hostPath: '/a', containerPath: '/a', readonly: false, propagation: 'slave' },
    { hostPath: '/b', containerPath: '/b', readonly: false, propagation: 'shared' },
    { hostPath: '/c', containerPath: '/c', readonly: true, recursiveReadOnly: true, propagation: 'private' },
  ]));
  assert.deepEqual(binds(both), [['/a', '/a', 'rw,slave'], ['/b', '/b', 'rw,shared'], ['/c', '/c', 'rro,private']]);
  assert.equal(both[both.indexOf('--rootfs-propagation') + 1], 'shared');
  const slave = launchArgv('launcher', spec([{ hostPath: '/a', containerPath: '/a', readonly: false, propagation: 'slave' }]));
  assert.equal(slave[slave.indexOf('--rootfs-propagation') + 1], 'slave');
  // Exec enters the running container (its mounts as they are) with the same security settings.
  const { argv: exec } = execArgv('launcher', spec([]), 4242, ['ls', '-l']);
  assert.deepEqual(exec.slice(1, 3), ['--enter', '4242']);
  assert.ok(exec.includes('--nnp') && !exec.includes('--rootfs') && !exec.includes('--bind'));
  assert.deepEqual(exec.slice(exec.indexOf('--')), ['--', 'ls', '-l']);
});

test('CRI mounts: propagation from the CRI enum; a recursive read-only mount must be read-only and private, as containerd', () => {
  const m = criMounts({ mounts: [
    { host_path: '/h1', container_path: '/c1', propagation: 'PROPAGATION_BIDIRECTIONAL' },
    { host_path: '/h2', container_path: '/c2', propagation: 'PROPAGATION_HOST_TO_CONTAINER', readonly: true },
    { host_path: '/h3', container_path: '/c3', readonly: true, recursive_read_only: true },
    { host_path: '', container_path: '/skipped' },
  ] } as never);
  assert.deepEqual(m.map((x) => [x.propagation, x.readonly, x.recursiveReadOnly ?? false]), [['shared', false, false], ['slave', true, false], ['private', true, true]]);
  assert.equal(invalidMount(m[2]!), undefined);
  assert.match(String(invalidMount({ ...m[2]!, readonly: false })), /must be read-only/);
  assert.match(String(invalidMount({ ...m[2]!, propagation: 'slave' })), /must be private/);
});

function readStart(pid: number): string {
  return procStart(pid)!;
}
