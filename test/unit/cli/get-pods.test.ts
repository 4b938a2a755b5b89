// `nodelet get pods`: kubectl's columns, and NEXT from the agent's /debug summary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import type { DebugPod } from '../../../src/agent/debug-view.js';
import { formatTable, nextText, podRow } from '../../../src/cli/get-pods.js';

const now = Date.UTC(2026, 0, 1, 12);
const pod: V1Pod = {
  metadata: { name: 'web', uid: 'u1', creationTimestamp: new Date(now - 90_000) },
  spec: { containers: [{ name: 'c' }] },
  status: { phase: 'Running', containerStatuses: [{ name: 'c', ready: false, restartCount: 3, image: '', imageID: '', state: { waiting: { reason: 'CrashLoopBackOff' } } }] },
};
const debug = (over: Partial<DebugPod>): DebugPod => ({ namespace: 'default', name: 'web', uid: 'u1', phase: 'Running', containers: [{ name: 'c', init: false, state: 'CrashLoopBackOff', ready: false, restartCount: 3 }], pending: [], timeline: [], worker: { phase: 'syncing', busy: false }, ...over });

test('a crash loop: NEXT counts down to the restart', () => {
  const d = debug({ pending: [{ verb: 'wait', kind: 'regular', target: 'c', reason: 'CrashLoopBackOff', text: '', until: now + 37_000 }], worker: { phase: 'syncing', busy: false, next: { trigger: 'back-off', at: now + 37_050 } } });
  assert.deepEqual(podRow(pod, now, d), ['web', '0/1', 'CrashLoopBackOff', '3', 'restart in 37s', '90s']);
  assert.equal(nextText(d, now + 30_000), 'restart in 7s');
});

test('NEXT for a pod at rest, a sync running, a retry, a pod of several containers, and no summary', () => {
  assert.equal(nextText(debug({ worker: { phase: 'syncing', busy: false, next: { trigger: 'resync', at: now + 40_000 } } }), now), '-');
  assert.equal(nextText(debug({ worker: { phase: 'syncing', busy: true } }), now), 'syncing');
  assert.equal(nextText(debug({ worker: { phase: 'terminating', busy: true } }), now), 'terminating');
  assert.equal(nextText(debug({ worker: { phase: 'syncing', busy: false, next: { trigger: 'retry', at: now + 8_000 } } }), now), 'retry in 8s');
  const two = debug({
    containers: [{ name: 'a', init: false, state: 'Running', ready: true, restartCount: 0 }, { name: 'b', init: false, state: 'CrashLoopBackOff', ready: false, restartCount: 5 }],
    pending: [{ verb: 'wait', kind: 'regular', target: 'b', reason: 'CrashLoopBackOff', text: '', until: now + 160_000 }],
  });
  assert.equal(nextText(two, now), 'restart b in 2m40s');
  assert.equal(nextText(undefined, now), '');
});

test('the table has a NEXT column, aligned', () => {
  const text = formatTable([podRow(pod, now, debug({}))]);
  const [head, row] = text.split('\n');
  assert.match(head!, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+NEXT\s+AGE$/);
  assert.equal(head!.indexOf('NEXT'), row!.indexOf('-'));
});
