// A pod's first start by step: queue, sync, status; the kubelet's pod start duration beside them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StartTrace } from '../../../src/agent/start-trace.js';
import { Metrics } from '../../../src/observability/metrics.js';
import { FakeClock } from '../../../src/util/clock.js';

const ready = { conditions: [{ type: 'Ready', status: 'True' }] };
const notReady = { conditions: [{ type: 'Ready', status: 'False' }] };

function sum(text: string, name: string, step?: string): number {
  const m = new RegExp(`^${name}_sum${step ? `\\{step="${step}"\\}` : ''} (\\S+)$`, 'm').exec(text);
  return Number(m?.[1] ?? NaN);
}

test('the steps of a first start: 20 ms queued, 300 ms syncing (two syncs), 40 ms until the Ready status was accepted', async () => {
  const clock = new FakeClock();
  const metrics = new Metrics();
  const trace = new StartTrace(clock, metrics);
  trace.seen('a');
  clock.step(20);
  trace.syncBegan('a');
  clock.step(100);
  trace.synced('a', false); // a container still starting
  trace.syncBegan('a'); // a later sync does not move the start of the first
  clock.step(200);
  trace.synced('a', true);
  clock.step(10);
  trace.statusSent('a', notReady); // not Ready yet: the trace goes on
  clock.step(30);
  trace.statusSent('a', ready);
  assert.equal(trace.size, 0, 'the trace of a started pod is dropped');
  const text = await metrics.registry.metrics();
  assert.equal(sum(text, 'nodelet_pod_start_steps_seconds', 'queue'), 0.02);
  assert.equal(sum(text, 'nodelet_pod_start_steps_seconds', 'sync'), 0.3);
  assert.equal(sum(text, 'nodelet_pod_start_steps_seconds', 'status'), 0.04);
  assert.equal(sum(text, 'kubelet_pod_start_duration_seconds'), 0.32);
});

test('a pod seen again, synced again or Ready again after its start is not traced twice; a forgotten pod leaves nothing', async () => {
  const clock = new FakeClock();
  const metrics = new Metrics();
  const trace = new StartTrace(clock, metrics);
  trace.seen('a');
  trace.seen('b');
  clock.step(50);
  trace.seen('a');
  trace.statusSent('a', ready); // Ready before the agent saw its containers run: not the start's end
  trace.syncBegan('a');
  trace.synced('a', true);
  trace.statusSent('a', ready);
  trace.synced('a', true);
  trace.statusSent('a', ready);
  trace.forget('b');
  assert.equal(trace.size, 0);
  const text = await metrics.registry.metrics();
  assert.match(text, /^nodelet_pod_start_steps_seconds_count\{step="sync"\} 1$/m);
  assert.match(text, /^nodelet_pod_start_steps_seconds_count\{step="status"\} 1$/m);
  assert.equal(sum(text, 'nodelet_pod_start_steps_seconds', 'queue'), 0.05);
});
