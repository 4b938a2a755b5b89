// The benchmark picture: a standalone SVG with CDF panels and footprint bars.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchSvg, niceTicks, type BenchPictureInput, type NodeFootprint, type Samples } from '../../../bench/svg.js';

const part = (rss_mb: number, cpu: number, processes = 1) => ({ processes, rss_mb, pss_mb: rss_mb * 0.8, cpu_s_per_min: cpu });
const samples = (k: number): Samples => ({
  start_single: [100 * k, 120 * k, 150 * k, 200 * k],
  cri_floor: [50 * k, 60 * k, 60 * k, 80 * k],
  start_burst100: [1000 * k, 2000 * k, 3000 * k],
  cri_floor_burst100: [500 * k, 800 * k],
});
const fp = (agent: number, runtime: number | null, perPod: number, cpu: number): NodeFootprint => ({
  rss_mb: agent + (runtime ?? 0) + perPod,
  pss_mb: 0,
  cpu_s_per_min: cpu,
  parts: { agent: part(agent, cpu / 2), ...(runtime === null ? {} : { runtime: part(runtime, cpu / 4) }), per_pod: part(perPod, cpu / 4, 110) },
});

function input(): BenchPictureInput {
  return {
    date: '2025-06-01',
    reduced: false,
    machine: { runtime: 'containerd 2.1.1', kubelet: 'v1.37.2 <x>', cpus: 8 },
    agents: {
      nodelet: { samples: samples(1), node_footprint: fp(90, 50, 32, 1.2), rss_mb_rest110: 90, cpu_s_per_min_rest110: 0.6 },
      kubelet: { samples: samples(2), node_footprint: fp(160, 50, 90, 4.5), rss_mb_rest110: 160, cpu_s_per_min_rest110: 2 },
      nodelet_process: { samples: samples(1.5), node_footprint: fp(100, null, 30, 0.35), rss_mb_rest110: 100, cpu_s_per_min_rest110: 0.2 },
    },
  };
}

const COLS = { nodelet: '#1f77b4', kubelet: '#d62728', nodelet_process: '#2ca02c' };
const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;
/** The text of one CDF panel: from its <g id> to the next panel's. */
function panel(svg: string, id: 'single' | 'burst'): string {
  const a = svg.indexOf(`<g id="${id}">`);
  assert.ok(a >= 0, `panel ${id} missing`);
  const b = svg.indexOf('<g ', a + 1);
  return svg.slice(a, b < 0 ? undefined : b);
}
const paths = (s: string, col: string, cls: 'start' | 'floor') =>
  s.match(new RegExp(`<path class="cdf-${cls}" data-col="${col}"[^>]*>`, 'g')) ?? [];

function wellFormed(svg: string): void {
  assert.ok(svg.startsWith('<svg '), svg.slice(0, 40));
  assert.ok(svg.trimEnd().endsWith('</svg>'));
  assert.equal(count(svg, /<g[ >]/g), count(svg, /<\/g>/g), 'balanced <g>');
  assert.equal(count(svg, /<text[ >]/g), count(svg, /<\/text>/g), 'balanced <text>');
  // Every < opens a tag: text content is escaped.
  assert.equal(count(svg, /<(?![a-z/])/g), 0);
}

test('three columns: one solid and one dashed CDF per column per panel, legend, bar totals', () => {
  const svg = benchSvg(input());
  wellFormed(svg);
  for (const id of ['single', 'burst'] as const) {
    const p = panel(svg, id);
    for (const [col, colour] of Object.entries(COLS)) {
      const start = paths(p, col, 'start');
      const floor = paths(p, col, 'floor');
      assert.equal(start.length, 1, `${id} ${col} start`);
      assert.equal(floor.length, 1, `${id} ${col} floor`);
      assert.ok(start[0]!.includes(`stroke="${colour}"`) && !start[0]!.includes('dasharray'));
      assert.ok(floor[0]!.includes(`stroke="${colour}"`) && floor[0]!.includes('stroke-dasharray'));
    }
  }
  assert.ok(panel(svg, 'single').includes('start latency (ms)'));
  assert.ok(panel(svg, 'burst').includes('start latency (s)'));
  for (const label of ['nodelet (containerd)', 'kubelet v1.37.2 &lt;x&gt; (containerd)', 'nodelet, process runtime', 'CRI floor', 'agent', 'runtime', 'per-pod processes']) {
    assert.ok(svg.includes(`>${label}</text>`), label);
  }
  for (const total of ['172 MB', '300 MB', '130 MB', '1.2 s/min', '4.5 s/min', '0.35 s/min']) {
    assert.ok(svg.includes(`>${total}</text>`), total);
  }
  assert.ok(svg.includes('2025-06-01') && svg.includes('8 CPUs'));
  assert.ok(!svg.includes('not measured'));
  // The process runtime has no runtime part: 3 + 3 + 2 segments, in both the RSS and CPU charts.
  assert.equal(count(svg, /<rect [^>]*fill="#2ca02c"/g), 4);
  assert.equal(count(svg, /<rect [^>]*fill="#1f77b4"/g), 6);
});

