import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SyncHistory, type SyncRecord } from '../../../src/debug/sync-history.js';

const rec = (at: number, over: Partial<SyncRecord> = {}): SyncRecord => ({ at, trigger: 'resync', durationMs: 1, plan: [], results: [], ...over });
const acted = (at: number) => rec(at, { trigger: 'pleg', plan: [{ verb: 'start', kind: 'regular', target: 'c', reason: 'Exited', text: 'start container c' }], results: [{ action: 'StartContainer', target: 'c', ok: true }] });

test('the last N syncs are kept per pod, oldest first', () => {
  const h = new SyncHistory(3);
  for (let i = 0; i < 5; i++) h.record('a', acted(i));
  assert.deepEqual(h.get('a').map((r) => r.at), [2, 3, 4]);
  assert.deepEqual(h.get('b'), []);
});

test('syncs with nothing to do fold into one entry, so a crash loop stays in view', () => {
  const h = new SyncHistory(3);
  h.record('a', acted(1));
  for (let i = 2; i < 50; i++) h.record('a', rec(i));
  h.record('a', acted(60));
  const list = h.get('a');
  assert.deepEqual(list.map((r) => r.at), [1, 2, 60]);
  assert.equal(list[1]!.repeats, 47);
  assert.equal(list[1]!.lastAt, 49);
  // A failed sync is not idle: it is its own entry.
  h.record('a', rec(61, { error: 'boom' }));
  h.record('a', rec(62, { error: 'boom' }));
  assert.equal(h.get('a').length, 3);
});

test('long messages are cut, forget drops the pod, and a length of 0 keeps nothing', () => {
  const h = new SyncHistory(2);
  h.record('a', rec(1, { error: 'x'.repeat(5000) }));
  assert.ok(h.get('a')[0]!.error!.length < 400);
  h.forget('a');
  assert.deepEqual(h.size(), { pods: 0, records: 0 });
  const off = new SyncHistory(0);
  off.record('a', acted(1));
  assert.deepEqual(off.size(), { pods: 0, records: 0 });
});
