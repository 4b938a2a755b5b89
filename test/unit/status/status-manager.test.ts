// The status manager sends a status only when it differs from the last one sent; resend() sends
// the newest again, for an object that starts over (a static pod's recreated mirror pod).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { StatusManager } from '../../../src/status/status-manager.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeClock } from '../../../src/util/clock.js';

test('a status unchanged is not sent twice; resend() sends the newest again', async () => {
  const sent: V1PodStatus[] = [];
  const api = {
    listPods: async () => ({ items: [] }),
    patchPodStatus: async (_ns: string, _name: string, _uid: string, st: V1PodStatus) => {
      sent.push(st);
      return {} as V1Pod;
    },
    deletePod: async () => undefined,
  };
  const m = new StatusManager(api, new FakeClock(), silentLogger());
  const pod: V1Pod = { metadata: { uid: 'u1', name: 'static-x', namespace: 'kube-system' } };
  m.setPodStatus(pod, { phase: 'Running' });
  await m.flush();
  m.setPodStatus(pod, { phase: 'Running' });
  await m.flush();
  assert.equal(sent.length, 1, 'the same status once');
  m.resend('u1');
  await m.flush();
  assert.deepEqual(sent.map((s) => s.phase), ['Running', 'Running']);
  m.resend('unknown-uid');
  await m.flush();
  assert.equal(sent.length, 2, 'nothing to resend for a pod never seen');
});
