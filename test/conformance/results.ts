// The results of conformance runs (test/conformance/results/latest.json) and their tables.
// Pure: run.ts measures, these shape and print. A spec the kubelet fails here fails for the
// environment's reasons; it is listed with its reason and not counted against nodelet.
import type { AgentKind } from './agents.js';
import { AGENT_KINDS, AGENT_TITLES } from './agents.js';
import { count, countByFile, type Counts, type Outcome, type SpecOutcome } from './report.js';

export interface FailedSpec {
  spec: string;
  file: string;
  outcome: Exclude<Outcome, 'passed' | 'skipped'>;
  /** First line of the failure. */
  message: string;
  /** The cause, in a few words (causes.ts). */
  cause: string;
  /** The kubelet fails it too on this machine (set on nodelet's columns when a kubelet column exists). */
  kubelet_fails_too?: boolean;
}

export interface AgentResult {
  title: string;
  date: string;
  commit: string;
  machine: string;
  version: string;
  procs: number;
  seconds: number;
  counts: Counts;
  /** passed, failed for nodelet's own reasons, and failed as on the kubelet here. */
  counted?: { passed: number; failed: number; environment: number };
  files: Record<string, Counts>;
  skipped: Array<{ spec: string; reason: string }>;
  failed: FailedSpec[];
}

export interface Results {
  /** The suite's title (suites.ts); results written before there were suites have none. */
  suite?: string;
  kubernetes: string;
  selection: { label_filter: string; focus_file: string; focus: string | null; specs: number };
  agents: Partial<Record<AgentKind, AgentResult>>;
}

export function agentResult(
  kind: AgentKind,
  outcomes: SpecOutcome[],
  classify: (o: SpecOutcome) => string,
  run: { date: string; commit: string; machine: string; version: string; procs: number; seconds: number },
): AgentResult {
  return {
    title: AGENT_TITLES[kind],
    ...run,
    counts: count(outcomes),
    files: countByFile(outcomes),
    skipped: outcomes.filter((o) => o.outcome === 'skipped').map((o) => ({ spec: o.spec, reason: o.message })),
    failed: outcomes
      .filter((o) => o.outcome !== 'passed' && o.outcome !== 'skipped')
      .map((o) => ({ spec: o.spec, file: o.file, outcome: o.outcome as FailedSpec['outcome'], message: o.message, cause: classify(o) })),
  };
}

/** Later results over earlier ones, agent by agent; then nodelet's columns are counted against the kubelet's. */
export function mergeResults(earlier: Results | undefined, later: Partial<Results>): Results {
  const sameSelection = earlier && later.selection ? JSON.stringify(earlier.selection) === JSON.stringify(later.selection) : true;
  const suite = later.suite ?? earlier?.suite;
  const merged: Results = {
    ...(suite ? { suite } : {}),
    kubernetes: later.kubernetes ?? earlier?.kubernetes ?? '',
    selection: later.selection ?? earlier!.selection,
    // Another selection's columns cannot be compared with this one's.
    agents: { ...(sameSelection ? earlier?.agents : {}), ...later.agents },
  };
  const kubeletFails = new Set(merged.agents.kubelet?.failed.map((f) => f.spec) ?? []);
  for (const kind of AGENT_KINDS) {
    const a = merged.agents[kind];
    if (!a || kind === 'kubelet') continue;
    const hasKubelet = merged.agents.kubelet !== undefined;
    a.failed = a.failed.map((f) => ({ ...f, kubelet_fails_too: hasKubelet ? kubeletFails.has(f.spec) : undefined }));
    const environment = a.failed.filter((f) => f.kubelet_fails_too).length;
    a.counted = { passed: a.counts.passed, failed: a.failed.length - environment, environment };
  }
  return merged;
}

const pct = (n: number, of: number) => (of ? `${Math.round((1000 * n) / of) / 10}%` : '-');
const minutes = (s: number) => `${Math.round(s / 60)} min`;
const present = (r: Results) => AGENT_KINDS.filter((k) => r.agents[k]);

