// The benchmark's picture as one standalone SVG string. Hand-written elements so the
// results can be rendered without a plotting dependency; kept small enough to commit.

import type { FootprintPart, NodeFootprint } from './footprint.js';

export type { FootprintPart, NodeFootprint } from './footprint.js';

/** Milliseconds. */
export interface Samples {
  start_single: number[];
  start_burst100: number[];
  cri_floor: number[];
  cri_floor_burst100: number[];
}
export interface BenchPictureInput {
  date: string;
  reduced: boolean;
  machine: { runtime: string; kubelet: string | null; cpus: number };
  agents: Record<
    'nodelet' | 'kubelet' | 'nodelet_process',
    null | { samples?: Samples; node_footprint?: NodeFootprint; rss_mb_rest110: number; cpu_s_per_min_rest110: number }
  >;
}

type Col = keyof BenchPictureInput['agents'];
type Agent = NonNullable<BenchPictureInput['agents'][Col]>;

const W = 960;
const ORDER: Col[] = ['nodelet', 'kubelet', 'nodelet_process'];
const COLOURS: Record<Col, string> = { nodelet: '#1f77b4', kubelet: '#d62728', nodelet_process: '#2ca02c' };
const PARTS = [
  { key: 'agent', label: 'agent', opacity: 1 },
  { key: 'runtime', label: 'runtime', opacity: 0.6 },
  { key: 'per_pod', label: 'per-pod processes', opacity: 0.3 },
] as const;
const GRID = '#e5e5e5';
const INK = '#333';

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

// Coordinates to 1 decimal: sub-pixel precision is invisible and bloats the file.
const f = (n: number): string => String(Math.round(n * 10) / 10);
// Tick labels: strip float noise such as 0.30000000000000004.
const num = (n: number): string => String(Number(n.toPrecision(10)));

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${f(x)}" y="${f(y)}"${attrs ? ' ' + attrs : ''}>${esc(s)}</text>`;
}
function line(x1: number, y1: number, x2: number, y2: number, stroke: string): string {
  return `<line x1="${f(x1)}" y1="${f(y1)}" x2="${f(x2)}" y2="${f(y2)}" stroke="${stroke}"/>`;
}

/** Axis from 0 to a rounded-up max; the step is the smallest of 1/2/2.5/5 x 10^k giving at most 5 intervals, so 4-6 ticks. */
export function niceTicks(max: number): { max: number; values: number[] } {
  const m = Number.isFinite(max) && max > 0 ? max : 1;
  const raw = m / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((k) => k * mag).find((s) => s >= raw * (1 - 1e-12))!;
  const n = Math.max(1, Math.ceil(m / step - 1e-9));
  const values = Array.from({ length: n + 1 }, (_, i) => Number((i * step).toPrecision(12)));
  return { max: values[n]!, values };
}

function maxOf(xs: number[]): number {
  let m = 0;
  for (const x of xs) if (Number.isFinite(x) && x > m) m = x; // no spread: sample arrays may be long
  return m;
}

function colLabel(col: Col, input: BenchPictureInput): string {
  if (col === 'nodelet') return 'nodelet (containerd)';
  if (col === 'kubelet') return `kubelet${input.machine.kubelet ? ' ' + input.machine.kubelet : ''} (containerd)`;
  return 'nodelet, process runtime';
}

/** Empirical CDF as a step path: rises 1/n at each sample, flat between them. */
function cdfPath(values: number[], sx: (v: number) => number, sy: (p: number) => number): string {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  const n = s.length;
  let d = `M${f(sx(s[0]!))},${f(sy(0))}`;
  for (let i = 0; i < n; i++) {
    if (i > 0 && s[i] !== s[i - 1]) d += `H${f(sx(s[i]!))}`;
    if (i === n - 1 || s[i + 1] !== s[i]) d += `V${f(sy((i + 1) / n))}`;
  }
  return d;
}

interface Curve { col: Col; start: number[]; floor: number[] }

