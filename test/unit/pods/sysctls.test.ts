// Sysctl and OS admission as the kubelet's: safe sysctls pass, unsafe ones only when allowed,
// network sysctls not with the host's network; a pod for another OS is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { normalizeSysctl, SysctlAllowlist } from '../../../src/pods/sysctls.js';
import { admitPod } from '../../../src/pods/admission.js';

const pod = (sysctls: Array<[string, string]>, extra: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
  spec: { containers: [{ name: 'c' }], securityContext: { sysctls: sysctls.map(([name, value]) => ({ name, value })) }, ...extra },
});

test('safe sysctls are admitted; unsafe ones are SysctlForbidden unless allowed', () => {
  const w = new SysctlAllowlist([], '6.1.0');
  assert.deepEqual(w.admit(pod([['kernel.shm_rmid_forced', '1'], ['net.ipv4.tcp_keepalive_time', '60']])), { admit: true });
  assert.deepEqual(w.admit(pod([['kernel.msgmax', '10000']])), { admit: false, reason: 'SysctlForbidden', message: 'forbidden sysctl: "kernel.msgmax" not allowlisted' });
  const allowed = new SysctlAllowlist(['kernel.msg*', 'net.core.somaxconn'], '6.1.0');
  assert.deepEqual(allowed.admit(pod([['kernel.msgmax', '10000'], ['net.core.somaxconn', '1024']])), { admit: true });
  assert.deepEqual(w.admit(pod([['net.ipv4.ip_local_port_range', '1024 65535']], { hostNetwork: true })), {
    admit: false,
    reason: 'SysctlForbidden',
    message: 'forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled',
  });
  assert.equal(normalizeSysctl('kernel/shm_rmid_forced'), 'kernel.shm_rmid_forced');
  assert.deepEqual(w.admit(pod([['kernel/shm_rmid_forced', '1']])), { admit: true }, 'a slash-separated name is the same sysctl');
});

test('a sysctl namespaced only on newer kernels is safe only there; an allowed pattern must be namespaced', () => {
  assert.equal(new SysctlAllowlist([], '4.4.0').admit(pod([['net.ipv4.tcp_keepalive_time', '60']])).admit, false);
  assert.throws(() => new SysctlAllowlist(['vm.swappiness']), /the sysctls "vm.swappiness" are not known to be namespaced/);
});

test('a pod for another OS: PodOSNotSupported, and a kubernetes.io/os label that does not match', () => {
  const node = { metadata: { labels: { 'kubernetes.io/os': 'linux' } }, status: { allocatable: { pods: '110' } } };
  assert.deepEqual(admitPod({ spec: { os: { name: 'windows' }, containers: [] } }, node, []), { admit: false, reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" });
  assert.equal((admitPod({ metadata: { labels: { 'kubernetes.io/os': 'windows' } }, spec: { containers: [] } }, node, []) as { reason: string }).reason, 'PodOSSelectorNodeLabelDoesNotMatch');
  assert.deepEqual(admitPod({ spec: { os: { name: 'linux' }, containers: [] } }, node, []), { admit: true });
});
