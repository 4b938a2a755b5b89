// The process runtime's running containers without a poll: output and exits looked at when the
// container's files change, a slow sweep as the safety net, and at rest nothing read per container
// but at the sweep. Clock, directory watch and /proc are fakes, the output files real.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerSupervisor, type ProcSeam } from '../../../src/procruntime/container-supervisor.js';
import type { ContainerRecord } from '../../../src/procruntime/records.js';
import { FakeClock } from '../../../src/util/clock.js';

/** A fake watch: the test says which file changed; it counts the watches open. */
class FakeWatches {
  readonly handlers = new Map<string, (file: string | null) => void>();
  failFor = new Set<string>();
  watchDir = (dir: string, onChange: (file: string | null) => void) => {
    if (this.failFor.has(dir)) throw new Error('ENOSPC: no inotify watches left');
    this.handlers.set(dir, onChange);
    return { close: () => this.handlers.delete(dir) };
  };
  change(dir: string, file: string): void {
    this.handlers.get(dir)?.(file);
  }
}

/** /proc as the test sets it, counting every read. */
class FakeProc implements ProcSeam {
  alive = new Set<string>();
  exitCodes = new Map<string, number>();
  runningReads = 0;
  exitReads = 0;
  running = (c: ContainerRecord) => {
    this.runningReads++;
    return this.alive.has(c.id);
  };
  exitCode = (dir: string) => {
    this.exitReads++;
    return this.exitCodes.get(dir);
  };
  killLeftovers = () => undefined;
}

function setup(n: number, opts: { logPath?: (dir: string) => string } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'supervisor-'));
  const clock = new FakeClock();
  const watches = new FakeWatches();
  const proc = new FakeProc();
  const containers = new Map<string, ContainerRecord>();
  const exited: ContainerRecord[] = [];
  const warnings: string[] = [];
  const oom = new Set<string>();
  for (let i = 0; i < n; i++) {
    const id = `c${i}`;
    const dir = join(root, id);
    mkdirSync(dir);
    writeFileSync(join(dir, 'stdout'), '');
    writeFileSync(join(dir, 'stderr'), '');
    const c = {
      id,
      sandboxId: 's',
      state: 'CONTAINER_RUNNING',
      isolation: 'launcher',
      pid: 1000 + i,
      pidStart: '1',
      logPath: opts.logPath ? opts.logPath(dir) : join(dir, 'cri.log'),
      stdout: { offset: 0, pending: '' },
      stderr: { offset: 0, pending: '' },
      exitCode: 0,
      reason: '',
      message: '',
    } as unknown as ContainerRecord;
    containers.set(id, c);
    proc.alive.add(id);
  }
  const persisted: string[] = [];
  const sup = new ContainerSupervisor({
    clock,
    container: (id) => containers.get(id),
    dir: (id) => join(root, id),
    persist: async (c) => void persisted.push(c.id),
    oomKilled: (id) => oom.has(id),
    exited: (c) => void exited.push(c),
    warn: (m) => void warnings.push(m),
    proc,
    watchDir: watches.watchDir,
  });
  sup.start(containers.values());
  return { root, clock, watches, proc, containers, exited, warnings, oom, sup, persisted, dir: (id: string) => join(root, id) };
}

test('at rest, running containers are read only at the slow sweep, not every 100 ms', () => {
  const t = setup(50);
  const afterStart = t.proc.runningReads;
  assert.equal(afterStart, 50, 'one look at each when adopted');
  t.clock.step(60_000);
  // A minute at rest: 12 sweeps of 50, where the old 100 ms poll made 600 reads of each.
  assert.equal(t.proc.runningReads - afterStart, 12 * 50);
  assert.equal(t.proc.exitReads, 0, 'no exit code is read while the process runs (launcher)');
  assert.equal(t.exited.length, 0);
  assert.equal(t.clock.pendingTimers(), 1, 'one timer for all: the sweep');
});

