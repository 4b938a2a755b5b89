// The cgroupfs driver against directories laid out as cgroupfs is (files the kernel would have made
// written by the test): what it writes where, on v1 and v2.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { V1CgroupManager, V2CgroupManager, sharesToWeight } from '../../../src/cm/cgroup-manager.js';
import { ContainerManager, ContainerManagerConfigError, reservedConfig } from '../../../src/cm/container-manager.js';

const read = (f: string) => readFileSync(f, 'utf8').trim();

function v1Layout(): { root: string; hierarchies: string[] } {
  const root = mkdtempSync(join(tmpdir(), 'cg-v1-'));
  const hierarchies = ['cpu', 'memory', 'pids', 'cpuset'].map((h) => join(root, h));
  for (const h of hierarchies) mkdirSync(h);
  writeFileSync(join(root, 'cpuset', 'cpuset.cpus'), '0-1');
  writeFileSync(join(root, 'cpuset', 'cpuset.mems'), '0');
  return { root, hierarchies };
}

/** The files the kernel makes in a new cgroup, made as the manager makes each directory. */
function kernelFiles(root: string): (dir: string) => void {
  return (dir) => {
    const h = dir.slice(root.length + 1).split('/')[0];
    const files: Record<string, string[]> = { cpu: ['cpu.shares', 'cpu.cfs_period_us', 'cpu.cfs_quota_us'], memory: ['memory.limit_in_bytes'], pids: ['pids.max'], cpuset: ['cpuset.cpus', 'cpuset.mems'] };
    for (const f of files[h!] ?? []) if (!existsSync(join(dir, f))) writeFileSync(join(dir, f), '');
  };
}

