// The start path from two scrapes of nodelet's /metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseScrape, startPath } from '../../../bench/start-path.js';

const scrape = (steps: [number, number, number], count: number, cri: Record<string, number>) =>
  parseScrape(
    [
      '# HELP nodelet_pod_start_steps_seconds x',
      `nodelet_pod_start_steps_seconds_bucket{le="0.1",step="queue"} ${count}`,
      `nodelet_pod_start_steps_seconds_sum{step="queue"} ${steps[0]}`,
      `nodelet_pod_start_steps_seconds_count{step="queue"} ${count}`,
      `nodelet_pod_start_steps_seconds_sum{step="sync"} ${steps[1]}`,
      `nodelet_pod_start_steps_seconds_sum{step="status"} ${steps[2]}`,
      `nodelet_pod_start_steps_seconds_count{step="status"} ${count}`,
      ...Object.entries(cri).map(([op, s]) => `kubelet_runtime_operations_duration_seconds_sum{operation_type="${op}"} ${s}`),
      'kubelet_pod_start_duration_seconds_sum 99',
    ].join('\n'),
  );

test('the means per start of each step and CRI call, and what the agent did not spend', () => {
  const before = scrape([0.1, 1, 0.2], 1, { run_pod_sandbox: 0.5, create_container: 0.2, start_container: 0.1, stop_container: 3 });
  // 4 starts later: 8 ms queued, 150 ms syncing, 30 ms to the status, per start.
  const after = scrape([0.132, 1.6, 0.32], 5, { run_pod_sandbox: 0.82, image_status: 0.004, create_container: 0.28, start_container: 0.26, stop_container: 9 });
  const path = startPath(before, after, 4, 230);
  assert.deepEqual(path, {
    queue_ms: 8,
    sync_ms: 150,
    status_ms: 30,
    cri_ms: { run_pod_sandbox: 80, image_status: 1, pull_image: 0, create_container: 20, start_container: 40 },
    sync_other_ms: 9,
    api_and_watch_ms: 42,
    starts: 4,
  });
});

test('no path when fewer starts were traced than made (the agent restarted, a metric missing)', () => {
  const before = scrape([0, 0, 0], 0, {});
  assert.equal(startPath(before, scrape([0.1, 1, 0.1], 3, {}), 4, 200), undefined);
  assert.equal(startPath(before, parseScrape(''), 4, 200), undefined);
});
