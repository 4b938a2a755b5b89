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

test('a reduced make bench writes the result JSON with every figure of every column a positive number, and its picture', () => {
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
  const measured = (v: unknown, what: string) => assert.ok(typeof v === 'number' && v >= 0 && Number.isFinite(v), `${what} = ${v}`);
  const keys = Object.keys(r.agents.nodelet).sort();
  for (const agent of AGENTS) {
    const n = r.agents[agent];
    assert.ok(n && typeof n === 'object', `agents.${agent} measured`);
    assert.deepEqual(Object.keys(n).sort(), keys, `agents.${agent} has the same figures as agents.nodelet`);
    for (const key of ['start_single', 'start_burst100', 'cri_floor', 'cri_floor_burst100']) {
      for (const p of ['p50', 'p90', 'p99', 'max']) positive(n[key][p], `${agent}.${key}.${p}`);
      assert.ok(n[key].p50 <= n[key].p99 && n[key].p99 <= n[key].max, `${agent}.${key} percentiles in order`);
    }
    for (const key of ['rss_mb_max', 'rss_mb_rest110', 'cpu_s_burst', 'api_requests_per_pod', 'delete_burst100_s']) positive(n[key], `${agent}.${key}`);
    // CPU at rest is counted in 10 ms ticks: an idle agent may well use none in the reduced run's 3 s.
    measured(n.cpu_s_per_min_rest110, `${agent}.cpu_s_per_min_rest110`);
    assert.equal(typeof n.overhead_ms_p50, 'number');
    assert.ok(Object.keys(n.density).length > 0, `${agent}.density`);
    for (const [size, d] of Object.entries(n.density as Record<string, { pods: number; all_ready_s: number; ok: boolean }>)) {
      positive(d.pods, `${agent} density ${size} pods`);
      positive(d.all_ready_s, `${agent} density ${size}`);
      assert.equal(d.ok, true, `${agent} density ${size}: all Ready`);
    }
    // The whole node: the agent, its runtime (none apart from the process runtime's agent) and, per pod, a process or two.
    const fp = n.node_footprint;
    for (const key of ['rss_mb', 'pss_mb', 'cpu_s_per_min']) positive(fp[key], `${agent}.node_footprint.${key}`);
    assert.equal(fp.parts.agent.processes, 1, `${agent}: one agent process`);
    assert.equal(fp.parts.runtime?.processes, agent === 'nodelet_process' ? undefined : 1, `${agent}: containerd counted once, the process runtime inside the agent`);
    const density = Number(Object.keys(n.density)[0]);
    assert.ok(fp.parts.per_pod.processes >= density, `${agent}: at least one per-pod process for each of the ${density} pods (${fp.parts.per_pod.processes})`);
    assert.ok(fp.rss_mb > n.rss_mb_rest110, `${agent}: the node weighs more than its agent`);
    // nodelet's start path, from its own metrics; the kubelet exposes none.
    if (agent === 'kubelet') assert.equal(n.start_path, null);
    else {
      for (const key of ['sync_ms', 'status_ms']) positive(n.start_path[key], `${agent}.start_path.${key}`);
      for (const call of ['run_pod_sandbox', 'create_container', 'start_container']) positive(n.start_path.cri_ms[call], `${agent}.start_path.cri_ms.${call}`);
      assert.equal(n.start_path.starts, n.start_single.n);
    }
    for (const key of ['start_single', 'start_burst100', 'cri_floor', 'cri_floor_burst100']) assert.equal(n.samples[key].length, n[key].n, `${agent}.samples.${key}`);
  }
  for (const [name, v] of Object.entries(r.ratios)) positive(v, `ratios.${name}`);
  // The sync history's memory: the ring full (20 per pod) and the run without it measured beside.
  assert.equal(r.history_memory.records_kept, 5 * 20);
  for (const key of ['rss_mb_with', 'rss_mb_without']) positive(r.history_memory[key], `history_memory.${key}`);
  assert.match(run.stdout, /sync history: 5 pods with 50 syncs each \(100 records kept\)/);
  // The picture beside the JSON: a curve per column and its floor in each latency panel, and the node's bars.
  const svg = readFileSync(out.replace(/\.json$/, '.svg'), 'utf8');
  assert.match(svg, /^<svg[\s\S]*<\/svg>\s*$/);
  assert.equal((svg.match(/stroke-dasharray/g) ?? []).length >= 6, true, 'a dashed floor per column in both latency panels');
  assert.doesNotMatch(svg, /not measured|NaN/);
});