function cdfPanel(id: string, title: string, x0: number, y0: number, w: number, h: number, unit: string, curves: Curve[]): string {
  const L = 54, R = 14, T = 28, B = 44;
  const px = x0 + L, py = y0 + T, pw = w - L - R, ph = h - T - B;
  const ticks = niceTicks(maxOf(curves.flatMap((c) => [...c.start, ...c.floor])));
  const sx = (v: number) => px + (Math.max(0, v) / ticks.max) * pw;
  const sy = (p: number) => py + ph - p * ph;
  const out = [`<g id="${id}">`, text(x0, y0 + 16, title, 'font-size="14" font-weight="bold"')];
  for (const v of ticks.values) {
    out.push(line(sx(v), py, sx(v), py + ph, GRID), text(sx(v), py + ph + 16, num(v), 'text-anchor="middle"'));
  }
  for (const p of [0, 0.25, 0.5, 0.75, 1]) {
    out.push(line(px, sy(p), px + pw, sy(p), GRID), text(px - 6, sy(p) + 4, num(p), 'text-anchor="end"'));
  }
  out.push(line(px, py, px, py + ph, INK), line(px, py + ph, px + pw, py + ph, INK));
  out.push(text(px + pw / 2, py + ph + 36, `start latency (${unit})`, 'text-anchor="middle"'));
  const yl = `x="${f(x0 + 14)}" y="${f(py + ph / 2)}"`;
  out.push(`<text ${yl} text-anchor="middle" transform="rotate(-90 ${f(x0 + 14)} ${f(py + ph / 2)})">fraction of pods</text>`);
  let drawn = 0;
  for (const c of curves) {
    for (const [cls, vals, dash] of [['start', c.start, ''], ['floor', c.floor, ' stroke-dasharray="6 3"']] as const) {
      if (!vals.some(Number.isFinite)) continue; // empty sample: no curve
      drawn++;
      out.push(`<path class="cdf-${cls}" data-col="${c.col}" d="${cdfPath(vals, sx, sy)}" fill="none" stroke="${COLOURS[c.col]}" stroke-width="1.8"${dash}/>`);
    }
  }
  if (drawn === 0) out.push(text(px + pw / 2, py + ph / 2, 'no samples', `text-anchor="middle" fill="${INK}"`));
  out.push('</g>');
  return out.join('\n');
}

/** One row of swatches with labels, laid out left to right by estimated text width. */
function legend(x: number, y: number, items: { swatch: string; label: string }[]): string {
  const out = ['<g class="legend">'];
  for (const it of items) {
    out.push(it.swatch.replace(/\{x\}/g, f(x)).replace(/\{x2\}/g, f(x + 24)).replace(/\{y\}/g, f(y)).replace(/\{yt\}/g, f(y - 6)));
    out.push(text(x + 30, y + 4, it.label));
    x += 30 + it.label.length * 6.6 + 22;
  }
  out.push('</g>');
  return out.join('\n');
}

const lineSwatch = (stroke: string, dash = '') => `<line x1="{x}" y1="{y}" x2="{x2}" y2="{y}" stroke="${stroke}" stroke-width="2"${dash}/>`;
const boxSwatch = (opacity: number) => `<rect x="{x}" y="{yt}" width="24" height="12" fill="#555" fill-opacity="${opacity}"/>`;

interface BarRow { col: Col; label: string; fp: NodeFootprint }

/** Horizontal bars stacked agent / runtime / per-pod; returns the SVG and its height. */
function barChart(title: string, unit: string, y0: number, rows: BarRow[], pick: (p: FootprintPart) => number,
  total: (fp: NodeFootprint) => number, fmt: (v: number) => string): [string, number] {
  const bx = 230, bw = W - bx - 100, rowH = 30, barH = 20;
  const sums = rows.map((r) => PARTS.reduce((a, p) => a + (r.fp.parts[p.key] ? pick(r.fp.parts[p.key]!) : 0), 0));
  const ticks = niceTicks(maxOf(rows.flatMap((r, i) => [total(r.fp), sums[i]!])));
  const sx = (v: number) => bx + (Math.max(0, v) / ticks.max) * bw;
  const top = y0 + 26, bottom = top + rows.length * rowH;
  const out = [`<g class="bars">`, text(20, y0 + 14, title, 'font-size="13" font-weight="bold"')];
  for (const v of ticks.values) {
    out.push(line(sx(v), top - 4, sx(v), bottom, GRID), text(sx(v), bottom + 16, num(v), 'text-anchor="middle"'));
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    out.push(text(bx - 8, y + 14, r.label, 'text-anchor="end"'));
    let acc = 0;
    for (const p of PARTS) {
      const part = r.fp.parts[p.key];
      if (!part) continue;
      const v = Math.max(0, pick(part));
      const tip = `${p.label}: ${fmt(pick(part))} ${unit}, ${part.processes} process${part.processes === 1 ? '' : 'es'}`;
      out.push(`<rect x="${f(sx(acc))}" y="${f(y)}" width="${f(sx(acc + v) - sx(acc))}" height="${barH}" fill="${COLOURS[r.col]}" fill-opacity="${p.opacity}" stroke="#fff" stroke-width="0.5"><title>${esc(tip)}</title></rect>`);
      acc += v;
    }
    out.push(text(sx(Math.max(acc, total(r.fp))) + 6, y + 14, `${fmt(total(r.fp))} ${unit}`, 'class="total"'));
  });
  out.push(line(bx, top - 4, bx, bottom, INK), line(bx, bottom, bx + bw, bottom, INK), '</g>');
  return [out.join('\n'), bottom + 26 - y0];
}

