// The sync history's memory bound: 300 pods with 1,000 syncs each against the same run with no
// history. The agent itself cannot be driven through 300,000 syncs in the bench's time (a pod
// resyncs at most once a second, and a sync that acts costs milliseconds of CPU on 2 cores), so the
// agent's own history (DebugView.recordSync, which the agent calls after every sync) is filled the
// way syncs fill it: plans made by explainPodActions from computePodActions over runtime states of a
// crash loop, a changed image and a lost sandbox, with the results and messages such syncs have.
// Each run is a process of its own started with the agent's flags; RSS is read after a full GC.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { DebugView } from '../src/agent/debug-view.js';
import type { PodSandboxStatus } from '../src/cri/types.js';
import { Backoff, containerBackoffKey } from '../src/runtime/backoff.js';
import { hashContainer } from '../src/runtime/hash.js';
import { computePodActions } from '../src/runtime/pod-actions.js';
import { explainPodActions } from '../src/runtime/plan.js';
import { PodSyncResult, SyncResult } from '../src/runtime/sync-result.js';
import type { ContainerStatus, PodStatus } from '../src/runtime/types.js';
import { FakeClock } from '../src/util/clock.js';

export interface HistoryMemory {
  pods: number;
  syncs_per_pod: number;
  history_length: number;
  records_kept: number;
  rss_mb_with: number;
  rss_mb_without: number;
  rss_delta_mb: number;
  heap_delta_mb: number;
}

const run = promisify(execFile);

/** Both runs, each in a fresh process with the agent's flags (its first line). */
export async function measureHistoryMemory(pods = 300, syncs = 1000, length = 20): Promise<HistoryMemory> {
  const self = fileURLToPath(import.meta.url);
  const once = async (len: number) => {
    const { stdout } = await run(process.execPath, ['--max-semi-space-size=8', '--expose-gc', self, '--fill', String(pods), String(syncs), String(len)], { env: { ...process.env, MALLOC_ARENA_MAX: '2' }, maxBuffer: 1 << 20 });
    return JSON.parse(stdout) as { rssMB: number; heapMB: number; records: number };
  };
  const without = await once(0);
  const withHistory = await once(length);
  const r = (x: number) => Math.round(x * 10) / 10;
  return {
    pods,
    syncs_per_pod: syncs,
    history_length: length,
    records_kept: withHistory.records,
    rss_mb_with: r(withHistory.rssMB),
    rss_mb_without: r(without.rssMB),
    rss_delta_mb: r(withHistory.rssMB - without.rssMB),
    heap_delta_mb: r(withHistory.heapMB - without.heapMB),
  };
}

