// Reading a Ginkgo JSON report of e2e.test into per-spec outcomes, and counting them per spec file.
// Pure functions: the run writes the report, these only read it.

/** What one spec came to, in our words (Ginkgo's "timedout", "panicked", ... count as failed). */
export type Outcome = 'passed' | 'failed' | 'skipped' | 'interrupted' | 'not run';

export interface SpecOutcome {
  /** The spec's full text, as Ginkgo prints it: containers then leaf, joined by spaces. */
  spec: string;
  /** Its file under test/e2e/, e.g. common/node/pods.go. */
  file: string;
  outcome: Outcome;
  /** First line of the failure (or of the skip reason); '' when it passed. */
  message: string;
  /** The whole failure, then what the spec printed (its steps, and the events the framework dumps on failure). */
  output: string;
  seconds: number;
}

interface GinkgoLocation {
  FileName: string;
  LineNumber: number;
}

interface GinkgoSpecReport {
  ContainerHierarchyTexts: string[] | null;
  ContainerHierarchyLocations: GinkgoLocation[] | null;
  LeafNodeType: string;
  LeafNodeLocation: GinkgoLocation;
  LeafNodeText: string;
  State: string;
  RunTime: number;
  NumAttempts: number;
  Failure?: { Message?: string; ForwardedPanic?: string };
  CapturedGinkgoWriterOutput?: string;
  CapturedStdOutErr?: string;
}

interface GinkgoSuiteReport {
  SpecReports: GinkgoSpecReport[] | null;
}

export function specText(r: Pick<GinkgoSpecReport, 'ContainerHierarchyTexts' | 'LeafNodeText'>): string {
  return [...(r.ContainerHierarchyTexts ?? []), r.LeafNodeText].filter((t) => t).join(' ');
}

/**
 * `.../k8s.io/kubernetes@v1.37.2/test/e2e/common/node/pods.go` -> `common/node/pods.go`;
 * the node e2e suite's `.../test/e2e_node/summary_test.go` -> `e2e_node/summary_test.go`.
 */
export function e2eFile(path: string): string {
  const i = path.lastIndexOf('/test/e2e/');
  if (i >= 0) return path.slice(i + '/test/e2e/'.length);
  const j = path.lastIndexOf('/test/e2e_node/');
  return j >= 0 ? path.slice(j + '/test/'.length) : path;
}

/** The spec file: its leaf's, unless the leaf is in a shared helper; then the nearest container's under common/. */
function specFile(r: GinkgoSpecReport): string {
  const candidates = [r.LeafNodeLocation, ...[...(r.ContainerHierarchyLocations ?? [])].reverse()].map((l) => e2eFile(l.FileName));
  return candidates.find((f) => f.startsWith('common/')) ?? candidates[0]!;
}

function outcomeOf(state: string): Outcome {
  switch (state) {
    case 'passed':
      return 'passed';
    case 'skipped':
      return 'skipped';
    case 'interrupted':
    case 'aborted':
      return 'interrupted';
    default:
      return 'failed'; // failed, timedout, panicked
  }
}

const firstLine = (text: string) => text.split('\n').map((l) => l.trim()).find((l) => l) ?? '';

/**
 * The outcomes of the specs `selected` names (the dry run's list), from the JSON report Ginkgo
 * wrote (one suite report per e2e.test run). A selected spec the report does not show as
 * attempted is 'not run' (the suite's timeout came first, or the run died).
 */
export function readReport(report: unknown, selected: string[]): SpecOutcome[] {
  const suites = (Array.isArray(report) ? report : [report]) as GinkgoSuiteReport[];
  const byText = new Map<string, GinkgoSpecReport>();
  for (const suite of suites) {
    for (const r of suite.SpecReports ?? []) {
      if (r.LeafNodeType !== 'It') continue;
      // Specs the filter left out are listed too, never attempted; an attempted one wins.
      const text = specText(r);
      if (r.NumAttempts > 0 || !byText.has(text)) byText.set(text, r);
    }
  }
  return selected.map((spec) => {
    const r = byText.get(spec);
    if (!r || (r.NumAttempts === 0 && r.State === 'skipped')) {
      return { spec, file: r ? specFile(r) : '', outcome: 'not run' as const, message: '', output: '', seconds: 0 };
    }
    const outcome = outcomeOf(r.State);
    return {
      spec,
      file: specFile(r),
      outcome,
      message: outcome === 'passed' ? '' : firstLine(r.Failure?.Message ?? r.Failure?.ForwardedPanic ?? ''),
      output: outcome === 'passed' ? '' : `${r.Failure?.Message ?? ''}\n${r.CapturedGinkgoWriterOutput ?? ''}${r.CapturedStdOutErr ?? ''}`,
      seconds: Math.round((r.RunTime ?? 0) / 1e8) / 10,
    };
  });
}

/** The specs a dry run selected (attempted in a dry run means selected), in the report's order. */
export function selectedSpecs(dryRunReport: unknown): Array<{ spec: string; file: string }> {
  const suites = (Array.isArray(dryRunReport) ? dryRunReport : [dryRunReport]) as GinkgoSuiteReport[];
  return suites.flatMap((s) => s.SpecReports ?? [])
    .filter((r) => r.LeafNodeType === 'It' && r.State !== 'skipped')
    .map((r) => ({ spec: specText(r), file: specFile(r) }));
}

export interface Counts {
  passed: number;
  failed: number;
  skipped: number;
  interrupted: number;
  not_run: number;
  total: number;
}

export function count(outcomes: Array<Pick<SpecOutcome, 'outcome'>>): Counts {
  const c: Counts = { passed: 0, failed: 0, skipped: 0, interrupted: 0, not_run: 0, total: outcomes.length };
  for (const o of outcomes) {
    if (o.outcome === 'not run') c.not_run++;
    else c[o.outcome]++;
  }
  return c;
}

export function countByFile(outcomes: SpecOutcome[]): Record<string, Counts> {
  const files = [...new Set(outcomes.map((o) => o.file))].sort();
  return Object.fromEntries(files.map((f) => [f, count(outcomes.filter((o) => o.file === f))]));
}