const fmtMb = (v: number) => String(Math.round(v));
const fmtCpu = (v: number) => (v >= 10 ? String(Math.round(v)) : v >= 1 ? v.toFixed(1) : v.toFixed(2));

export function benchSvg(result: BenchPictureInput): string {
  const cols = ORDER.filter((c) => result.agents[c] != null).map((c) => ({ col: c, a: result.agents[c] as Agent, label: colLabel(c, result) }));
  const m = result.machine;
  const head = `nodelet benchmark, ${result.date}: ${m.cpus} CPUs, ${m.runtime}, kubelet ${m.kubelet ?? 'not run'}${result.reduced ? ' (reduced run)' : ''}`;
  const body: string[] = [text(20, 26, head, 'font-size="16" font-weight="bold"')];

  // Panels 1 and 2 side by side; burst latencies are in seconds, which reads better at that scale.
  const sampled = cols.filter((c) => c.a.samples);
  const curves = (pick: (s: Samples) => [number[], number[]], scale: number): Curve[] =>
    sampled.map((c) => {
      const [start, floor] = pick(c.a.samples!);
      return { col: c.col, start: (start ?? []).map((v) => v / scale), floor: (floor ?? []).map((v) => v / scale) };
    });
  const ph = 290, py = 44;
  body.push(cdfPanel('single', 'Start latency, one at a time', 20, py, 450, ph, 'ms', curves((s) => [s.start_single, s.cri_floor], 1)));
  body.push(cdfPanel('burst', 'Start latency, burst of 100', 490, py, 450, ph, 's', curves((s) => [s.start_burst100, s.cri_floor_burst100], 1000)));
  body.push(legend(74, py + ph + 16, [
    ...sampled.map((c) => ({ swatch: lineSwatch(COLOURS[c.col]), label: c.label })),
    { swatch: lineSwatch('#555'), label: 'pod start' },
    { swatch: lineSwatch('#555', ' stroke-dasharray="6 3"'), label: 'CRI floor' },
  ]));

  // Panel 3: whole-node footprint, RSS then CPU, one bar per measured column.
  let y = py + ph + 56;
  body.push(`<g id="footprint">`, text(20, y, 'Whole node at rest, 110 pods', 'font-size="14" font-weight="bold"'));
  const rows: BarRow[] = cols.filter((c) => c.a.node_footprint).map((c) => ({ col: c.col, label: c.label, fp: c.a.node_footprint! }));
  if (rows.length === 0) {
    body.push(text(20, y + 26, 'not measured', `fill="${INK}"`));
    y += 44;
  } else {
    body.push(legend(230, y + 22, PARTS.map((p) => ({ swatch: boxSwatch(p.opacity), label: p.label }))));
    const [rss, h1] = barChart('Memory (RSS), MB', 'MB', y + 36, rows, (p) => p.rss_mb, (fp) => fp.rss_mb, fmtMb);
    const [cpu, h2] = barChart('CPU, seconds per minute', 's/min', y + 36 + h1, rows, (p) => p.cpu_s_per_min, (fp) => fp.cpu_s_per_min, fmtCpu);
    body.push(rss, cpu);
    y += 36 + h1 + h2;
  }
  body.push('</g>');

  const H = Math.ceil(y + 10);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="12" fill="#111">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    ...body,
    '</svg>',
  ].join('\n');
}
