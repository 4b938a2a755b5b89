// `make conformance`: Kubernetes' own [NodeConformance] specs, run by its test binaries in
// parallel Ginkgo processes against one agent at a time as the test cluster's only node: nodelet on
// containerd, nodelet with its process runtime, and the real kubelet on the same containerd. The
// suites (suites.ts): `common`, test/e2e/common/{node,storage} run by e2e.test; `node-e2e`, the
// kubelet's node e2e suite (test/e2e_node) run by e2e_node.test.
//
//   SUITE=common,node-e2e           the suites, in that order (default both)
//   AGENT=nodelet,process,kubelet   the agents, in that order (default all three)
//   FOCUS=<regex>                   only spec files matching it, as the results name them (e.g. node/pods\.go)
//   SPEC=<regex>                    only specs whose text matches it
//   PROCS=<n>                       parallel Ginkgo processes (default 20; a failing spec often waits 5 min)
//   RESULTS=<file>                  where to write the results of one suite (default: the suite's file under
//                                   test/conformance/results/ for the whole selection,
//                                   .cluster/conformance/<suite>/results.json when narrowed)
//   RECLASSIFY=1                    run nothing: read the last run's reports again (after causes.ts changed)
// The whole selection also rewrites the suite's results tables in test/conformance/README.md and README.md.
import * as k8s from '@kubernetes/client-node';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, openSync, closeSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { cpus, homedir, hostname, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { clusterEnv, projectRoot } from '../support/cluster.js';
import { AGENT_KINDS, clearNodes, startConformanceAgent, waitNodeDrained, type AgentKind } from './agents.js';
import { classify, RULES } from './causes.js';
import { readReport, selectedSpecs } from './report.js';
import { agentResult, mergeResults, renderSummary, renderTable, replaceBetweenMarkers, type Results } from './results.js';
import { removeCgroupRoot } from '../support/cgroups.js';
import { removeLinksInto } from '../support/kubelet.js';
import { exposeNodeApi, type ExposedNodeApi } from '../support/node-api-netns.js';
import { SUITE_NAMES, suiteNamed, type Suite, type SuiteContext } from './suites.js';

function kubeVersion(): string {
  return /^KUBE_VERSION=(\S+)/m.exec(readFileSync(join(projectRoot, 'hack/versions.sh'), 'utf8'))![1]!;
}

function bin(name: string): string {
  const path = join(process.env.NODELET_CACHE ?? join(homedir(), '.cache/nodelet'), 'bin', `${name}-${kubeVersion()}`);
  if (!existsSync(path)) throw new Error(`${path} is missing: run hack/build-go-bins.sh ${name} (make setup)`);
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

/**
 * The node e2e suite's PodOverhead spec creates the cluster-wide RuntimeClass "test-handler" (its
 * PreconfiguredRuntimeClassHandler) and leaves it: the next agent's run would fail to create it.
 */
async function deleteLeftoverRuntimeClass(nodeApi: k8s.NodeV1Api): Promise<void> {
  await nodeApi.deleteRuntimeClass({ name: 'test-handler' }).catch(() => undefined);
}

/** The node e2e suite's API server is started on demand (NODELET_NODE_E2E_APISERVER=1 hack/cluster-up.sh). */
async function requireNodeE2EApiserver(url: string, token: string): Promise<void> {
  const ok = await new Promise<boolean>((resolve) => {
    const req = httpsGet(`${url}/readyz`, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
  if (!ok) throw new Error(`the node e2e suite's API server (${url}) is not up: NODELET_NODE_E2E_APISERVER=1 hack/cluster-up.sh starts it (make conformance does)`);
}

/** What every suite's run shares: the agents, the narrowing, the cluster. */
interface RunOptions {
  agents: AgentKind[];
  fileFilter: RegExp | undefined;
  focus: string | undefined;
  narrowed: boolean;
  procs: number;
  core: k8s.CoreV1Api;
  coordination: k8s.CoordinationV1Api;
  nodeApi: k8s.NodeV1Api;
}

async function main(): Promise<void> {
  const suites = (process.env.SUITE ?? SUITE_NAMES.join(',')).split(',').map((s) => s.trim()).filter(Boolean).map(suiteNamed);
  const agents = (process.env.AGENT ?? AGENT_KINDS.join(',')).split(',').map((a) => a.trim()).filter(Boolean) as AgentKind[];
  for (const a of agents) if (!AGENT_KINDS.includes(a)) throw new Error(`AGENT: unknown agent ${a} (${AGENT_KINDS.join(', ')})`);
  let fileFilter: RegExp | undefined;
  try {
    fileFilter = process.env.FOCUS ? new RegExp(process.env.FOCUS) : undefined;
  } catch (err) {
    throw new Error(`FOCUS: not a regular expression: ${(err as Error).message}`);
  }
  if (process.env.RESULTS && suites.length > 1) throw new Error('RESULTS: one file holds one suite\'s results: name one SUITE');
  const procs = Number(process.env.PROCS ?? 20);
  if (!Number.isInteger(procs) || procs < 1) throw new Error(`PROCS: expected a positive integer, got ${process.env.PROCS}`);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(clusterEnv().kubeconfig);
  const opts: RunOptions = {
    agents,
    fileFilter,
    focus: process.env.SPEC || undefined,
    narrowed: Boolean(process.env.FOCUS || process.env.SPEC),
    procs,
    core: kc.makeApiClient(k8s.CoreV1Api),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    nodeApi: kc.makeApiClient(k8s.NodeV1Api),
  };
  for (const suite of suites) {
    if (interrupted) break;
    await runSuite(suite, opts);
  }
}

function ginkgoSelection(suite: Suite, focusFile: string, focus: string | undefined): string[] {
  return [
    `--ginkgo.focus-file=${focusFile}`,
    ...(suite.skipFiles ? [`--ginkgo.skip-file=${suite.skipFiles}`] : []),
    `--ginkgo.label-filter=${suite.labelFilter}`,
    ...(focus ? [`--ginkgo.focus=${focus}`] : []),
    '--ginkgo.no-color',
  ];
}

async function runSuite(suite: Suite, opts: RunOptions): Promise<void> {
  const { agents, fileFilter, focus, narrowed, procs, core, coordination } = opts;
  const env = clusterEnv();
  const work = join(env.clusterDir, 'conformance', suite.name);
  const resultsFile = process.env.RESULTS ?? (narrowed ? join(work, 'results.json') : join(projectRoot, suite.resultsFile));
  if (process.env.RECLASSIFY === '1') return reclassify(suite, resultsFile, work);
  mkdirSync(work, { recursive: true });
  mkdirSync(dirname(resultsFile), { recursive: true });
  // Ginkgo runs a precompiled suite only when its name ends in .test.
  const binary = join(work, suite.binary);
  rmSync(binary, { force: true });
  symlinkSync(bin(suite.binary), binary);
  const ginkgo = bin('ginkgo');
  // The API server that dials nodes by InternalIP, for the suites that reach the node through its proxy.
  const token = readFileSync(env.adminTokenFile, 'utf8').trim();
  const context = (agent: { runtimeEndpoint: string }, node: string, reportDir: string): SuiteContext => ({
    kubeconfig: env.kubeconfig,
    node,
    runtimeEndpoint: agent.runtimeEndpoint,
    nodeE2EApiserver: env.nodeE2EApiserver,
    token,
    reportDir,
  });

  const dryReport = join(work, 'dry-run.json');
  const dryRun = (focusFile: string) => {
    const flags = [...suite.flags(context({ runtimeEndpoint: env.runtimeEndpoint }, 'dry-run', work)), ...ginkgoSelection(suite, focusFile, focus)];
    const dry = spawnSync(binary, [...flags, '--ginkgo.dry-run', `--ginkgo.json-report=${dryReport}`], { cwd: work, encoding: 'utf8' });
    if (dry.status !== 0) throw new Error(`${suite.binary} dry run failed (exit ${dry.status}): ${dry.stderr.slice(-500)}`);
    return selectedSpecs(JSON.parse(readFileSync(dryReport, 'utf8')));
  };
  let focusFile = suite.specFiles;
  let selection = dryRun(focusFile);
  if (fileFilter) {
    // FOCUS matches a spec file as the results name it (common/node/pods.go): Ginkgo is given those files.
    const files = [...new Set(selection.map((s) => s.file))].filter((f) => fileFilter.test(f));
    focusFile = `test/(${files.map((f) => (f.startsWith('e2e_node/') ? f : `e2e/${f}`).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`;
    selection = files.length ? dryRun(focusFile) : [];
  }
  if (selection.length === 0) throw new Error(`${suite.name}: no spec matches (FOCUS=${process.env.FOCUS ?? ''} SPEC=${process.env.SPEC ?? ''})`);
  if (suite.proxiedNode) await requireNodeE2EApiserver(env.nodeE2EApiserver, token);

  // The API server reaches a node's API through its Hostname address: the machine's name, which
  // resolves to this machine. Every agent registers under it, one after the other.
  const node = hostname().toLowerCase();
  const commit = gitCommit();
  console.log(`conformance: ${suite.name}: ${selection.length} specs (${suite.labelFilter}; ${focusFile}${focus ? `; ${focus}` : ''}), ${procs} processes, agents ${agents.join(', ')}, node ${node}`);

  const previous: Results | undefined = existsSync(resultsFile) ? JSON.parse(readFileSync(resultsFile, 'utf8')) as Results : undefined;
  let results = mergeResults(previous, {
    suite: suite.title,
    kubernetes: kubeVersion(),
    selection: { label_filter: suite.labelFilter, focus_file: focusFile, focus: focus ?? null, specs: selection.length },
    agents: {},
  });
  for (const kind of agents) {
    if (interrupted) break;
    const dir = join(work, kind);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const cleared = await clearNodes(core, coordination);
    const stale = await deleteLeftoverNamespaces(core);
    if (suite.proxiedNode) await deleteLeftoverRuntimeClass(opts.nodeApi);
    if (cleared.length || stale) console.log(`conformance: deleted ${cleared.length} Nodes of earlier runs (${cleared.join(', ')}) and ${stale} e2e namespaces left behind`);
    const t0 = Date.now();
    // A node the API server proxies to: its name resolves (for the node e2e suite's API server) to
    // an address in a network namespace of ours, which leads to the agent (node-api-netns.ts).
    const exposeAt = suite.proxiedNode ? env.nodeApiNetnsIP : undefined;
    const agent = await startConformanceAgent(kind, node, core, dir, { nodeE2E: suite.name === 'node-e2e' });
    let exposed: ExposedNodeApi | undefined;
    const report = join(dir, 'report.json');
    const started = Date.now();
    let code: number | null;
    try {
      if (exposeAt) exposed = await exposeNodeApi(exposeAt, agent.port, dir);
      console.log(`conformance: ${suite.name}: ${kind}: node ${node} Ready (${agent.version}; log ${agent.logFile}${exposed ? `; node API at ${exposed.ip}:${exposed.port}` : ''}); running the specs (log ${join(dir, 'ginkgo.log')})`);
      const flags = [...suite.flags(context(agent, node, dir)), ...ginkgoSelection(suite, focusFile, focus)];
      const log = openSync(join(dir, 'ginkgo.log'), 'w');
      const child = (running = spawn(ginkgo, [`--procs=${procs}`, '--timeout=3h', '--no-color', '--json-report=report.json', `--output-dir=${dir}`, binary, '--', ...flags, '--ginkgo.timeout=3h'], { cwd: dir, stdio: ['ignore', log, log], detached: true }));
      closeSync(log);
      code = await waitExit(child);
      running = undefined;
    } finally {
      const left = await waitNodeDrained(core, node, interrupted ? 60_000 : 300_000);
      if (left) console.log(`conformance: ${suite.name}: ${kind}: ${left} pods still on the node 5 min after the specs ended`);
      await agent.stop();
      exposed?.close();
      // The node e2e profile's kubepods is the machine's (cgroup root "/"): its empty cgroups go with
      // the agent; so do its links in /var/log/containers to the cluster's pod logs (containers
      // removed behind its back, at the end, leave theirs).
      if (suite.proxiedNode) {
        removeCgroupRoot('/kubepods');
        removeLinksInto('/var/log/containers', env.podLogRoot);
      }
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
    console.log(`conformance: ${suite.name}: ${kind}: done in ${Math.round((Date.now() - t0) / 60_000)} min`);
  }
  finish(suite, results, resultsFile, !narrowed && !process.env.RESULTS && !interrupted);
}

function finish(suite: Suite, results: Results, resultsFile: string, tables: boolean): void {
  writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  console.log(renderSummary(results));
  console.log(`results: ${resultsFile}`);
  if (!tables) return;
  for (const [file, section] of [['test/conformance/README.md', renderTable(results, 'full')], ['README.md', renderTable(results, 'headline')]] as const) {
    const path = join(projectRoot, file);
    writeFileSync(path, replaceBetweenMarkers(readFileSync(path, 'utf8'), suite.markers, section));
  }
  console.log('tables rewritten: test/conformance/README.md, README.md');
}

/** The last run's results with their causes found again from its reports (.cluster/conformance/<suite>/<agent>/report.json). */
function reclassify(suite: Suite, resultsFile: string, work: string): void {
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
  finish(suite, results, resultsFile, resultsFile === join(projectRoot, suite.resultsFile));
}

main().then(() => process.exit(interrupted ? 130 : 0), (err: unknown) => {
  console.error(`conformance: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
