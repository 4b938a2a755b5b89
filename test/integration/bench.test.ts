// The benchmark harness cannot silently rot: a reduced run (5 pods) of `make bench`, with all three
// columns (nodelet on containerd, the real kubelet on the same containerd, nodelet with its process
// runtime), must produce the JSON of `make bench` with every figure a positive number.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../support/cluster.js';

const AGENTS = ['nodelet', 'kubelet', 'nodelet_process'];

test('a reduced make bench writes the result JSON with every figure of every column a positive number', () => {
  const out = join(mkdtempSync(join(tmpdir(), 'nodelet-bench-')), 'result.json');
  // Up to 15 min only when the kubelet binary is not cached yet (the bench builds it once).
  const run = spawnSync(process.execPath, [join(projectRoot, 'dist/bench/bench.js')], { env: { ...process.env, BENCH_REDUCED: '1', BENCH_OUT: out, BENCH_AGENTS: AGENTS.join(',') }, encoding: 'utf8', timeout: 900_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /start, one at a time\s+p50 [\d.]+ ms/);
  const r = JSON.parse(readFileSync(out, 'utf8'));
  assert.ok(r.machine.cpus > 0);
  assert.match(r.machine.kubelet, /^v\d+\.\d+\.\d+$/);
  assert.equal(r.kubelet_missing_reason, null);
  const positive = (v: unknown, what: string) => assert.ok(typeof v === 'number' && v > 0 && Number.isFinite(v), `${what} = ${v}`);
  const keys = Object.keys(r.agents.nodelet).sort();
  for (const agent of AGENTS) {
    const n = r.agents[agent];
    assert.ok(n && typeof n === 'object', `agents.${agent} measured`);
    assert.deepEqual(Object.keys(n).sort(), keys, `agents.${agent} has the same figures as agents.nodelet`);
    for (const key of ['start_single', 'start_burst100', 'cri_floor', 'cri_floor_burst100']) {
      for (const p of ['p50', 'p90', 'p99', 'max']) positive(n[key][p], `${agent}.${key}.${p}`);
      assert.ok(n[key].p50 <= n[key].p99 && n[key].p99 <= n[key].max, `${agent}.${key} percentiles in order`);
    }
    for (const key of ['rss_mb_max', 'rss_mb_rest110', 'cpu_s_burst', 'cpu_s_per_min_rest110', 'api_requests_per_pod', 'delete_burst100_s']) positive(n[key], `${agent}.${key}`);
    assert.equal(typeof n.overhead_ms_p50, 'number');
    assert.ok(Object.keys(n.density).length > 0, `${agent}.density`);
    for (const [size, d] of Object.entries(n.density as Record<string, { pods: number; all_ready_s: number; ok: boolean }>)) {
      positive(d.pods, `${agent} density ${size} pods`);
      positive(d.all_ready_s, `${agent} density ${size}`);
      assert.equal(d.ok, true, `${agent} density ${size}: all Ready`);
    }
  }
  for (const [name, v] of Object.entries(r.ratios)) positive(v, `ratios.${name}`);
});