test('v1: a cgroup in every hierarchy, its limits in the controller\'s, cpuset given its parent\'s', () => {
  const { root, hierarchies } = v1Layout();
  try {
    const m = new V1CgroupManager(hierarchies);
    // Pre-make the kernel's files where the manager will mkdir (the test stands in for cgroupfs).
    const made = kernelFiles(root);
    for (const h of hierarchies) for (const d of ['a', 'a/kubepods']) {
      mkdirSync(join(h, d), { recursive: true });
      made(join(h, d));
    }
    m.create(['a', 'kubepods'], { cpuShares: 1843, memory: 1000, pidsLimit: 4096, cpuQuota: 50000, cpuPeriod: 100000 });
    assert.equal(read(join(root, 'cpu/a/kubepods/cpu.shares')), '1843');
    assert.equal(read(join(root, 'cpu/a/kubepods/cpu.cfs_quota_us')), '50000');
    assert.equal(read(join(root, 'memory/a/kubepods/memory.limit_in_bytes')), '1000');
    assert.equal(read(join(root, 'pids/a/kubepods/pids.max')), '4096');
    assert.ok(m.exists(['a', 'kubepods']));
    // Unbounded values in the kernel's words.
    m.update(['a', 'kubepods'], { cpuQuota: -1, memory: 0, pidsLimit: -1 });
    assert.equal(read(join(root, 'cpu/a/kubepods/cpu.cfs_quota_us')), '-1');
    assert.equal(read(join(root, 'memory/a/kubepods/memory.limit_in_bytes')), '-1');
    assert.equal(read(join(root, 'pids/a/kubepods/pids.max')), 'max');
    // A new level made by the manager: cpuset copied from the parent (its files stand in for the kernel's).
    mkdirSync(join(root, 'cpuset/a/kubepods/podx'));
    writeFileSync(join(root, 'cpuset/a/kubepods/podx/cpuset.cpus'), '');
    writeFileSync(join(root, 'cpuset/a/kubepods/podx/cpuset.mems'), '');
    writeFileSync(join(root, 'cpuset/a/kubepods/cpuset.cpus'), '0-1');
    writeFileSync(join(root, 'cpuset/a/kubepods/cpuset.mems'), '0');
    rmSync(join(root, 'cpuset/a/kubepods/podx'), { recursive: true });
    m.create(['a', 'kubepods', 'podx'], {});
    assert.ok(hierarchies.every((h) => existsSync(join(h, 'a/kubepods/podx'))));
    assert.deepEqual(m.children(['a', 'kubepods']), ['podx']);
    writeFileSync(join(root, 'memory/a/kubepods/podx/cgroup.procs'), '12\n13\n');
    assert.deepEqual(m.pids(['a', 'kubepods', 'podx']).sort(), [12, 13]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('v2: controllers enabled down the path, limits in the unified files', () => {
  const root = mkdtempSync(join(tmpdir(), 'cg-v2-'));
  try {
    writeFileSync(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids');
    writeFileSync(join(root, 'cgroup.subtree_control'), '');
    // A directory made by the manager gets the kernel's files when the test makes them first.
    for (const d of ['kubepods', 'kubepods/burstable']) {
      mkdirSync(join(root, d));
      writeFileSync(join(root, d, 'cgroup.controllers'), 'cpuset cpu io memory pids');
      writeFileSync(join(root, d, 'cgroup.subtree_control'), '');
      for (const f of ['cpu.weight', 'cpu.max', 'memory.max', 'pids.max']) writeFileSync(join(root, d, f), '');
    }
    const m = new V2CgroupManager(root);
    m.create(['kubepods', 'burstable'], { cpuShares: 1024, memory: 2048, cpuQuota: 20000, cpuPeriod: 100000, pidsLimit: 100 });
    assert.equal(read(join(root, 'cgroup.subtree_control')), '+cpuset +cpu +io +memory +pids');
    assert.equal(read(join(root, 'kubepods/cgroup.subtree_control')), '+cpuset +cpu +io +memory +pids');
    assert.equal(read(join(root, 'kubepods/burstable/cgroup.subtree_control')), '+cpuset +cpu +io +memory +pids');
    assert.equal(read(join(root, 'kubepods/burstable/cpu.weight')), String(sharesToWeight(1024)));
    assert.equal(read(join(root, 'kubepods/burstable/cpu.max')), '20000 100000');
    assert.equal(read(join(root, 'kubepods/burstable/memory.max')), '2048');
    assert.equal(read(join(root, 'kubepods/burstable/pids.max')), '100');
    m.update(['kubepods', 'burstable'], { cpuQuota: -1, cpuPeriod: 100000, memory: 0 });
    assert.equal(read(join(root, 'kubepods/burstable/cpu.max')), 'max 100000');
    assert.equal(read(join(root, 'kubepods/burstable/memory.max')), 'max');
    assert.equal(sharesToWeight(102), 4);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the container manager: kubepods under the root, pod cgroups by class, orphans found and removed', () => {
  const root = mkdtempSync(join(tmpdir(), 'cg-cm-'));
  try {
    writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids');
    writeFileSync(join(root, 'cgroup.subtree_control'), '');
    const cfg = { cgroupsPerQOS: true, cgroupRoot: '/nodes/n1', enforceNodeAllocatable: ['pods'], podPidsLimit: 1024, cpuCFSQuota: true, capacity: { milliCPU: 2000, memory: 4096, pids: 1000 }, allocatable: { milliCPU: 1800, memory: 3072, pids: 1000 }, systemReservedCgroup: '', kubeReservedCgroup: '', systemReserved: {}, kubeReserved: {} };
    const killed: number[] = [];
    const cm = new ContainerManager(new V2CgroupManager(root), cfg, (pid) => killed.push(pid));
    assert.throws(() => cm.start(), (err: Error) => err instanceof ContainerManagerConfigError && err.message === 'invalid configuration: cgroup-root "/nodes/n1" doesn\'t exist');
    mkdirSync(join(root, 'nodes/n1'), { recursive: true });
    cm.start();
    assert.ok(existsSync(join(root, 'nodes/n1/kubepods/burstable')) && existsSync(join(root, 'nodes/n1/kubepods/besteffort')));
    const burstable = { metadata: { uid: 'b1' }, spec: { containers: [{ name: 'c', resources: { requests: { cpu: '100m' } } }] } } as V1Pod;
    const guaranteed = { metadata: { uid: 'g1' }, spec: { containers: [{ name: 'c', resources: { limits: { cpu: '100m', memory: '64Mi' } } }] } } as V1Pod;
    assert.equal(cm.podCgroupParent(burstable), '/nodes/n1/kubepods/burstable/podb1');
    cm.ensurePodCgroup(burstable, []);
    cm.ensurePodCgroup(guaranteed, [burstable]);
    assert.ok(cm.podCgroupExists(burstable) && cm.podCgroupExists(guaranteed));
    assert.deepEqual([...cm.podCgroups().keys()].sort(), ['b1', 'g1']);
    // A pod cgroup's leftovers are killed before it goes.
    writeFileSync(join(root, 'nodes/n1/kubepods/podg1/cgroup.procs'), '4242\n');
    const name = cm.podCgroups().get('g1')!;
    assert.throws(() => cm.destroyPodCgroup(name)); // a plain directory holding a file: not removable, as a busy cgroup
    assert.deepEqual(killed.slice(0, 1), [4242]);
    rmSync(join(root, 'nodes/n1/kubepods/podg1/cgroup.procs'));
    cm.destroyPodCgroup(name);
    assert.deepEqual([...cm.podCgroups().keys()], ['b1']);
    // Without cgroupsPerQOS: no parent, nothing made.
    const off = new ContainerManager(new V2CgroupManager(root), { ...cfg, cgroupsPerQOS: false }, () => undefined);
    assert.equal(off.podCgroupParent(burstable), undefined);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('reserved cgroups: held to systemReserved (all) or kubeReserved (cpu only, compressible) as enforced; a missing one refused in the kubelet\'s words', () => {
  const root = mkdtempSync(join(tmpdir(), 'cg-reserved-'));
  try {
    writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids');
    writeFileSync(join(root, 'cgroup.subtree_control'), '');
    const cfg = {
      cgroupsPerQOS: true, cgroupRoot: '/', enforceNodeAllocatable: ['pods', 'system-reserved', 'kube-reserved-compressible'], podPidsLimit: -1, cpuCFSQuota: true,
      capacity: { milliCPU: 2000, memory: 4096, pids: 1000 }, allocatable: { milliCPU: 1800, memory: 3072, pids: 1000 },
      systemReservedCgroup: '/system', kubeReservedCgroup: '/runtime', systemReserved: { milliCPU: 100, memory: 32 * 2 ** 20 }, kubeReserved: { milliCPU: 50, memory: 16 * 2 ** 20 },
    };
    const m = new V2CgroupManager(root);
    const cm = new ContainerManager(m, cfg, () => undefined);
    assert.throws(() => cm.enforceReserved(), (err: Error) => err instanceof ContainerManagerConfigError && /^Failed to enforce System Reserved Cgroup Limits on "\/system": could not read controllers for cgroup \["system"\]: /.test(err.message));
    for (const d of ['system', 'runtime']) {
      mkdirSync(join(root, d));
      writeFileSync(join(root, d, 'cgroup.controllers'), d === 'system' ? 'cpu memory pids' : 'cpu');
      for (const f of ['cpu.weight', 'memory.max', 'pids.max']) writeFileSync(join(root, d, f), 'max');
    }
    assert.throws(() => cm.enforceReserved(), (err: Error) => err.message === 'Failed to enforce Kube Reserved Compressible Cgroup Limits on "/runtime": cgroup ["runtime"] has some missing controllers: memory, pids');
    writeFileSync(join(root, 'runtime', 'cgroup.controllers'), 'cpu memory pids');
    assert.deepEqual(cm.enforceReserved(), [{ cgroup: '/system', what: 'system reserved' }, { cgroup: '/runtime', what: 'kube reserved' }]);
    assert.equal(read(join(root, 'system/memory.max')), String(32 * 2 ** 20));
    assert.equal(read(join(root, 'system/cpu.weight')), '4', '100m: 102 shares');
    assert.equal(read(join(root, 'runtime/cpu.weight')), '2', '50m: 51 shares');
    assert.equal(read(join(root, 'runtime/memory.max')), 'max', 'compressible only: its memory is left alone');
    assert.deepEqual(reservedConfig({ milliCPU: 1000, memory: 5 }, false), { cpuShares: 1024, memory: 5 });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
