// The atomic writer: one ..data swap per change, links through it, exact modes, stale files gone,
// the kubelet's path checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validatePath, writeAtomic, type Payload } from '../../../src/volumes/atomic-writer.js';

const file = (text: string, mode = 0o644) => ({ data: Buffer.from(text), mode });

test('files are written in a timestamped directory behind ..data, and each top-level name links through it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-'));
  const changed = await writeAtomic(dir, new Map([['a', file('1')], ['sub/b', file('2', 0o400)]]), undefined, new Date(Date.UTC(2026, 11, 1, 12, 0, 5)));
  assert.equal(changed, true);
  const ts = readlinkSync(join(dir, '..data'));
  assert.match(ts, /^\.\.2026_12_01_12_00_05\.\w+$/);
  assert.equal(readlinkSync(join(dir, 'a')), '..data/a');
  assert.equal(readlinkSync(join(dir, 'sub')), '..data/sub');
  assert.equal(readFileSync(join(dir, 'sub/b'), 'utf8'), '2');
  assert.equal(statSync(join(dir, 'sub/b')).mode & 0o777, 0o400, 'the mode exactly, not the umask\'s');
  assert.equal(statSync(join(dir, ts)).mode & 0o777, 0o755);
});

test('an update swaps ..data to a new directory, removes what is gone and the old directory; no change writes nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-'));
  await writeAtomic(dir, new Map([['a', file('1')], ['b', file('x')]]));
  const first = readlinkSync(join(dir, '..data'));
  assert.equal(await writeAtomic(dir, new Map([['a', file('1')], ['b', file('x')]])), false);
  assert.equal(readlinkSync(join(dir, '..data')), first, 'unchanged content keeps its directory');

  assert.equal(await writeAtomic(dir, new Map([['a', file('2')]])), true);
  const second = readlinkSync(join(dir, '..data'));
  assert.notEqual(second, first);
  assert.equal(readFileSync(join(dir, 'a'), 'utf8'), '2');
  const names = readdirSync(dir).sort();
  assert.deepEqual(names, ['..data', second, 'a'].sort(), 'b and the old directory are gone');
  // A mode change alone is a change.
  assert.equal(await writeAtomic(dir, new Map([['a', file('2', 0o600)]])), true);
  assert.equal(statSync(join(dir, 'a')).mode & 0o777, 0o600);
});

test('a real file of a payload name is left alone (no link over it)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-'));
  writeFileSync(join(dir, 'a'), 'mine');
  await writeAtomic(dir, new Map([['a', file('theirs')]]));
  assert.equal(readFileSync(join(dir, 'a'), 'utf8'), 'mine');
});

test('invalid paths are refused with the kubelet\'s messages, and nothing is written', async () => {
  assert.throws(() => validatePath(''), /must not be empty/);
  assert.throws(() => validatePath('/etc/passwd'), /must be relative path: \/etc\/passwd/);
  assert.throws(() => validatePath('a/../../b'), /must not contain '\.\.': a\/\.\.\/\.\.\/b/);
  assert.throws(() => validatePath('..data'), /must not start with '\.\.'/);
  assert.throws(() => validatePath(`${'x'.repeat(256)}`), /255 characters/);
  const dir = mkdtempSync(join(tmpdir(), 'aw-'));
  const bad: Payload = new Map([['ok', file('1')], ['../escape', file('2')]]);
  await assert.rejects(writeAtomic(dir, bad), /must not contain/);
  assert.deepEqual(readdirSync(dir), []);
});
