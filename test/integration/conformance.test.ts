// The conformance harness cannot silently rot: a reduced `make conformance` (a handful of
// Kubernetes' [NodeConformance] specs, nodelet on containerd as the only node, placed there by the
// scheduler) must run e2e.test to the end and write results in which those specs passed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../support/cluster.js';

// Specs nodelet passes today, each quick: they need the scheduler, the controller-manager (a
// namespace's default ServiceAccount), the e2e images under their names, and nodelet's statuses,
// termination reasons, init-container failures and container logs to be the kubelet's.
const SPECS = [
  'Pods should get a host IP',
  'Pods should be submitted and removed',
  'Kubelet when scheduling a busybox command that always fails in a pod should have an terminated reason',
  'InitContainer should not start app containers and fail the pod if init containers fail on a RestartNever pod',
  // Read through the node API (kubectl logs, as the e2e framework reads it).
  'Kubelet when scheduling a busybox command in a pod should print the output to logs',
];

test('a reduced make conformance runs e2e.test against nodelet and writes results in which the specs passed', () => {
  const out = join(mkdtempSync(join(tmpdir(), 'nodelet-conformance-')), 'results.json');
  const run = spawnSync(process.execPath, [join(projectRoot, 'dist/test/conformance/run.js')], {
    env: { ...process.env, SUITE: 'common', AGENT: 'nodelet', SPEC: SPECS.map((s) => s.replace(/[()]/g, '\\$&')).join('|'), PROCS: '4', RESULTS: out },
    encoding: 'utf8',
    timeout: 900_000,
  });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /nodelet \(containerd\)\s+\d+ passed/);
  const r = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(r.kubernetes, 'v1.37.2');
  const a = r.agents.nodelet;
  assert.ok(a, 'a nodelet column');
  assert.equal(a.counts.total, SPECS.length, `the selection is the ${SPECS.length} specs: ${JSON.stringify(a.failed)}`);
  assert.deepEqual(a.failed, [], 'every spec passed');
  assert.equal(a.counts.passed, SPECS.length);
  assert.ok(Object.keys(a.files).every((f: string) => f.startsWith('common/node/')), Object.keys(a.files).join(', '));
  assert.match(a.commit, /^[0-9a-f]{7,}/);
});

// The kubelet's node e2e suite, reduced to specs nodelet passes today that only that suite looks
// at: the kubelet's cgroup hierarchy on this machine, and a recursive read-only mount refused in
// the kubelet's words where the runtime cannot make one. They run only once the suite has read the
// agent's /configz through the API server's node proxy (the node's address in a network
// namespace of the run's own, the second API server that dials it).
const NODE_E2E_SPECS = [
  'Kubelet Cgroup Manager QOS containers On enabling QOS cgroup hierarchy Top level QoS containers should have been created',
  'Kubelet Cgroup Manager Pod containers On scheduling a Guaranteed Pod Pod containers should have been created under the cgroup-root',
  'Kubelet Cgroup Manager Pod containers On scheduling a BestEffort Pod Pod containers should have been created under the BestEffort cgroup',
  'Mount recursive read-only \\[LinuxOnly\\] Mount recursive read-only when the runtime does not support recursive read-only mounts should reject recursive read-only mounts',
];

test('a reduced node e2e run runs e2e_node.test against nodelet through the node proxy and writes results in which the specs passed', () => {
  // The suite's API server is started on demand; the rest of the cluster is up already.
  const up = spawnSync(join(projectRoot, 'hack/cluster-up.sh'), { env: { ...process.env, NODELET_NODE_E2E_APISERVER: '1' }, encoding: 'utf8', timeout: 300_000 });
  assert.equal(up.status, 0, up.stderr);
  const out = join(mkdtempSync(join(tmpdir(), 'nodelet-node-e2e-')), 'results.json');
  const run = spawnSync(process.execPath, [join(projectRoot, 'dist/test/conformance/run.js')], {
    env: { ...process.env, SUITE: 'node-e2e', AGENT: 'nodelet', SPEC: NODE_E2E_SPECS.join('|'), PROCS: '3', RESULTS: out },
    encoding: 'utf8',
    timeout: 900_000,
  });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /node API at 10\.253\.0\.2:10250/, "reached through the node address namespace");
  const r = JSON.parse(readFileSync(out, 'utf8'));
  const a = r.agents.nodelet;
  assert.ok(a, 'a nodelet column');
  assert.equal(a.counts.total, NODE_E2E_SPECS.length, `the selection is the ${NODE_E2E_SPECS.length} specs: ${JSON.stringify(a.failed)}`);
  assert.deepEqual(a.failed, [], 'every spec passed');
  assert.equal(a.counts.passed, NODE_E2E_SPECS.length);
  assert.deepEqual(Object.keys(a.files).sort(), ['e2e_node/mount_rro_linux_test.go', 'e2e_node/pods_container_manager_test.go']);
  assert.equal(spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout.includes('nodelet-node-api'), false, 'the node address namespace is gone');
});
