// /metrics: the internal sizes are read when scraped, and the API request counter is client-go's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics, type InternalSizes } from '../../../src/observability/metrics.js';

const sizes = (n: number): InternalSizes => ({
  workingPods: { sync: n, terminating: 1, terminated: 0 },
  podWorkQueue: n,
  backoffEntries: { crash_loop: 2, image_pull: 0 },
  clockTimers: 7 + n,
  statusManager: { pods: n, queue: 0 },
  probeWorkers: 3,
  plegPods: n,
  eventRecorder: { queue: 0, caches: { known: 4 } },
  volumeManagerPods: n,
  maps: { last_sync: n },
});

test('size gauges are read at scrape time; nothing before the agent sets its source', async () => {
  const m = new Metrics();
  const before = await m.registry.metrics();
  assert.doesNotMatch(before, /^kubelet_working_pods\{/m, 'no values without a source');
  let n = 5;
  m.sizes = () => sizes(n);
  let text = await m.registry.metrics();
  assert.match(text, /^kubelet_working_pods\{lifecycle="sync"\} 5$/m);
  assert.match(text, /^kubelet_working_pods\{lifecycle="terminating"\} 1$/m);
  assert.match(text, /^nodelet_backoff_entries\{backoff="crash_loop"\} 2$/m);
  assert.match(text, /^nodelet_clock_active_timers 12$/m);
  assert.match(text, /^nodelet_event_recorder_cache_entries\{cache="known"\} 4$/m);
  assert.match(text, /^nodelet_map_entries\{map="last_sync"\} 5$/m);
  n = 9;
  text = await m.registry.metrics();
  assert.match(text, /^nodelet_pleg_pods 9$/m, 'the newest value at each scrape');
  m.restClientRequests.inc({ code: '200', method: 'GET', host: '127.0.0.1:6443' });
  assert.match(await m.registry.metrics(), /^rest_client_requests_total\{code="200",method="GET",host="127.0.0.1:6443"\} 1$/m);
});
