// The legacy /var/log/containers links: named as the kubelet names them, made only for a log that
// exists, removed with their container, and swept when their log is gone for good.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdtempSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { containerIDOfLegacyLogSymlink, createLegacyLogSymlink, legacyLogSymlink, removeLegacyLogSymlink, sweepDanglingLogSymlinks } from '../../../src/runtime/log-symlinks.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { CriNotFoundError } from '../../../src/cri/errors.js';

test('legacy log links: <pod>_<ns>_<container>-<id>.log, cut to 255 bytes; the container ID read back from the name', () => {
  assert.equal(legacyLogSymlink('/var/log/containers', 'web-0', 'prod', 'nginx', 'abc123'), '/var/log/containers/web-0_prod_nginx-abc123.log');
  const long = legacyLogSymlink('/d', 'p'.repeat(253), 'ns', 'c', 'f00d');
  assert.equal(long.split('/').pop()!.length, 255);
  assert.equal(containerIDOfLegacyLogSymlink('/d/web-0_prod_nginx-abc123.log'), 'abc123');
  assert.equal(containerIDOfLegacyLogSymlink('/d/notalog.txt'), undefined);
});

test('legacy log links: made for an existing log only, removed with the container; a dangling one swept unless its container still runs', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'links-')), 'containers');
  const logs = mkdtempSync(join(tmpdir(), 'logs-'));
  const states = new Map<string, string>([['run1', 'CONTAINER_RUNNING'], ['dead1', 'CONTAINER_EXITED']]);
  const deps = {
    containerLogsDir: dir,
    logger: silentLogger(),
    runtime: {
      async containerStatus(id: string) {
        const state = states.get(id);
        if (!state) throw new CriNotFoundError('ContainerStatus', 'fake', id);
        return { status: { state } };
      },
    },
  } as unknown as Parameters<typeof sweepDanglingLogSymlinks>[0];
  const pod = { name: 'p', namespace: 'n' };
  await createLegacyLogSymlink(deps, join(logs, 'missing.log'), pod, 'c', 'nolog');
  assert.equal(existsSync(legacyLogSymlink(dir, 'p', 'n', 'c', 'nolog')), false, 'no dangling link is made');
  for (const id of ['run1', 'dead1', 'gone1', 'kept1']) {
    writeFileSync(join(logs, `${id}.log`), 'x\n');
    await createLegacyLogSymlink(deps, join(logs, `${id}.log`), pod, 'c', id);
  }
  const link = legacyLogSymlink(dir, 'p', 'n', 'c', 'kept1');
  assert.ok(lstatSync(link).isSymbolicLink());
  assert.equal(readlinkSync(link), join(logs, 'kept1.log'));
  await removeLegacyLogSymlink(deps, pod, 'c', 'kept1');
  assert.equal(existsSync(link), false);
  // Logs gone: a running container's link waits for its next file; an exited or unknown one's goes.
  for (const id of ['run1', 'dead1', 'gone1']) rmSync(join(logs, `${id}.log`));
  symlinkSync('/nonexistent', join(dir, 'not-ours.txt'));
  assert.equal(await sweepDanglingLogSymlinks(deps), 2);
  assert.ok(lstatSync(legacyLogSymlink(dir, 'p', 'n', 'c', 'run1')).isSymbolicLink());
  assert.ok(lstatSync(join(dir, 'not-ours.txt')).isSymbolicLink(), 'only *.log links are the GC\'s');
});
