// The conformance run's reading of Ginkgo reports, its causes and its tables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify, type CauseRule } from '../../conformance/causes.js';
import { count, e2eFile, readReport, selectedSpecs, type SpecOutcome } from '../../conformance/report.js';
import { suiteNamed } from '../../conformance/suites.js';
import { agentResult, mergeResults, renderSummary, renderTable, replaceBetweenMarkers } from '../../conformance/results.js';

const loc = (file: string, line = 1) => ({ FileName: `k8s.io/kubernetes@v1.37.2/test/e2e/${file}`, LineNumber: line });

function spec(containers: string[], leaf: string, file: string, state: string, extra: Record<string, unknown> = {}) {
  return {
    ContainerHierarchyTexts: containers,
    ContainerHierarchyLocations: containers.map(() => loc(file)),
    LeafNodeType: 'It',
    LeafNodeLocation: loc(file, 10),
    LeafNodeText: leaf,
    State: state,
    RunTime: 2_500_000_000,
    NumAttempts: state === 'skipped' && !extra.Failure ? 0 : 1,
    ...extra,
  };
}

const report = [{
  SpecReports: [
    { LeafNodeType: 'BeforeSuite', State: 'passed' },
    spec(['[sig-node] Pods'], 'should get a host IP [NodeConformance]', 'common/node/pods.go', 'passed'),
    spec(['[sig-node] Pods'], 'should support retrieving logs [NodeConformance]', 'common/node/pods.go', 'failed', {
      Failure: { Message: 'an error on the server ("unknown") has prevented the request from succeeding (get pods x)\nmore' },
      CapturedGinkgoWriterOutput: 'STEP: ...',
    }),
    spec(['[sig-storage] EmptyDir volumes'], 'should support (root,0644,tmpfs) [NodeConformance]', 'common/storage/empty_dir.go', 'timedout', {
      Failure: { Message: 'Timed out after 300.000s.' },
      CapturedGinkgoWriterOutput: 'event for pod-x: {nodelet vm} Failed: Error: volume mounts are not supported by nodelet yet',
    }),
    spec(['[sig-node] Sysctls'], 'should support sysctls [NodeConformance]', 'common/node/sysctl.go', 'skipped', { Failure: { Message: 'Skipped: not in a user namespace' } }),
    // Left out by the filter: listed, never attempted.
    spec(['[sig-storage] In-tree Volumes'], 'should do something [Slow]', 'storage/in_tree_volumes.go', 'skipped'),
  ],
}];

const selected = [
  '[sig-node] Pods should get a host IP [NodeConformance]',
  '[sig-node] Pods should support retrieving logs [NodeConformance]',
  '[sig-storage] EmptyDir volumes should support (root,0644,tmpfs) [NodeConformance]',
  '[sig-node] Sysctls should support sysctls [NodeConformance]',
  '[sig-node] Downward API should provide pod name [NodeConformance]',
];

test('a report is read spec by spec: outcomes, spec files, first lines; a selected spec never attempted is "not run"', () => {
  const out = readReport(report, selected);
  assert.deepEqual(out.map((o) => [o.outcome, o.file]), [
    ['passed', 'common/node/pods.go'],
    ['failed', 'common/node/pods.go'],
    ['failed', 'common/storage/empty_dir.go'],
    ['skipped', 'common/node/sysctl.go'],
    ['not run', ''],
  ]);
  assert.equal(out[1]!.message, 'an error on the server ("unknown") has prevented the request from succeeding (get pods x)');
  assert.equal(out[0]!.seconds, 2.5);
  assert.equal(out[0]!.output, '', 'a passed spec keeps no output');
  assert.deepEqual(count(out), { passed: 1, failed: 2, skipped: 1, interrupted: 0, not_run: 1, total: 5 });
});

test('the dry run\'s selection is what it did not skip', () => {
  const dry = [{ SpecReports: [
    spec(['[sig-node] Pods'], 'a [NodeConformance]', 'common/node/pods.go', 'passed'),
    spec(['[sig-storage] X'], 'b [Slow]', 'storage/x.go', 'skipped'),
  ] }];
  assert.deepEqual(selectedSpecs(dry), [{ spec: '[sig-node] Pods a [NodeConformance]', file: 'common/node/pods.go' }]);
});

test('spec files are named under test/: e2e/ for e2e.test\'s, e2e_node/ for the node e2e suite\'s', () => {
  assert.equal(e2eFile('k8s.io/kubernetes@v1.37.2/test/e2e/common/node/pods.go'), 'common/node/pods.go');
  assert.equal(e2eFile('k8s.io/kubernetes@v1.37.2/test/e2e_node/summary_test.go'), 'e2e_node/summary_test.go');
  assert.equal(e2eFile('/elsewhere/x.go'), '/elsewhere/x.go');
});

