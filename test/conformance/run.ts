// `make conformance`: Kubernetes' own [NodeConformance] specs (test/e2e/common/node and
// test/e2e/common/storage of the pinned k8s.io/kubernetes) run by its e2e.test, in parallel Ginkgo
// processes, against one agent at a time as the test cluster's only node: nodelet on containerd,
// nodelet with its process runtime, and the real kubelet on the same containerd.
//
//   AGENT=nodelet,process,kubelet   the agents, in that order (default all three)
//   FOCUS=<regex>                   only spec files under test/e2e/common/ matching it (e.g. node/pods\.go)
//   SPEC=<regex>                    only specs whose text matches it
//   PROCS=<n>                       parallel Ginkgo processes (default 20; a failing spec often waits 5 min)
//   RESULTS=<file>                  where to write the results (default: test/conformance/results/latest.json
//                                   for the whole selection, .cluster/conformance/results.json when narrowed)
//   RECLASSIFY=1                    run nothing: read the last run's reports again (after causes.ts changed)
// The whole selection also rewrites the results tables of test/conformance/README.md and README.md.
import * as k8s from '@kubernetes/client-node';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, openSync, closeSync } from 'node:fs';
import { cpus, homedir, hostname, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { clusterEnv, projectRoot } from '../support/cluster.js';
import { AGENT_KINDS, clearNodes, startConformanceAgent, waitNodeDrained, type AgentKind } from './agents.js';
import { classify, RULES } from './causes.js';
import { readReport, selectedSpecs } from './report.js';
import { agentResult, mergeResults, renderSummary, renderTable, replaceBetweenMarkers, type Results } from './results.js';

const LABEL_FILTER = 'NodeConformance && !Serial && !Slow && !Disruptive && !Flaky && Feature: isEmpty';
const SPEC_DIRS = 'test/e2e/common/(node|storage)/';

/**
 * e2e.test's flags besides the selection, each because of what this cluster is:
 * --provider=skeleton: no cloud provider, so the framework makes no provider calls;
 * --disable-log-dump: the end-of-suite log dump runs a provider's scripts, which a skeleton has none of.
 * Everything else is e2e.test's default (the namespaces' default ServiceAccounts exist: the
 * controller-manager creates them; the node must be Ready and schedulable: it is).
 */
function e2eFlags(kubeconfig: string, focusFile: string, focus: string | undefined): string[] {
  return [
    '--provider=skeleton',
    `--kubeconfig=${kubeconfig}`,
    '--disable-log-dump',
    `-ginkgo.focus-file=${focusFile}`,
    `-ginkgo.label-filter=${LABEL_FILTER}`,
    ...(focus ? [`-ginkgo.focus=${focus}`] : []),
    '-ginkgo.no-color',
  ];
}

function kubeVersion(): string {
  return /^KUBE_VERSION=(\S+)/m.exec(readFileSync(join(projectRoot, 'hack/versions.sh'), 'utf8'))![1]!;
}

function bin(name: string): string {
  const path = join(process.env.NODELET_CACHE ?? join(homedir(), '.cache/nodelet'), 'bin', `${name}-${kubeVersion()}`);
  if (!existsSync(path)) throw new Error(`${path} is missing: run hack/build-go-bins.sh e2e.test ginkgo (make setup)`);
  return path;
}

function gitCommit(): string {
  const r = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: projectRoot, encoding: 'utf8' });
  const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: projectRoot, encoding: 'utf8' }).stdout.trim() !== '';
  return r.status === 0 ? `${r.stdout.trim()}${dirty ? '-dirty' : ''}` : 'unknown';
}

function machine(): string {
  return `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB`;
}