/** A few lines for the terminal. */
export function renderSummary(r: Results): string {
  const lines = [`${r.suite ?? '[NodeConformance] specs'}, Kubernetes ${r.kubernetes} (${r.selection.specs} selected):`];
  for (const k of present(r)) {
    const a = r.agents[k]!;
    const c = a.counts;
    const env = a.counted ? `, ${a.counted.environment} of them failing on the kubelet too` : '';
    lines.push(`  ${a.title.padEnd(30)} ${c.passed} passed (${pct(c.passed, c.total)}), ${c.failed + c.interrupted + c.not_run} failed${env}, ${c.skipped} skipped; ${minutes(a.seconds)}, ${a.procs} processes`);
  }
  const causes = new Map<string, number>();
  for (const k of present(r).filter((k) => k !== 'kubelet')) {
    for (const f of r.agents[k]!.failed.filter((f) => !f.kubelet_fails_too)) causes.set(`${k}: ${f.cause}`, (causes.get(`${k}: ${f.cause}`) ?? 0) + 1);
  }
  if (causes.size) {
    lines.push('  failures by cause:');
    for (const [c, n] of [...causes].sort((a, b) => b[1] - a[1])) lines.push(`    ${String(n).padStart(3)}  ${c}`);
  }
  return lines.join('\n');
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function countsTable(r: Results): string[] {
  const rows = ['| agent | passed | failed | of them failing on the kubelet too | skipped | run | date, commit |', '|---|---|---|---|---|---|---|'];
  for (const k of present(r)) {
    const a = r.agents[k]!;
    const c = a.counts;
    const failed = c.failed + c.interrupted + c.not_run;
    const env = k === 'kubelet' ? '-' : a.counted && r.agents.kubelet ? String(a.counted.environment) : 'no kubelet column';
    rows.push(`| ${a.title} | **${c.passed}** (${pct(c.passed, c.total)}) | ${failed} | ${env} | ${c.skipped} | ${minutes(a.seconds)}, ${a.procs} processes | ${a.date.slice(0, 10)}, ${a.commit} |`);
  }
  return rows;
}

/** `full`: test/conformance/README.md's tables; `headline`: the front page's counts. */
export function renderTable(r: Results, kind: 'full' | 'headline'): string {
  const kinds = present(r);
  const first = r.agents[kinds[0]!]!;
  const out = [`${r.selection.specs} specs of Kubernetes ${r.kubernetes} selected; measured on ${first.machine}.`, '', ...countsTable(r)];
  if (kind === 'headline') return out.join('\n');

  out.push('', '### Per spec file (passed / selected)', '', `| file | ${kinds.map((k) => r.agents[k]!.title).join(' | ')} |`, `|---|${kinds.map(() => '---|').join('')}`);
  const files = [...new Set(kinds.flatMap((k) => Object.keys(r.agents[k]!.files)))].sort();
  for (const f of files) out.push(`| ${f} | ${kinds.map((k) => { const c = r.agents[k]!.files[f]; return c ? `${c.passed} / ${c.total}` : '-'; }).join(' | ')} |`);

  const kubelet = r.agents.kubelet;
  if (kubelet) {
    out.push('', '### Specs the kubelet fails here, and why (the environment\'s; not counted against nodelet)', '');
    if (kubelet.failed.length === 0) out.push('None.');
    else {
      out.push('| spec | why | first line of the failure |', '|---|---|---|');
      for (const f of kubelet.failed) out.push(`| ${cell(f.spec)} | ${cell(f.cause)} | ${cell(f.message.slice(0, 160))} |`);
    }
  }
  const ours = kinds.filter((k) => k !== 'kubelet');
  const failing = [...new Set(ours.flatMap((k) => r.agents[k]!.failed.map((f) => f.spec)))].sort();
  if (ours.length && failing.length) {
    out.push('', '### Specs nodelet fails, and the cause', '', `| spec | ${ours.map((k) => r.agents[k]!.title).join(' | ')} |`, `|---|${ours.map(() => '---|').join('')}`);
    for (const spec of failing) {
      const cells = ours.map((k) => {
        const f = r.agents[k]!.failed.find((x) => x.spec === spec);
        if (!f) return 'passed';
        return f.kubelet_fails_too ? `${cell(f.cause)} (the kubelet too)` : cell(f.cause);
      });
      out.push(`| ${cell(spec)} | ${cells.join(' | ')} |`);
    }
  }
  const skipped = [...new Set(kinds.flatMap((k) => r.agents[k]!.skipped.map((s) => `${s.spec} — ${s.reason}`)))];
  if (skipped.length) out.push('', '### Skipped by the specs themselves', '', ...skipped.map((s) => `- ${cell(s)}`));
  return out.join('\n');
}

/** Replaces the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->`. */
export function replaceBetweenMarkers(text: string, name: string, section: string): string {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  if (i < 0 || j < i) throw new Error(`no ${begin} ... ${end} markers`);
  return `${text.slice(0, i + begin.length)}\n${section}\n${text.slice(j)}`;
}
