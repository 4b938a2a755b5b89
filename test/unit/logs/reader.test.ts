// The CRI log reader against files written as containerd writes them: partial records joined,
// tail/since/limitBytes/timestamps/stream as the kubelet applies them, follow ending when the
// container stops, and a rotated file followed into its successor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedNanoTime, parseCriLogLine, readContainerLog, type LogReadOptions } from '../../../src/logs/reader.js';

const T = (s: number) => `2026-12-01T10:00:${String(s).padStart(2, '0')}.5Z`;
const LOG = [
  `${T(1)} stdout F one`,
  `${T(2)} stderr F two`,
  `${T(3)} stdout P thr`,
  `${T(3)} stdout F ee`,
  `${T(4)} stdout F four`,
  '',
].join('\n');

function file(text = LOG): string {
  const p = join(mkdtempSync(join(tmpdir(), 'logs-')), '0.log');
  writeFileSync(p, text);
  return p;
}

const base: LogReadOptions = { follow: false, timestamps: false, stream: 'All' };

async function read(path: string, opts: Partial<LogReadOptions> = {}, running = async () => false): Promise<string> {
  const out: Buffer[] = [];
  await readContainerLog(path, { ...base, ...opts }, running, { write: (b) => (out.push(Buffer.from(b)), true), drained: async () => undefined }, new AbortController().signal);
  return Buffer.concat(out).toString();
}

test('a CRI line is parsed into time, stream, tag and text; anything else is not a record', () => {
  const r = parseCriLogLine(Buffer.from('2026-12-01T10:00:01.123456789Z stderr P hello world'))!;
  assert.equal(r.stream, 'stderr');
  assert.equal(r.partial, true);
  assert.equal(r.text.toString(), 'hello world');
  assert.equal(r.timeMs, Date.UTC(2026, 11, 1, 10, 0, 1, 123));
  assert.equal(parseCriLogLine(Buffer.from('2026-12-01T10:00:01Z stdout F'))!.text.length, 0, 'an empty line');
  assert.equal(parseCriLogLine(Buffer.from('not a log line')), undefined);
  assert.equal(parseCriLogLine(Buffer.from('2026-12-01T10:00:01Z stdin F x')), undefined);
  assert.equal(fixedNanoTime('2026-12-01T10:00:01.5Z'), '2026-12-01T10:00:01.500000000Z');
  assert.equal(fixedNanoTime('2026-12-01T10:00:01+02:00'), '2026-12-01T10:00:01.000000000+02:00');
});

test('the whole log: partial records joined, both streams in file order', async () => {
  assert.equal(await read(file()), 'one\ntwo\nthree\nfour\n');
});

test('tailLines counts file lines from the end; more than there are is all of them', async () => {
  assert.equal(await read(file(), { tailLines: 1 }), 'four\n');
  assert.equal(await read(file(), { tailLines: 2 }), 'ee\nfour\n', 'a partial record is a line of the file, as the kubelet counts');
  assert.equal(await read(file(), { tailLines: 0 }), '');
  assert.equal(await read(file(), { tailLines: 99 }), 'one\ntwo\nthree\nfour\n');
});

test('since skips older records; limitBytes cuts; timestamps prefix each line once', async () => {
  assert.equal(await read(file(), { sinceMs: Date.UTC(2026, 11, 1, 10, 0, 3) }), 'three\nfour\n');
  assert.equal(await read(file(), { limitBytes: 6 }), 'one\ntw');
  assert.equal(await read(file(), { timestamps: true, tailLines: 3 }), '2026-12-01T10:00:03.500000000Z three\n2026-12-01T10:00:04.500000000Z four\n');
});

test('a single stream is filtered out of both', async () => {
  assert.equal(await read(file(), { stream: 'Stderr' }), 'two\n');
  assert.equal(await read(file(), { stream: 'Stdout' }), 'one\nthree\nfour\n');
});

test('an unterminated last line is shown when not following', async () => {
  assert.equal(await read(file(`${T(1)} stdout F a\n${T(2)} stdout F b`)), 'a\nb\n');
});

test('a missing file is an error naming it', async () => {
  await assert.rejects(read('/nonexistent/0.log'), /failed to try resolving symlinks in path "\/nonexistent\/0.log"/);
});

test('follow: new lines arrive while the container runs, the reader ends once it stops and the rest is read', async () => {
  const p = file(`${T(1)} stdout F first\n`);
  let running = true;
  const out: string[] = [];
  const done = readContainerLog(p, { ...base, follow: true }, async () => running, { write: (b) => (out.push(b.toString()), true), drained: async () => undefined }, new AbortController().signal);
  await new Promise((r) => setTimeout(r, 200));
  appendFileSync(p, `${T(2)} stdout F second\n`);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(out.join(''), 'first\nsecond\n', 'a change event wakes the follower');
  appendFileSync(p, `${T(3)} stdout F last\n`);
  running = false;
  await done;
  assert.equal(out.join(''), 'first\nsecond\nlast\n');
});

test('follow: a rotated file is read to its end, then the new file from its start', async () => {
  const p = file(`${T(1)} stdout F old-1\n`);
  const ac = new AbortController();
  const out: string[] = [];
  const done = readContainerLog(p, { ...base, follow: true }, async () => true, { write: (b) => (out.push(b.toString()), true), drained: async () => undefined }, ac.signal);
  await new Promise((r) => setTimeout(r, 200));
  appendFileSync(p, `${T(2)} stdout F old-2\n`);
  renameSync(p, `${p}.20261201-100000`);
  writeFileSync(p, `${T(3)} stdout F new-1\n`);
  const deadline = Date.now() + 5000;
  while (!out.join('').includes('new-1') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  ac.abort();
  await done;
  assert.equal(out.join(''), 'old-1\nold-2\nnew-1\n');
});

test('follow with tailLines starts that many lines from the end and goes on', async () => {
  const p = file();
  let running = true;
  const out: string[] = [];
  const done = readContainerLog(p, { ...base, follow: true, tailLines: 1 }, async () => running, { write: (b) => (out.push(b.toString()), true), drained: async () => undefined }, new AbortController().signal);
  await new Promise((r) => setTimeout(r, 200));
  appendFileSync(p, `${T(5)} stdout F five\n`);
  running = false;
  await done;
  assert.equal(out.join(''), 'four\nfive\n');
});