function sandbox(pod: V1Pod, attempt: number, ready: boolean): PodSandboxStatus {
  return {
    id: `${pod.metadata!.uid!.replace(/-/g, '')}${attempt}`.padEnd(64, '0'),
    metadata: { name: pod.metadata!.name!, uid: pod.metadata!.uid!, namespace: 'default', attempt },
    state: ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
    created_at: String(BigInt(attempt + 1) * 1_000_000_000n),
    network: { ip: '10.88.0.7', additional_ips: [] },
    linux: { namespaces: { options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD', target_id: '', userns_options: null } } },
    labels: {},
    annotations: {},
    runtime_handler: '',
  } as unknown as PodSandboxStatus;
}

function instance(pod: V1Pod, state: ContainerStatus['state'], restartCount: number, finishedAt: number): ContainerStatus {
  const c = pod.spec!.containers[0]!;
  return { id: { type: 'nodelet-process', id: `${restartCount}`.padStart(64, 'c') }, name: c.name, state, createdAt: 2000, startedAt: 2000, finishedAt, exitCode: state === 'exited' ? 1 : 0, image: c.image!, imageID: 'sha256:'.padEnd(71, 'a'), imageRef: 'sha256:'.padEnd(71, 'a'), hash: hashContainer(c), restartCount, reason: state === 'exited' ? 'Error' : '', message: '' };
}

/** One pod's syncs, the way a crash loop, a changed image and a lost sandbox fill its history. */
function fill(view: DebugView, clock: FakeClock, backoff: Backoff, i: number, syncs: number): void {
  const uid = `0000${i}`.slice(-4).padStart(8, 'a') + '-1111-2222-3333-444455556666';
  const pod: V1Pod = { metadata: { name: `crashloop-${i}-4f9a2c`, namespace: 'default', uid }, spec: { containers: [{ name: 'app', image: 'nodelet.test/busybox:1', command: ['sh', '-c', 'exit 1'] }] } };
  const status = (containers: ContainerStatus[], ready = true): PodStatus => ({ uid, name: pod.metadata!.name!, namespace: 'default', ips: ['10.88.0.7'], sandboxStatuses: [sandbox(pod, 0, ready)], containerStatuses: containers, timestamp: clock.now() });
  const podText = `${pod.metadata!.name}_default(${uid})`;
  const key = containerBackoffKey(pod.metadata!.name!, 'default', uid, 'app', hashContainer(pod.spec!.containers[0]!));
  for (let n = 0; n < syncs; n++) {
    const at = clock.now();
    const result = new PodSyncResult();
    let st: PodStatus;
    switch (n % 4) {
      case 0: {
        // Exited, backing off: the start waits, reported as CrashLoopBackOff.
        st = status([instance(pod, 'exited', n, at - 500)]);
        backoff.next(key, at - 500);
        const r = result.add(new SyncResult('StartContainer', 'app'));
        r.fail('CrashLoopBackOff', `back-off 5m0s restarting failed container=app pod=${podText}`);
        break;
      }
      case 1:
        // The back-off over: started again.
        backoff.reset(key);
        st = status([instance(pod, 'exited', n, at - 60_000)]);
        result.add(new SyncResult('StartContainer', 'app')).durationMs = 41;
        break;
      case 2:
        // A resync with nothing to do (folded into the entry before it when that was one too).
        st = status([instance(pod, 'running', n, 0)]);
        break;
      default: {
        // The sandbox lost behind the agent's back: killed and made again, the container with it.
        st = status([instance(pod, 'exited', n, at - 100)], false);
        result.add(new SyncResult('KillPodSandbox', st.sandboxStatuses[0]!.id)).durationMs = 12;
        result.add(new SyncResult('CreatePodSandbox', `default/${pod.metadata!.name}`)).durationMs = 63;
        result.add(new SyncResult('StartContainer', 'app')).durationMs = 44;
      }
    }
    const probes = { liveness: { get: () => undefined }, startup: { get: () => undefined } };
    result.plan = explainPodActions({ pod, status: st, actions: computePodActions(pod, st, probes), probes, backoff });
    if (n % 4 !== 2) result.add(new SyncResult('ConfigPodSandbox', st.sandboxStatuses[0]!.id));
    view.recordSync(uid, n % 4 === 0 ? 'pleg' : n % 4 === 1 ? 'back-off' : n % 4 === 2 ? 'resync' : 'pleg', at, n % 4 === 2 ? undefined : result);
    clock.step(1000);
  }
}

async function child(pods: number, syncs: number, length: number): Promise<void> {
  const clock = new FakeClock();
  const backoff = new Backoff(clock, 10_000, 300_000);
  const none = () => {
    throw new Error('not used');
  };
  const view = new DebugView({ clock, workers: { state: () => undefined, isPodTerminationRequested: () => false, terminatingPod: () => undefined }, pods: () => [], podStatus: () => undefined, deps: none, allocatedPod: (p) => p }, length);
  for (let i = 0; i < pods; i++) fill(view, clock, backoff, i, syncs);
  const gc = (globalThis as { gc?: () => void }).gc!;
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  const m = process.memoryUsage();
  process.stdout.write(JSON.stringify({ rssMB: m.rss / 2 ** 20, heapMB: m.heapUsed / 2 ** 20, records: view.history.size().records }));
}

if (process.argv[2] === '--fill') void child(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]));