test('the CDF is a step curve from 0 to 1 with one rise per distinct value', () => {
  const p = panel(benchSvg(input()), 'single');
  const d = (s: string) => /d="([^"]*)"/.exec(s)![1]!;
  const start = d(paths(p, 'nodelet', 'start')[0]!);
  const floor = d(paths(p, 'nodelet', 'floor')[0]!);
  assert.equal(count(start, /V/g), 4);
  assert.equal(count(floor, /V/g), 3, 'a repeated value is one rise');
  assert.equal(count(start, /H/g), 3, 'a flat step between each pair of distinct values');
  assert.equal(count(floor, /H/g), 2);
  const ys = (s: string) => [...s.matchAll(/V(-?[\d.]+)/g)].map((m) => Number(m[1]));
  const y0 = Number(/^M[\d.]+,([\d.]+)/.exec(start)![1]);
  const v = ys(start);
  assert.ok(v.every((y, i) => y < (i === 0 ? y0 : v[i - 1]!)), 'rises monotonically (SVG y grows downward)');
  assert.equal(ys(floor).at(-1), v.at(-1), 'both curves reach fraction 1');
  // The slower kubelet curve lies to the right of nodelet's.
  const firstX = (s: string) => Number(/^M([\d.]+)/.exec(d(s))![1]);
  assert.ok(firstX(paths(p, 'kubelet', 'start')[0]!) > firstX(paths(p, 'nodelet', 'start')[0]!));
});

test('coordinates have at most one decimal', () => {
  const svg = benchSvg(input());
  for (const m of svg.matchAll(/ (?:x|y|x1|x2|y1|y2|width|height|d)="([^"]*)"/g)) {
    assert.ok(!/\d\.\d\d/.test(m[1]!), m[0]);
  }
});

test('a null column is left out everywhere', () => {
  const i = input();
  i.agents.kubelet = null;
  i.machine.kubelet = null;
  const svg = benchSvg(i);
  wellFormed(svg);
  assert.ok(!svg.includes(COLS.kubelet));
  assert.ok(!svg.includes('data-col="kubelet"'));
  assert.ok(!svg.includes('>kubelet'), 'no kubelet label');
  assert.ok(!svg.includes('300 MB'));
  assert.equal(paths(panel(svg, 'single'), 'nodelet', 'start').length, 1);
});

test('empty samples and no footprint do not throw; the footprint panel says not measured', () => {
  const i = input();
  for (const a of Object.values(i.agents)) {
    delete a!.node_footprint;
    a!.samples = { start_single: [], start_burst100: [], cri_floor: [], cri_floor_burst100: [] };
  }
  delete i.agents.nodelet_process!.samples;
  const svg = benchSvg(i);
  wellFormed(svg);
  assert.ok(svg.includes('>not measured</text>'));
  assert.equal(count(svg, /<path /g), 0);
  assert.equal(count(svg, />no samples<\/text>/g), 2);
  assert.ok(!svg.includes(' MB</text>'));
  assert.ok(!svg.includes('NaN') && !svg.includes('Infinity'));
  // A column without samples is left out of the CDF legend.
  assert.ok(!svg.includes('>nodelet, process runtime</text>'));
});

test('one empty curve is skipped, the others drawn', () => {
  const i = input();
  i.agents.nodelet!.samples!.cri_floor = [];
  const p = panel(benchSvg(i), 'single');
  assert.equal(paths(p, 'nodelet', 'floor').length, 0);
  assert.equal(paths(p, 'nodelet', 'start').length, 1);
  assert.equal(paths(p, 'kubelet', 'floor').length, 1);
});

test('nice ticks: 0 to a rounded-up max in 4 to 6 ticks', () => {
  for (const max of [0, 0.37, 1, 7, 99, 100, 101, 130, 249, 251, 999, 12345]) {
    const t = niceTicks(max);
    assert.ok(t.values.length >= 4 && t.values.length <= 6, `${max}: ${t.values}`);
    assert.equal(t.values[0], 0);
    assert.equal(t.values.at(-1), t.max);
    assert.ok(t.max >= max, `${max}: ${t.max}`);
  }
  assert.deepEqual(niceTicks(100).values, [0, 20, 40, 60, 80, 100]);
  assert.deepEqual(niceTicks(0.3).values, [0, 0.1, 0.2, 0.3]);
});
