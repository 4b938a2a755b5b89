// The process runtime's CRI container events from its own calls and from what it finds: a
// container that ended while the runtime was down is STOPPED (with its exit code in the statuses),
// a removed container DELETED, a stopped and removed sandbox STOPPED and DELETED under its own ID,
// each with the pod's sandbox status; a sandbox whose PID namespace holder died, STOPPED at the
// sweep. Records are written to disk as a runtime leaves them; /proc and the directory watch are
// fakes, so nothing is launched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerEventMessage } from '../../../src/procruntime/container-events.js';
import { ProcessRuntime } from '../../../src/procruntime/runtime.js';
import { FakeClock } from '../../../src/util/clock.js';

test('events for what the runtime finds and does, with the pod statuses', async () => {
  const root = mkdtempSync(join(tmpdir(), 'rt-events-'));
  const sb = { id: 'sb1', config: { metadata: { name: 'p', uid: 'uid-1', namespace: 'ns', attempt: 0 }, labels: { team: 'a' } }, state: 'SANDBOX_READY', createdAt: '1', ip: '' };
  mkdirSync(join(root, 'sandboxes', 'sb1'), { recursive: true });
  writeFileSync(join(root, 'sandboxes', 'sb1', 'sandbox.json'), JSON.stringify(sb));
  // A pod sharing its PID namespace, whose holder process is gone: nothing but the sweep sees it.
  const sb2 = { ...sb, id: 'sb2', config: { ...sb.config, metadata: { ...sb.config.metadata, uid: 'uid-2' } }, namespaces: { ips: [], pidHolder: { pid: 999_999, pidStart: '1' } } };
  mkdirSync(join(root, 'sandboxes', 'sb2'), { recursive: true });
  writeFileSync(join(root, 'sandboxes', 'sb2', 'sandbox.json'), JSON.stringify(sb2));
  const container = (id: string, state: string) => ({
    id,
    sandboxId: 'sb1',
    config: { metadata: { name: id, attempt: 0 } },
    imageId: 'img',
    imageRef: 'nodelet.test/busybox:1',
    state,
    createdAt: '1',
    startedAt: '2',
    finishedAt: '0',
    exitCode: 0,
    reason: '',
    message: '',
    pid: 999_999,
    pidStart: '1',
    isolation: 'launcher',
    logPath: '',
    stdout: { offset: 0, pending: '' },
    stderr: { offset: 0, pending: '' },
  });
  for (const c of [container('ended', 'CONTAINER_RUNNING'), container('runs', 'CONTAINER_RUNNING')]) {
    const dir = join(root, 'containers', c.id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'container.json'), JSON.stringify(c));
    writeFileSync(join(dir, 'stdout'), '');
    writeFileSync(join(dir, 'stderr'), '');
  }
  // 'ended' finished while the runtime was away: its monitor wrote the code. 'runs' still runs.
  writeFileSync(join(root, 'containers', 'ended', 'status.json'), '{"child-pid": 999999}\n{"exit-code": 2}\n');
  const clock = new FakeClock();
  const alive = new Set(['runs']);
  const rt = new ProcessRuntime({
    root,
    clock,
    watchDir: () => ({ close: () => undefined }),
    proc: { running: (c) => alive.has(c.id), exitCode: (dir) => (dir.endsWith('ended') ? 2 : undefined), killLeftovers: () => undefined },
  });
  const got: ContainerEventMessage[] = [];
  rt.events.subscribe((e) => got.push(e));
  try {
    await rt.start(true);
    await rt.events.flushed();
    assert.deepEqual(got.map((e) => [e.container_id, e.container_event_type]), [['ended', 'CONTAINER_STOPPED_EVENT']]);
    const stopped = got[0]!;
    assert.equal((stopped.pod_sandbox_status as { metadata: { uid: string } }).metadata.uid, 'uid-1');
    const statuses = stopped.containers_statuses as Array<{ id: string; state: string; exit_code: number; reason: string }>;
    assert.deepEqual(statuses.map((s) => [s.id, s.state, s.exit_code, s.reason]).sort(), [['ended', 'CONTAINER_EXITED', 2, 'Error'], ['runs', 'CONTAINER_RUNNING', 0, '']]);

    got.length = 0;
    clock.step(5000);
    clock.step(5000);
    await rt.events.flushed();
    assert.deepEqual(got.map((e) => [e.container_id, e.container_event_type, (e.pod_sandbox_status as { state: string }).state]), [['sb2', 'CONTAINER_STOPPED_EVENT', 'SANDBOX_NOTREADY']], 'found by the sweep, once');

    got.length = 0;
    await rt.removeContainer('ended');
    alive.delete('runs'); // what the stop's signal does to it
    await rt.stopPodSandbox('sb1'); // stops 'runs' first
    await rt.removePodSandbox('sb1');
    await rt.events.flushed();
    assert.deepEqual(got.map((e) => [e.container_id, e.container_event_type]), [
      ['ended', 'CONTAINER_DELETED_EVENT'],
      ['runs', 'CONTAINER_STOPPED_EVENT'],
      ['sb1', 'CONTAINER_STOPPED_EVENT'],
      ['runs', 'CONTAINER_DELETED_EVENT'],
      ['sb1', 'CONTAINER_DELETED_EVENT'],
    ]);
    assert.deepEqual((got[0]!.containers_statuses as Array<{ id: string }>).map((s) => s.id), ['runs'], 'a deleted container is no longer among the statuses');
    const sandboxStates = got.filter((e) => e.container_id === 'sb1').map((e) => (e.pod_sandbox_status as { state: string }).state);
    assert.deepEqual(sandboxStates, ['SANDBOX_NOTREADY', 'SANDBOX_NOTREADY']);
    assert.ok(got.every((e) => e.created_at === String(BigInt(clock.now()) * 1_000_000n)));
  } finally {
    rt.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
