// Container log rotation as the kubelet's log manager: the plan for rotated files, and a rotation
// against real files with an in-memory runtime (renamed, reopened, older ones gzipped, excess gone,
// renamed back when the runtime cannot reopen).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ContainerLogManager, planRotation, rotationStamp } from '../../../src/logs/rotation.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeClock } from '../../../src/util/clock.js';

test('the plan: leftovers removed, at most maxFiles-2 older files kept, the uncompressed among them compressed', () => {
  const p = planRotation(['0.log.20261201-100000.gz', '0.log.20261201-100100', '0.log.20261201-100200', '0.log.20261201-100200.gz.tmp', '0.log.20261201-090000', '0.log.20261201-090000.gz'], 4);
  assert.deepEqual(p.remove.sort(), ['0.log.20261201-090000', '0.log.20261201-090000.gz', '0.log.20261201-100000.gz', '0.log.20261201-100200.gz.tmp'].sort());
  assert.deepEqual(p.keep, ['0.log.20261201-100100', '0.log.20261201-100200']);
  assert.deepEqual(p.compress, ['0.log.20261201-100100', '0.log.20261201-100200']);
  assert.deepEqual(planRotation(['a.1'], 2), { remove: ['a.1'], keep: [], compress: [] }, 'maxFiles 2: only the new log and the one rotated now');
  assert.match(rotationStamp(Date.now()), /^\d{8}-\d{6}$/);
});

function fakeRuntime(log: string, reopenFails = false) {
  const calls: string[] = [];
  return {
    calls,
    listContainers: async () => [{ id: 'c1' }] as never,
    containerStatus: async () => ({ status: { log_path: log, state: 'CONTAINER_RUNNING' } }) as never,
    reopenContainerLog: async (id: string) => {
      calls.push(id);
      if (reopenFails) throw new Error('runtime down');
      writeFileSync(log, '');
    },
  };
}

test('a log at its size limit is rotated and reopened; the previous rotated one is gzipped; no more than maxFiles remain', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rot-'));
  const log = join(dir, '0.log');
  writeFileSync(join(dir, '0.log.20261201-000001'), 'oldest\n');
  writeFileSync(join(dir, '0.log.20261201-000002'), 'older\n');
  writeFileSync(log, 'x'.repeat(2048));
  const rt = fakeRuntime(log);
  const clock = new FakeClock(Date.UTC(2026, 11, 1, 12, 0, 0));
  const m = new ContainerLogManager(rt, { maxSizeBytes: 1024, maxFiles: 3 }, clock, silentLogger());
  await m.rotateAll();
  assert.deepEqual(rt.calls, ['c1']);
  const files = readdirSync(dir).sort();
  assert.equal(files.length, 3, files.join(' '));
  assert.ok(files.includes('0.log'));
  assert.ok(files.includes('0.log.20261201-000002.gz'), 'the older kept one is compressed');
  assert.equal(gunzipSync(readFileSync(join(dir, '0.log.20261201-000002.gz'))).toString(), 'older\n');
  const rotated = files.find((f) => f.startsWith('0.log.') && !f.endsWith('.gz'))!;
  assert.equal(readFileSync(join(dir, rotated), 'utf8').length, 2048, 'the rotated log is the whole old log, uncompressed');
  await m.rotateAll();
  assert.deepEqual(rt.calls, ['c1'], 'a small log is left alone');
});

test('when the runtime cannot reopen the log it is renamed back, to be tried again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rot-'));
  const log = join(dir, '0.log');
  writeFileSync(log, 'y'.repeat(100));
  const m = new ContainerLogManager(fakeRuntime(log, true), { maxSizeBytes: 10, maxFiles: 5 }, new FakeClock(), silentLogger());
  await m.rotateAll();
  assert.ok(existsSync(log));
  assert.deepEqual(readdirSync(dir), ['0.log']);
});

test('only the node\'s own containers are looked at, when the runtime is shared with other agents', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rot-'));
  const rt = fakeRuntime(join(dir, '0.log'));
  const filters: unknown[] = [];
  const m = new ContainerLogManager({ ...rt, listContainers: async (f?: unknown) => (filters.push(f), []) as never }, { maxSizeBytes: 10, maxFiles: 5 }, new FakeClock(), silentLogger(), 10_000, 'node-a');
  await m.rotateAll();
  assert.deepEqual(filters, [{ state: { state: 'CONTAINER_RUNNING' }, label_selector: { 'nodelet.io/node-name': 'node-a' } }]);
});