/** Ctrl-C (or SIGTERM): Ginkgo is interrupted, the agent stopped and cleaned up, and no later agent runs. */
let interrupted = false;
let running: ReturnType<typeof spawn> | undefined;
function onSignal(signal: NodeJS.Signals): void {
  if (interrupted) process.exit(130); // a second one: now
  interrupted = true;
  console.error(`conformance: ${signal}: stopping the specs and the agent (again to quit at once)`);
  const ginkgo = running;
  if (!ginkgo?.pid) return;
  // Ginkgo and its e2e.test processes are a process group of their own: interrupted as one (they
  // clean up their namespaces), and killed as one if they are not done within a minute.
  process.kill(-ginkgo.pid, 'SIGINT');
  setTimeout(() => {
    if (running === ginkgo) process.kill(-ginkgo.pid!, 'SIGKILL');
  }, 60_000).unref();
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

function waitExit(child: ReturnType<typeof spawn>): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function deleteLeftoverNamespaces(core: k8s.CoreV1Api): Promise<number> {
  // The framework labels its namespaces with e2e-run; an interrupted run leaves them behind.
  const left = (await core.listNamespace({ labelSelector: 'e2e-run' })).items.filter((n) => !n.metadata?.deletionTimestamp);
  await Promise.all(left.map((n) => core.deleteNamespace({ name: n.metadata!.name! }).catch(() => undefined)));
  return left.length;
}

async function main(): Promise<void> {
  const agents = (process.env.AGENT ?? AGENT_KINDS.join(',')).split(',').map((a) => a.trim()).filter(Boolean) as AgentKind[];
  for (const a of agents) if (!AGENT_KINDS.includes(a)) throw new Error(`AGENT: unknown agent ${a} (${AGENT_KINDS.join(', ')})`);
  let fileFilter: RegExp | undefined;
  try {
    fileFilter = process.env.FOCUS ? new RegExp(process.env.FOCUS) : undefined;
  } catch (err) {
    throw new Error(`FOCUS: not a regular expression: ${(err as Error).message}`);
  }
  const focus = process.env.SPEC || undefined;
  const narrowed = Boolean(process.env.FOCUS || process.env.SPEC);
  const procs = Number(process.env.PROCS ?? 20);
  if (!Number.isInteger(procs) || procs < 1) throw new Error(`PROCS: expected a positive integer, got ${process.env.PROCS}`);
  const env = clusterEnv();
  const work = join(env.clusterDir, 'conformance');
  const resultsFile = process.env.RESULTS ?? (narrowed ? join(work, 'results.json') : join(projectRoot, 'test/conformance/results/latest.json'));
  if (process.env.RECLASSIFY === '1') return reclassify(resultsFile, work);
  mkdirSync(work, { recursive: true });
  mkdirSync(dirname(resultsFile), { recursive: true });
  // Ginkgo runs a precompiled suite only when its name ends in .test.
  const e2e = join(work, 'e2e.test');
  rmSync(e2e, { force: true });
  symlinkSync(bin('e2e.test'), e2e);
  const ginkgo = bin('ginkgo');

  const dryReport = join(work, 'dry-run.json');
  const dryRun = (focusFile: string) => {
    const dry = spawnSync(e2e, [...e2eFlags(env.kubeconfig, focusFile, focus), '-ginkgo.dry-run', `-ginkgo.json-report=${dryReport}`], { cwd: work, encoding: 'utf8' });
    if (dry.status !== 0) throw new Error(`e2e.test dry run failed (exit ${dry.status}): ${dry.stderr.slice(-500)}`);
    return selectedSpecs(JSON.parse(readFileSync(dryReport, 'utf8')));
  };
  let focusFile = SPEC_DIRS;
  let selection = dryRun(focusFile);
  if (fileFilter) {
    // FOCUS matches a spec file as the results name it (common/node/pods.go): Ginkgo is given those files.
    const files = [...new Set(selection.map((s) => s.file))].filter((f) => fileFilter.test(f));
    focusFile = `test/e2e/(${files.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`;
    selection = files.length ? dryRun(focusFile) : [];
  }
  if (selection.length === 0) throw new Error(`no spec matches (FOCUS=${process.env.FOCUS ?? ''} SPEC=${process.env.SPEC ?? ''})`);
  const flags = e2eFlags(env.kubeconfig, focusFile, focus);

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(env.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  // The API server reaches a node's API through its Hostname address: the machine's name, which
  // resolves to this machine. Every agent registers under it, one after the other.
  const node = hostname().toLowerCase();
  const commit = gitCommit();
  console.log(`conformance: ${selection.length} specs (${LABEL_FILTER}; ${focusFile}${focus ? `; ${focus}` : ''}), ${procs} processes, agents ${agents.join(', ')}, node ${node}`);

  const previous: Results | undefined = existsSync(resultsFile) ? JSON.parse(readFileSync(resultsFile, 'utf8')) as Results : undefined;
  let results = mergeResults(previous, {
    kubernetes: kubeVersion(),
    selection: { label_filter: LABEL_FILTER, focus_file: focusFile, focus: focus ?? null, specs: selection.length },
    agents: {},
  });
  for (const kind of agents) {
    if (interrupted) break;
    const dir = join(work, kind);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const cleared = await clearNodes(core, coordination);
    const stale = await deleteLeftoverNamespaces(core);
    if (cleared.length || stale) console.log(`conformance: deleted ${cleared.length} Nodes of earlier runs (${cleared.join(', ')}) and ${stale} e2e namespaces left behind`);
    const t0 = Date.now();
    const agent = await startConformanceAgent(kind, node, core, dir);
    console.log(`conformance: ${kind}: node ${node} Ready (${agent.version}; log ${agent.logFile}); running the specs (log ${join(dir, 'ginkgo.log')})`);
    const report = join(dir, 'report.json');
    const started = Date.now();
    let code: number | null;
    try {
      const log = openSync(join(dir, 'ginkgo.log'), 'w');
      const child = (running = spawn(ginkgo, [`--procs=${procs}`, '--timeout=3h', '--no-color', '--json-report=report.json', `--output-dir=${dir}`, e2e, '--', ...flags, '-ginkgo.timeout=3h'], { cwd: dir, stdio: ['ignore', log, log], detached: true }));
      closeSync(log);
      code = await waitExit(child);
      running = undefined;
    } finally {
      const left = await waitNodeDrained(core, node, interrupted ? 60_000 : 300_000);
      if (left) console.log(`conformance: ${kind}: ${left} pods still on the node 5 min after the specs ended`);
      await agent.stop();
    }
    if (interrupted) break; // an interrupted column is not a result
    const seconds = Math.round((Date.now() - started) / 1000);
    if (!existsSync(report)) throw new Error(`ginkgo wrote no report (exit ${code}); see ${join(dir, 'ginkgo.log')}`);
    const outcomes = readReport(JSON.parse(readFileSync(report, 'utf8')), selection.map((s) => s.spec));
    results = mergeResults(results, {
      agents: {
        [kind]: agentResult(kind, outcomes, (o) => classify(o, RULES, kind), { date: new Date(t0).toISOString(), commit, machine: machine(), version: agent.version, procs, seconds }),
      },
    });
    writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
    console.log(`conformance: ${kind}: done in ${Math.round((Date.now() - t0) / 60_000)} min`);
  }
  finish(results, resultsFile, !narrowed && !process.env.RESULTS && !interrupted);
}

function finish(results: Results, resultsFile: string, tables: boolean): void {
  writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  console.log(renderSummary(results));
  console.log(`results: ${resultsFile}`);
  if (!tables) return;
  for (const [file, section] of [['test/conformance/README.md', renderTable(results, 'full')], ['README.md', renderTable(results, 'headline')]] as const) {
    const path = join(projectRoot, file);
    writeFileSync(path, replaceBetweenMarkers(readFileSync(path, 'utf8'), 'conformance-results', section));
  }
  console.log('tables rewritten: test/conformance/README.md, README.md');
}

/** The last run's results with their causes found again from its reports (.cluster/conformance/<agent>/report.json). */
function reclassify(resultsFile: string, work: string): void {
  if (!existsSync(resultsFile)) throw new Error(`${resultsFile}: no results to reclassify`);
  let results = JSON.parse(readFileSync(resultsFile, 'utf8')) as Results;
  const selection = selectedSpecs(JSON.parse(readFileSync(join(work, 'dry-run.json'), 'utf8'))).map((s) => s.spec);
  if (selection.length !== results.selection.specs) throw new Error(`the last dry run selected ${selection.length} specs, the results ${results.selection.specs}: run again instead`);
  for (const kind of AGENT_KINDS) {
    const a = results.agents[kind];
    const report = join(work, kind, 'report.json');
    if (!a || !existsSync(report)) continue;
    const outcomes = readReport(JSON.parse(readFileSync(report, 'utf8')), selection);
    const { date, commit, machine, version, procs, seconds } = a;
    results = mergeResults(results, { agents: { [kind]: agentResult(kind, outcomes, (o) => classify(o, RULES, kind), { date, commit, machine, version, procs, seconds }) } });
  }
  finish(results, resultsFile, resultsFile === join(projectRoot, 'test/conformance/results/latest.json'));
}

main().then(() => process.exit(interrupted ? 130 : 0), (err: unknown) => {
  console.error(`conformance: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