test('output reaches the CRI log on the watch event, without a look at /proc', () => {
  const t = setup(1);
  const reads = t.proc.runningReads;
  appendFileSync(join(t.dir('c0'), 'stdout'), 'hello\nwor');
  t.watches.change(t.dir('c0'), 'stdout');
  t.watches.change(t.dir('c0'), 'stdout'); // a second write before the look goes with the first
  t.clock.step(99);
  assert.equal(t.persisted.length, 0, 'output is looked at no more often than every 100 ms');
  t.clock.step(1);
  assert.match(readFileSync(t.containers.get('c0')!.logPath, 'utf8'), /^\S+ stdout F hello\n$/);
  assert.equal(t.proc.runningReads, reads);
  assert.equal(t.persisted.length, 1, 'the new offsets are saved');
  // More output within the second: in the log within 100 ms all the same, its offsets saved once
  // the second is over, without another event.
  t.clock.step(100);
  appendFileSync(join(t.dir('c0'), 'stdout'), 'ld\n');
  t.watches.change(t.dir('c0'), 'stdout');
  t.clock.step(100);
  assert.match(readFileSync(t.containers.get('c0')!.logPath, 'utf8'), /stdout F world\n$/);
  assert.equal(t.persisted.length, 1);
  // A save is due at the end of the second: a write now is not held back until then.
  appendFileSync(join(t.dir('c0'), 'stdout'), 'again\n');
  t.watches.change(t.dir('c0'), 'stdout');
  t.clock.step(100);
  assert.match(readFileSync(t.containers.get('c0')!.logPath, 'utf8'), /stdout F again\n$/);
  assert.equal(t.persisted.length, 1);
  t.clock.step(1000);
  assert.equal(t.persisted.length, 2);
  const lines = readFileSync(t.containers.get('c0')!.logPath, 'utf8').trim().split('\n').map((l) => l.split(' ').slice(1).join(' '));
  assert.deepEqual(lines, ['stdout F hello', 'stdout F world', 'stdout F again']);
});

test('an exit is recorded when the monitor writes its code: code, reason, the last partial line', () => {
  const t = setup(2);
  t.oom.add('c1');
  appendFileSync(join(t.dir('c0'), 'stderr'), 'bye');
  for (const [id, code] of [['c0', 3], ['c1', 137]] as const) {
    t.proc.alive.delete(id);
    t.proc.exitCodes.set(t.dir(id), code);
    t.watches.change(t.dir(id), 'status.json');
  }
  t.clock.step(20);
  const [c0, c1] = [t.containers.get('c0')!, t.containers.get('c1')!];
  assert.deepEqual([c0.state, c0.exitCode, c0.reason], ['CONTAINER_EXITED', 3, 'Error']);
  assert.deepEqual([c1.state, c1.exitCode, c1.reason], ['CONTAINER_EXITED', 137, 'OOMKilled']);
  assert.match(readFileSync(c0.logPath, 'utf8'), /stderr P bye\n$/);
  assert.deepEqual(t.exited.map((c) => c.id), ['c0', 'c1']);
  assert.equal(t.watches.handlers.size, 0, 'their watches are closed');
  t.clock.step(60_000);
  assert.equal(t.exited.length, 2, 'recorded once');
});

test('a process gone without an exit code (its monitor killed) is found by the sweep, then given a second', () => {
  const t = setup(1);
  t.proc.alive.delete('c0');
  t.clock.step(4999);
  assert.equal(t.exited.length, 0);
  t.clock.step(1); // the sweep: gone, no code yet
  assert.equal(t.exited.length, 0);
  t.clock.step(1000); // its grace is over: a look without waiting for the next sweep
  const c = t.containers.get('c0')!;
  assert.deepEqual([c.state, c.exitCode, c.reason], ['CONTAINER_EXITED', 137, 'Error']);
  assert.match(c.message, /exit code was not recorded/);
});

test('Completed on exit 0; StopContainer records the end before it returns', () => {
  const t = setup(1);
  t.proc.alive.delete('c0');
  t.proc.exitCodes.set(t.dir('c0'), 0);
  t.sup.stopped('c0', true);
  const c = t.containers.get('c0')!;
  assert.deepEqual([c.state, c.exitCode, c.reason], ['CONTAINER_EXITED', 0, 'Completed']);
});

