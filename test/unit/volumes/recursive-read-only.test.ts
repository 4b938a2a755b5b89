// Recursive read-only mounts: resolved as the kubelet resolves them on a runtime without the
// feature (IfPossible is plain read-only, Enabled is refused), and reported in the container status.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1VolumeMount } from '@kubernetes/client-node';
import { MountConfigError, resolveRecursiveReadOnly, volumeMountStatuses } from '../../../src/volumes/container-mounts.js';

test('recursiveReadOnly: Disabled/unset off; IfPossible only where the runtime can; Enabled refused where it cannot, in the kubelet\'s words', () => {
  const m = (extra: Partial<V1VolumeMount>): V1VolumeMount => ({ name: 'mnt', mountPath: '/mnt', readOnly: true, ...extra });
  assert.equal(resolveRecursiveReadOnly(m({}), false), false);
  assert.equal(resolveRecursiveReadOnly(m({ recursiveReadOnly: 'IfPossible' }), false), false);
  assert.equal(resolveRecursiveReadOnly(m({ recursiveReadOnly: 'IfPossible' }), true), true);
  assert.throws(() => resolveRecursiveReadOnly(m({ recursiveReadOnly: 'Enabled' }), false), (e: Error) => e instanceof MountConfigError && e.message === 'volume "mnt" requested recursive read-only mode, but it is not supported by the runtime');
  assert.throws(() => resolveRecursiveReadOnly(m({ recursiveReadOnly: 'Enabled', readOnly: false }), true), /requested recursive read-only mode, but it is not read-only/);
  assert.throws(() => resolveRecursiveReadOnly(m({ recursiveReadOnly: 'Enabled', mountPropagation: 'HostToContainer' }), true), /not compatible with propagation "HostToContainer"/);
});

test('volumeMounts in the container status: every mount of the spec, recursiveReadOnly on the read-only ones', () => {
  const st = volumeMountStatuses({ name: 'c', volumeMounts: [
    { name: 'mnt', mountPath: '/mnt-rro-if-possible', readOnly: true, recursiveReadOnly: 'IfPossible' },
    { name: 'mnt', mountPath: '/mnt-ro', readOnly: true },
    { name: 'mnt', mountPath: '/mnt-rw' },
  ] }, false);
  assert.deepEqual(st, [
    { name: 'mnt', mountPath: '/mnt-rro-if-possible', readOnly: true, recursiveReadOnly: 'Disabled' },
    { name: 'mnt', mountPath: '/mnt-ro', readOnly: true, recursiveReadOnly: 'Disabled' },
    { name: 'mnt', mountPath: '/mnt-rw', readOnly: undefined },
  ]);
  assert.equal(volumeMountStatuses({ name: 'c' }, false), undefined);
});
