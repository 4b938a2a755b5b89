import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { admitAppArmor } from '../../../src/pods/apparmor.js';

const pod = (spec: Partial<V1Pod['spec']> = {}, annotations?: Record<string, string>, phase: string | null = 'Pending'): V1Pod => ({
  metadata: { name: 'p', annotations },
  spec: { containers: [{ name: 'c' }], ...spec },
  status: phase ? { phase } : undefined,
});

test('AppArmor admission: a pod asking for a profile on a host without AppArmor is refused in the kubelet\'s words', () => {
  const refused = { admit: false, reason: 'AppArmor', message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host' };
  assert.deepEqual(admitAppArmor(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }), false), refused);
  assert.deepEqual(admitAppArmor(pod({ containers: [{ name: 'c', securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'x' } } }] }), false), refused);
  assert.deepEqual(admitAppArmor(pod({}, { 'container.apparmor.security.beta.kubernetes.io/c': 'runtime/default' }), false), refused);
  // Unconfined, or nothing asked: admitted anywhere; a running pod is not checked again.
  assert.deepEqual(admitAppArmor(pod({ securityContext: { appArmorProfile: { type: 'Unconfined' } } }), false), { admit: true });
  assert.deepEqual(admitAppArmor(pod(), false), { admit: true });
  assert.deepEqual(admitAppArmor(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }, undefined, 'Running'), false), { admit: true });
  assert.deepEqual(admitAppArmor(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }, undefined, null), false), { admit: true }, 'no status (a static pod): not checked, as the kubelet');
  // The container's field first, then its annotation, then the pod's; an empty Localhost name in an annotation is refused too.
  const byAnnotation = admitAppArmor(pod({}, { 'container.apparmor.security.beta.kubernetes.io/c': 'localhost/' }), true);
  assert.equal(byAnnotation.admit, false);
  // With AppArmor: admitted, but an empty Localhost name is not.
  assert.deepEqual(admitAppArmor(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }), true), { admit: true });
  const empty = admitAppArmor(pod({ securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: ' ' } } }), true);
  assert.equal(empty.admit, false);
});