test('a full log filesystem holds the output back and retries once a second, with no event', () => {
  const t = setup(1, { logPath: () => '/dev/full' });
  appendFileSync(join(t.dir('c0'), 'stdout'), 'kept\n');
  t.watches.change(t.dir('c0'), 'stdout');
  t.clock.step(100);
  assert.deepEqual(t.warnings, ['container log cannot be written: its output is held back until it can']);
  const c = t.containers.get('c0')!;
  assert.equal(c.stdout.offset, 0, 'nothing consumed');
  c.logPath = join(t.dir('c0'), 'cri.log');
  t.clock.step(999);
  assert.equal(c.stdout.offset, 0, 'not before the second is over');
  t.clock.step(1);
  assert.equal(t.warnings[1], 'container log written again: the output held back is in it');
  assert.match(readFileSync(c.logPath, 'utf8'), /stdout F kept\n$/);
});

test('a container whose directory cannot be watched is polled as before', () => {
  const root = mkdtempSync(join(tmpdir(), 'supervisor-'));
  const t = setup(0);
  const dir = join(root, 'x');
  mkdirSync(dir);
  t.watches.failFor.add(dir);
  const c = { id: 'x', state: 'CONTAINER_RUNNING', isolation: 'launcher', logPath: '', stdout: { offset: 0, pending: '' }, stderr: { offset: 0, pending: '' } } as unknown as ContainerRecord;
  const sup = new ContainerSupervisor({
    clock: t.clock,
    container: () => c,
    dir: () => dir,
    persist: async () => undefined,
    oomKilled: () => false,
    exited: () => undefined,
    warn: () => undefined,
    proc: t.proc,
    watchDir: t.watches.watchDir,
  });
  sup.start([c]);
  assert.equal(sup.polled, 1);
  t.proc.alive.add('x');
  const before = t.proc.runningReads;
  t.clock.step(1000);
  assert.equal(t.proc.runningReads - before, 10);
});

test('adopted after a restart: a container that ended meanwhile is recorded at once', () => {
  const root = mkdtempSync(join(tmpdir(), 'supervisor-'));
  const clock = new FakeClock();
  const watches = new FakeWatches();
  const proc = new FakeProc();
  proc.exitCodes.set(join(root, 'a'), 0);
  mkdirSync(join(root, 'a'));
  const c = { id: 'a', state: 'CONTAINER_RUNNING', isolation: 'launcher', logPath: '', stdout: { offset: 0, pending: '' }, stderr: { offset: 0, pending: '' } } as unknown as ContainerRecord;
  const ended: string[] = [];
  const sup = new ContainerSupervisor({ clock, container: () => c, dir: (id) => join(root, id), persist: async () => undefined, oomKilled: () => false, exited: (x) => void ended.push(x.id), warn: () => undefined, proc, watchDir: watches.watchDir });
  sup.start([c]);
  assert.deepEqual(ended, ['a']);
  assert.equal(c.reason, 'Completed');
});

test('the real watch (inotify) sees a write to the output and the monitor writing the exit code', async () => {
  const root = mkdtempSync(join(tmpdir(), 'supervisor-'));
  const dir = join(root, 'w');
  mkdirSync(dir);
  writeFileSync(join(dir, 'stdout'), '');
  writeFileSync(join(dir, 'stderr'), '');
  const clock = new FakeClock();
  const proc = new FakeProc();
  proc.alive.add('w');
  const c = { id: 'w', state: 'CONTAINER_RUNNING', isolation: 'launcher', logPath: join(dir, 'cri.log'), stdout: { offset: 0, pending: '' }, stderr: { offset: 0, pending: '' } } as unknown as ContainerRecord;
  const ended: string[] = [];
  const sup = new ContainerSupervisor({ clock, container: () => c, dir: () => dir, persist: async () => undefined, oomKilled: () => false, exited: (x) => void ended.push(x.id), warn: () => undefined, proc });
  sup.start([c]);
  try {
    const sweepOnly = clock.pendingTimers();
    const waitForEvent = async () => {
      for (let i = 0; i < 200 && clock.pendingTimers() === sweepOnly; i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(clock.pendingTimers() > sweepOnly, 'the watch scheduled a look');
    };
    appendFileSync(join(dir, 'stdout'), 'seen\n');
    await waitForEvent();
    clock.step(100);
    assert.match(readFileSync(c.logPath, 'utf8'), /stdout F seen\n$/);
    proc.alive.delete('w');
    proc.exitCodes.set(dir, 0);
    appendFileSync(join(dir, 'status.json'), '{"exit-code": 0}\n');
    await waitForEvent();
    clock.step(5);
    assert.deepEqual(ended, ['w']);
  } finally {
    sup.stop();
  }
});
