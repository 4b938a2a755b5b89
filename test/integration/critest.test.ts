// The reduced critest run of `make test`: cri-tools' own specs for what the process runtime's
// launcher does (mount propagation, read-only and recursively read-only binds, no_new_privs, the
// bounding set, masked and read-only paths, seccomp, namespaces), run by hack/critest.sh (the
// harness of `make critest`) against a process runtime of its own, so that neither rots.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../support/cluster.js';

const FOCUS = [
  'Container Mount Propagation',
  'Container Mount Readonly',
  'NoNewPrivs',
  'capabilit',
  'MaskedPaths',
  'ReadonlyPaths',
  'ReadOnlyRootfs',
  'SeccompProfilePath',
  'NamespaceOption',
  'execSync',
].join('|');

test('critest, reduced: the launcher\'s specs pass, none skipped by us', { timeout: 15 * 60_000 }, () => {
  const r = spawnSync('bash', [join(projectRoot, 'hack/critest.sh')], { encoding: 'utf8', env: { ...process.env, CRITEST_FOCUS: FOCUS, CRITEST_TIMEOUT: '600' }, timeout: 14 * 60_000 });
  const out = `${r.stdout}\n${r.stderr}`;
  const counts = /(\d+) Passed \| (\d+) Failed \| \d+ Pending \| \d+ Skipped/.exec(out);
  assert.ok(counts, `critest printed no counts:\n${out.slice(-3000)}`);
  const [passed, failed] = [Number(counts[1]), Number(counts[2])];
  assert.equal(failed, 0, `critest failures:\n${out.split('\n').filter((l) => l.startsWith('[FAIL]')).join('\n')}`);
  // Propagation 3, read-only 5, no_new_privs 2, capabilities 4, masked/read-only paths 2,
  // read-only root 2, seccomp 7, namespaces 8, exec 2: a focus that matched much less has rotted.
  assert.ok(passed >= 30, `only ${passed} specs passed:\n${out.slice(-2000)}`);
});
