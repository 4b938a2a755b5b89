// The Summary API and resource metrics from CRI stats of an in-memory runtime: containers grouped
// by pod (the sandbox left out, the newest instance of a name), pod totals, and the metric lines
// metrics-server reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { buildSummary, NodeCpu, resourceMetrics } from '../../../src/server/stats.js';

const labels = (name: string) => ({ 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'ns', 'io.kubernetes.container.name': name });
const stat = (id: string, name: string, cpuNs: number, ws: number) => ({
  attributes: { id, metadata: { name, attempt: 0 }, labels: labels(name), annotations: {} },
  cpu: { timestamp: String(Date.UTC(2026, 11, 1) * 1e6), usage_core_nano_seconds: { value: String(cpuNs) }, usage_nano_cores: { value: '1000' }, psi: null },
  memory: { timestamp: String(Date.UTC(2026, 11, 1) * 1e6), working_set_bytes: { value: String(ws) }, available_bytes: null, usage_bytes: { value: String(ws * 2) }, rss_bytes: null, page_faults: null, major_page_faults: null, psi: null },
  writable_layer: null,
  swap: null,
  io: null,
});

test('containers grouped by pod with pod totals; the newest instance of a name; resource metric lines', async () => {
  const dir = mkdtempSync(`${tmpdir()}/stats-`);
  const s = await buildSummary(
    {
      nodeName: 'n1',
      podLogRoot: dir,
      rootDir: dir,
      listContainerStats: async () => [stat('a', 'app', 2e9, 100), stat('b', 'side', 1e9, 50), stat('old', 'app', 9e9, 999)] as never,
      listContainers: async () => [{ id: 'a', created_at: String(Date.UTC(2026, 11, 1, 10) * 1e6) }, { id: 'b', created_at: String(Date.UTC(2026, 11, 1, 10) * 1e6) }, { id: 'old', created_at: String(Date.UTC(2026, 11, 1, 9) * 1e6) }] as never,
      imageFsInfo: async () => ({ image_filesystems: [] }) as never,
      podStartTime: () => '2026-12-01T09:00:00Z',
      sandboxPid: async () => undefined,
      now: () => Date.UTC(2026, 11, 1, 12),
    },
    new NodeCpu(),
  );
  assert.equal(s.node.nodeName, 'n1');
  assert.equal(s.pods.length, 1);
  const p = s.pods[0]!;
  assert.deepEqual(p.podRef, { name: 'web', namespace: 'ns', uid: 'u1' });
  assert.equal(p.startTime, '2026-12-01T09:00:00Z');
  assert.deepEqual(p.containers.map((c) => [c.name, c.cpu?.usageCoreNanoSeconds]).sort(), [['app', 2e9], ['side', 1e9]]);
  assert.equal(p.cpu?.usageCoreNanoSeconds, 3e9);
  assert.equal(p.memory?.workingSetBytes, 150);
  const text = resourceMetrics(s);
  assert.match(text, /^container_cpu_usage_seconds_total\{container="app",namespace="ns",pod="web"\} 2 \d+$/m);
  assert.match(text, /^pod_memory_working_set_bytes\{namespace="ns",pod="web"\} 150 \d+$/m);
  assert.match(text, /^# TYPE container_cpu_usage_seconds_total counter$/m);
});

test('node CPU: core-seconds from /proc/stat (idle and iowait left out), a rate from two readings', () => {
  const cpu = new NodeCpu();
  const a = cpu.read(0, 'cpu  100 0 100 1000 50 0 0 0 0 0\n');
  assert.equal(a.usageCoreNanoSeconds, 2e9);
  assert.equal(a.usageNanoCores, undefined);
  const b = cpu.read(1000, 'cpu  150 0 150 1000 50 0 0 0 0 0\n');
  assert.equal(b.usageNanoCores, 1e9, 'one core busy over that second');
});

test('network figures from /proc/<pid>/net/dev: loopback left out, eth0 the default', async () => {
  const { parseNetDev } = await import('../../../src/server/stats.js');
  const text = 'Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n  eth0: 2000 20 3 0 0 0 0 0 4000 40 5 0 0 0 0 0\n';
  const n = parseNetDev(text, 't');
  assert.deepEqual(n, { time: 't', name: 'eth0', rxBytes: 2000, rxErrors: 3, txBytes: 4000, txErrors: 5, interfaces: [{ name: 'eth0', rxBytes: 2000, rxErrors: 3, txBytes: 4000, txErrors: 5 }] });
});
