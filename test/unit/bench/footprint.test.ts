// The whole-node footprint's accounting: which processes belong to which part, and the sums.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { containerdNode, footprintBetween, processRuntimeNode, readProcesses, type ProcSample } from '../../../bench/footprint.js';

const SOCK = '/c/run/containerd.sock';

function proc(pid: number, ppid: number, comm: string, ticks: number, rssKB: number, cmdline = comm): ProcSample {
  return { pid, ppid, comm, cmdline, ticks, rssKB, pssKB: rssKB / 2 };
}

test('a node on containerd: the agent, containerd, and per pod its shim and pause; the containers and other shims are not counted', () => {
  const before = new Map([
    [10, proc(10, 1, 'node', 1000, 100 * 1024)],
    [20, proc(20, 1, 'containerd', 500, 50 * 1024)],
    [30, proc(30, 1, 'containerd-shim', 10, 8 * 1024, `containerd-shim-runc-v2 -namespace k8s.io -address ${SOCK}`)],
    [31, proc(31, 30, 'pause', 0, 512)],
    [32, proc(32, 30, 'sleep', 0, 700)],
    [40, proc(40, 1, 'containerd-shim', 10, 8 * 1024, 'containerd-shim-runc-v2 -address /elsewhere.sock')],
    [41, proc(41, 40, 'pause', 0, 512)],
  ]);
  const after = new Map([...before].map(([pid, p]) => [pid, { ...p, ticks: p.ticks + pid }]));
  // A process that came in the window: its memory counts, its CPU (not at rest) does not.
  after.set(33, proc(33, 1, 'containerd-shim', 999, 8 * 1024, `containerd-shim-runc-v2 -address ${SOCK}`));
  const f = footprintBetween(before, after, 30_000, containerdNode(10, 20, SOCK));
  assert.deepEqual(f.parts.agent, { processes: 1, rss_mb: 100, pss_mb: 50, cpu_s_per_min: 0.2 });
  assert.deepEqual(f.parts.runtime, { processes: 1, rss_mb: 50, pss_mb: 25, cpu_s_per_min: 0.4 });
  assert.equal(f.parts.per_pod.processes, 3, 'two shims of our containerd and one pause');
  assert.equal(f.parts.per_pod.rss_mb, 16.5);
  assert.equal(f.parts.per_pod.cpu_s_per_min, 1.22, '(30 + 31) ticks over 30 s');
  assert.equal(f.rss_mb, 166.5);
  assert.equal(f.pss_mb, 83.3);
  assert.equal(f.cpu_s_per_min, 1.82);
});

test('a node on the process runtime: the agent (the runtime inside it) and its launchers; no runtime part', () => {
  const before = new Map([
    [10, proc(10, 1, 'node', 100, 90 * 1024)],
    [11, proc(11, 1, 'nodelet-launch', 1, 300)],
    [12, proc(12, 11, 'sleep', 5, 700)],
  ]);
  // PID 11 was reused by another program in the window: not the same process, no CPU carried over.
  const after = new Map([
    [10, proc(10, 1, 'node', 160, 90 * 1024)],
    [11, proc(11, 1, 'bash', 50, 300)],
    [13, proc(13, 1, 'nodelet-launch', 2, 300)],
  ]);
  const f = footprintBetween(before, after, 60_000, processRuntimeNode(10));
  assert.equal(f.parts.runtime, undefined);
  assert.deepEqual(f.parts.agent, { processes: 1, rss_mb: 90, pss_mb: 45, cpu_s_per_min: 0.6 });
  assert.deepEqual(f.parts.per_pod, { processes: 1, rss_mb: 0.3, pss_mb: 0.1, cpu_s_per_min: 0 });
});

test('readProcesses reads this very process from /proc', () => {
  const me = readProcesses().get(process.pid);
  assert.ok(me, 'the test process is listed');
  assert.equal(me.ppid, process.ppid);
  assert.ok(me.rssKB > 1000 && me.ticks >= 0, JSON.stringify(me));
});
