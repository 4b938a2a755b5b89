// RuntimeManagerDeps over the in-memory runtime, with a recorder that keeps events in a list.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1ObjectReference } from '@kubernetes/client-node';
import { ImageManager } from '../../../src/images/image-manager.js';
import type { EventRecorder, EventType } from '../../../src/kube/object-ref.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { Metrics } from '../../../src/observability/metrics.js';
import { Backoff, CRASH_LOOP_INITIAL_MS, CRASH_LOOP_MAX_MS } from '../../../src/runtime/backoff.js';
import type { RuntimeManagerDeps } from '../../../src/runtime/deps.js';
import { noProbeResults } from '../../../src/runtime/pod-actions.js';
import { FakeClock } from '../../../src/util/clock.js';
import { FakeRuntime } from './fake-runtime.js';

export class MemoryRecorder implements EventRecorder {
  events: Array<{ ref: V1ObjectReference; type: EventType; reason: string; message: string }> = [];
  event(ref: V1ObjectReference, type: EventType, reason: string, message: string): void {
    this.events.push({ ref, type, reason, message });
  }
  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}

export function fakeDeps(overrides: Partial<RuntimeManagerDeps> = {}) {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const recorder = new MemoryRecorder();
  const gone = new Set<string>();
  /** Pods that have ended but are still in the API (their runtime may go, their content not yet). */
  const ended = new Set<string>();
  const deps: RuntimeManagerDeps = {
    runtime,
    images: runtime,
    imageManager: new ImageManager({ images: runtime, recorder, clock }),
    runtimeName: 'fake',
    nodeName: 'node-1',
    nodeIP: '192.0.2.1',
    recorder,
    clock,
    logger: silentLogger(),
    metrics: new Metrics(),
    podState: {
      isPodTerminationRequested: () => false,
      shouldPodContentBeRemoved: (uid) => gone.has(uid),
      shouldPodRuntimeBeRemoved: (uid) => gone.has(uid) || ended.has(uid),
    },
    probes: { liveness: noProbeResults, startup: noProbeResults },
    podLogRoot: mkdtempSync(join(tmpdir(), 'nodelet-logs-')),
    containerLogsDir: mkdtempSync(join(tmpdir(), 'nodelet-container-logs-')),
    cpuCFSQuota: true,
    allowPrivileged: false,
    crashLoopBackoff: new Backoff(clock, CRASH_LOOP_INITIAL_MS, CRASH_LOOP_MAX_MS),
    memoryCapacity: 8 * 2 ** 30,
    clusterDomain: 'cluster.local',
    dns: { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf: '' },
    ...overrides,
  };
  return { deps, clock, runtime, recorder, gone, ended };
}