test('the node e2e suite talks to the API server that proxies to the node, as the admin, and to the agent\'s CRI endpoint; an unknown suite is refused', () => {
  const s = suiteNamed('node-e2e');
  const flags = s.flags({ kubeconfig: '/k', node: 'vm', runtimeEndpoint: 'unix:///r.sock', nodeE2EApiserver: 'https://127.0.0.1:26444', token: 't0k', reportDir: '/d' });
  for (const f of ['--start-services=false', '--host=https://127.0.0.1:26444', '--bearer-token=t0k', '--node-name=vm', '--container-runtime-endpoint=unix:///r.sock']) assert.ok(flags.includes(f), f);
  assert.ok(s.proxiedNode);
  assert.equal(s.skipFiles, 'test/e2e/common/', 'the common specs are the common suite\'s');
  assert.ok(!suiteNamed('common').proxiedNode);
  assert.throws(() => suiteNamed('cluster'), /SUITE: unknown suite cluster/);
});

test('causes: what was seen wins over what the spec tests; an unexplained failure says so with its message', () => {
  const rules: CauseRule[] = [
    { cause: 'volumes', seen: /volume mounts are not supported/ },
    { cause: 'probes', spec: /probe/ },
  ];
  const base = { outcome: 'failed' as const, output: '' };
  assert.equal(classify({ ...base, spec: 'readiness probe with a volume', message: 'x', output: 'volume mounts are not supported' }, rules), 'volumes');
  assert.equal(classify({ ...base, spec: 'readiness probe', message: 'Timed out' }, rules), 'probes');
  assert.equal(classify({ ...base, spec: 'something else', message: 'Timed out after 300s' }, rules), 'unexplained: Timed out after 300s');
  assert.match(classify({ ...base, outcome: 'not run', spec: 's', message: '' }, rules), /^not run/);
});

const run = { date: '2026-12-01T12:00:00.000Z', commit: 'abc1234', machine: '2 cores', version: 'v', procs: 4, seconds: 600 };

test('nodelet\'s failures the kubelet shares are the environment\'s: listed, not counted against nodelet', () => {
  const outcomes = (failing: string[]): SpecOutcome[] => selected.map((s) => ({ spec: s, file: 'common/node/x.go', outcome: failing.includes(s) ? 'failed' : 'passed', message: failing.includes(s) ? 'boom' : '', output: '', seconds: 1 }));
  const kubelet = agentResult('kubelet', outcomes([selected[1]!]), () => 'env', run);
  const nodelet = agentResult('nodelet', outcomes([selected[1]!, selected[2]!]), () => 'ours', run);
  const r = mergeResults(undefined, { kubernetes: 'v1.37.2', selection: { label_filter: 'l', focus_file: 'f', focus: null, specs: 5 }, agents: { nodelet } });
  assert.equal(r.agents.nodelet!.counted!.environment, 0, 'no kubelet column yet: nothing is the environment\'s');
  const both = mergeResults(r, { agents: { kubelet } });
  assert.deepEqual(both.agents.nodelet!.counted, { passed: 3, failed: 1, environment: 1 });
  assert.equal(both.agents.nodelet!.failed.find((f) => f.spec === selected[1])!.kubelet_fails_too, true);
  // Another selection replaces the columns instead of mixing with them.
  const other = mergeResults(both, { selection: { label_filter: 'l', focus_file: 'g', focus: null, specs: 1 }, agents: {} });
  assert.deepEqual(Object.keys(other.agents), []);

  const table = renderTable(both, 'full');
  assert.match(table, /\| nodelet \(containerd\) \| \*\*3\*\* \(60%\) \| 2 \| 1 \|/);
  assert.match(table, /Specs the kubelet fails here[\s\S]*retrieving logs[^\n]*\| env \|/);
  assert.match(table, /retrieving logs[^\n]*\| ours \(the kubelet too\) \|/);
  assert.match(table, /EmptyDir[^\n]*\| ours \|/);
  assert.match(renderSummary(both), /nodelet: ours/);
});

test('the results section of a README is replaced between its markers, and only there', () => {
  const text = 'a\n<!-- r:begin -->\nold\n<!-- r:end -->\nb\n';
  assert.equal(replaceBetweenMarkers(text, 'r', 'new'), 'a\n<!-- r:begin -->\nnew\n<!-- r:end -->\nb\n');
  assert.throws(() => replaceBetweenMarkers('no markers', 'r', 'x'), /markers/);
});
