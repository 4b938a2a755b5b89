// The short run of `make drills` (test/drills/README.md), so that the harness cannot rot: every
// drill once, on one runtime each, with fewer pods and shorter outages, and every invariant after
// each. It stops and starts the test cluster's API server, etcd and containerd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterEnv, projectRoot } from '../support/cluster.js';

test('make drills, the short run: every drill passes with its invariants', { timeout: 20 * 60_000 }, () => {
  const results = join(clusterEnv().clusterDir, 'drills/reduced.json');
  const r = spawnSync(process.execPath, [join(projectRoot, 'dist/test/drills/run.js')], {
    env: { ...process.env, DRILLS_REDUCED: '1', DRILLS_RESULTS: results },
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    timeout: 19 * 60_000,
  });
  process.stdout.write(r.stdout);
  assert.equal(r.status, 0, `the drills failed:\n${r.stdout}\n${r.stderr.slice(-4000)}`);
  const out = JSON.parse(readFileSync(results, 'utf8')) as { results: Array<{ drill: string; ok: boolean }> };
  const drills = new Set(out.results.map((x) => x.drill));
  for (const name of ['agent-kill', 'runtime-restart', 'apiserver-down', 'watch-faults', 'bad-input', 'churn', 'disk-full', 'teardown']) assert.ok(drills.has(name), `${name} ran`);
  assert.ok(out.results.every((x) => x.ok));
});
