// The process runtime's CRI log writer when the log cannot be written (its filesystem full): the
// output waits in the raw files, is retried once a second, and none of it is lost when it flows again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forward, forwardStreams, LOG_RETRY_MS, rawSize, RELEASE_BYTES, type StreamState } from '../../../src/procruntime/log-forwarder.js';

// Writes to /dev/full fail with ENOSPC, as on a full filesystem.
const FULL = '/dev/full';

test('a write that fails consumes nothing: the next one writes every line once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fwd-'));
  const raw = join(dir, 'stdout');
  const log = join(dir, 'out.log');
  writeFileSync(raw, 'one\ntw');
  const st: StreamState = { offset: 0, pending: '' };
  const err = forward(raw, 'stdout', FULL, st, 0);
  assert.equal(err?.code, 'ENOSPC');
  assert.deepEqual(st, { offset: 0, pending: '' }, 'nothing consumed');
  appendFileSync(raw, 'o\nthree\n');
  assert.equal(forward(raw, 'stdout', log, st, Date.UTC(2026, 0, 1)), undefined);
  const lines = readFileSync(log, 'utf8').trim().split('\n').map((l) => l.split(' ').slice(1).join(' '));
  assert.deepEqual(lines, ['stdout F one', 'stdout F two', 'stdout F three']);
  assert.equal(rawSize(dir), 14);
});

test('a blocked log is retried once a second, reported when it blocks and when it flows again', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fwd-'));
  writeFileSync(join(dir, 'stdout'), 'a\n');
  writeFileSync(join(dir, 'stderr'), '');
  const c = { logPath: FULL, stdout: { offset: 0, pending: '' }, stderr: { offset: 0, pending: '' } };
  const first = forwardStreams(c, dir, 1000, false, undefined);
  assert.equal(first.change, 'blocked');
  assert.deepEqual(first.block, { since: 1000, retryAt: 1000 + LOG_RETRY_MS, error: 'ENOSPC' });
  // Within the second: not tried (still blocked, nothing said again).
  c.logPath = join(dir, 'c.log');
  assert.deepEqual(forwardStreams(c, dir, 1500, false, first.block), { block: first.block });
  // Still failing at the retry: the block keeps its start and says nothing new.
  c.logPath = FULL;
  const again = forwardStreams(c, dir, 2000, false, first.block);
  assert.deepEqual(again, { block: { since: 1000, retryAt: 2000 + LOG_RETRY_MS, error: 'ENOSPC' }, change: undefined });
  c.logPath = join(dir, 'c.log');
  assert.deepEqual(forwardStreams(c, dir, 3000, false, again.block), { change: 'resumed' });
  assert.match(readFileSync(c.logPath, 'utf8'), / stdout F a\n$/);
  // A final flush is tried at once, blocked or not.
  appendFileSync(join(dir, 'stdout'), 'b');
  assert.equal(forwardStreams(c, dir, 3100, true, { since: 3050, retryAt: 9999, error: 'ENOSPC' }).change, 'resumed');
  assert.match(readFileSync(c.logPath, 'utf8'), / stdout P b\n$/);
});

test("what is in the CRI log is given back to the disk: a 24 MiB flood leaves the raw file's blocks under the release bound", () => {
  const dir = mkdtempSync(join(tmpdir(), 'fwd-release-'));
  const raw = join(dir, 'stdout');
  const log = join(dir, 'c.log');
  writeFileSync(raw, '');
  const st: StreamState = { offset: 0, pending: '' };
  const line = `${'x'.repeat(1023)}\n`;
  const mib = line.repeat(1024);
  for (let i = 0; i < 24; i++) {
    appendFileSync(raw, mib);
    assert.equal(forward(raw, 'stdout', log, st, 0), undefined);
    // The log itself would be rotated by the agent; here it is emptied to measure the raw file alone.
    if (i % 4 === 3) writeFileSync(log, '');
  }
  while (statSync(raw).size > st.offset) forward(raw, 'stdout', log, st, 0);
  assert.equal(statSync(raw).size, 24 * 1024 * 1024, 'the file keeps its size: the container appends on');
  assert.equal(st.offset, 24 * 1024 * 1024);
  assert.ok(st.released! >= 20 * 1024 * 1024, `released ${st.released}`);
  assert.ok(statSync(raw).blocks * 512 <= RELEASE_BYTES + 1024 * 1024, `${statSync(raw).blocks * 512} bytes still on disk`);
  // What is left readable is the unreleased tail: the forwarder never reads below its offset.
  appendFileSync(raw, 'after the hole\n');
  forward(raw, 'stdout', log, st, 0);
  assert.match(readFileSync(log, 'utf8'), /stdout F after the hole\n$/);
});
