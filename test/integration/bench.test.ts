// The benchmark harness cannot silently rot: a reduced run (5 pods) must produce the JSON of
// `make bench` with every figure a positive number.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../support/cluster.js';

test('a reduced make bench writes the result JSON with every figure a positive number', () => {
  const out = join(mkdtempSync(join(tmpdir(), 'nodelet-bench-')), 'result.json');
  const run = spawnSync(process.execPath, [join(projectRoot, 'dist/bench/bench.js')], { env: { ...process.env, BENCH_REDUCED: '1', BENCH_OUT: out }, encoding: 'utf8', timeout: 300_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /start, one at a time\s+p50 [\d.]+ ms/);
  const r = JSON.parse(readFileSync(out, 'utf8'));
  assert.ok(r.machine.cpus > 0);
  const n = r.agents.nodelet;
  const positive = (v: unknown, what: string) => assert.ok(typeof v === 'number' && v > 0 && Number.isFinite(v), `${what} = ${v}`);
  for (const key of ['start_single', 'start_burst100', 'cri_floor', 'cri_floor_burst100']) {
    for (const p of ['p50', 'p90', 'p99', 'max']) positive(n[key][p], `${key}.${p}`);
    assert.ok(n[key].p50 <= n[key].p99 && n[key].p99 <= n[key].max, `${key} percentiles in order`);
  }
  for (const key of ['rss_mb_max', 'rss_mb_rest110', 'cpu_s_burst', 'cpu_s_per_min_rest110', 'api_requests_per_pod', 'delete_burst100_s']) positive(n[key], key);
  assert.equal(typeof n.overhead_ms_p50, 'number');
  for (const [size, d] of Object.entries(n.density as Record<string, { all_ready_s: number; ok: boolean }>)) {
    positive(d.all_ready_s, `density ${size}`);
    assert.equal(d.ok, true, `density ${size}: all Ready`);
  }
  positive(r.ratios.burst100_p99_over_floor, 'ratio');
  assert.ok(r.agents.kubelet === null ? typeof r.kubelet_missing_reason === 'string' : typeof r.agents.kubelet === 'object');
});
