// Environment files (fileKeyRef): the kubelet's strict parser, and a file the pod controls read
// without leaving its volume.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { envFileValue, EnvFileSyntaxError } from '../../../src/runtime/env-file.js';
import { makeEnvironment } from '../../../src/runtime/env.js';
import { SyncError } from '../../../src/runtime/errors.js';

test('env files: KEY=\'value\' with comments, blank lines, several lines in quotes; KEY= \'v\' is empty; bad lines refused', () => {
  const text = "# made by the init container\n\n  CONFIG_1='value1' # a comment\nCONFIG_2='two\nlines'\nEMPTY= 'ignored'\n";
  assert.equal(envFileValue(text, 'CONFIG_1'), 'value1');
  assert.equal(envFileValue(text, 'CONFIG_2'), 'two\nlines');
  assert.equal(envFileValue(text, 'EMPTY'), '');
  assert.equal(envFileValue(text, 'MISSING'), '');
  for (const [bad, why] of [['A=unquoted\n', /must be enclosed in single quotes/], ['A =\'x\'\n', /whitespace before '='/], ['noequals\n', /missing '='/], ["A='x' y\n", /unexpected content after closing quote/], ["A='open\n", /starting at line 1: unclosed single quote/], ["='x'\n", /empty variable name/]] as const) {
    assert.throws(() => envFileValue(bad, 'A'), (e: Error) => e instanceof EnvFileSyntaxError && why.test(e.message), bad);
  }
});

test('fileKeyRef: the value from the volume\'s file; a missing volume, key or unreadable file is CreateContainerConfigError in the kubelet\'s words; optional is skipped', async () => {
  const vol = mkdtempSync(join(tmpdir(), 'envfile-vol-'));
  writeFileSync(join(vol, 'config.env'), "CONFIG_1='value1'\n");
  symlinkSync('/etc/hostname', join(vol, 'host.env'));
  const pod: V1Pod = { metadata: { name: 'p', namespace: 'n', uid: 'u' }, spec: { containers: [] } };
  const env = (container: V1Container, volumes: Record<string, string> = { config: vol }) =>
    makeEnvironment({ pod, container, podIPs: [], hostIP: '', nodeName: 'node', memoryCapacity: 0, volumePath: (n) => volumes[n] });
  const ref = (key: string, path = 'config.env', optional?: boolean, volumeName = 'config') => ({ name: key, valueFrom: { fileKeyRef: { volumeName, path, key, optional } } });
  assert.deepEqual(await env({ name: 'c', env: [ref('CONFIG_1')] }), [{ key: 'CONFIG_1', value: 'value1' }]);
  assert.deepEqual(await env({ name: 'c', env: [ref('NOPE', 'config.env', true)] }), []);
  const fails = async (c: V1Container, message: string | RegExp) =>
    assert.rejects(env(c), (e: Error) => e instanceof SyncError && e.reason === 'CreateContainerConfigError' && (typeof message === 'string' ? e.message === message : message.test(e.message)));
  await fails({ name: 'c', env: [ref('NOPE')] }, `environment variable key "NOPE" not found in file "${join(vol, 'config.env')}"`);
  await fails({ name: 'c', env: [ref('X', 'config.env', false, 'gone')] }, 'cannot find the volume "gone" referenced by FileKeyRef');
  await fails({ name: 'c', env: [ref('X', 'missing.env')] }, "couldn't parse env file");
  // A link the pod made to a host file is resolved inside the volume (where there is no such file), never read on the host.
  await fails({ name: 'c', env: [ref('X', 'host.env')] }, "couldn't parse env file");
});
