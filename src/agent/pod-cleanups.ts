// The agent's housekeeping pass every 2 s, as the kubelet's HandlePodCleanups: whatever runs in
// the runtime for a pod no worker has is killed, per-pod state of pods gone is dropped, and pod
// directories nothing uses any more are removed.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ProbeManager } from '../prober/manager.js';
import type { ServiceCache } from '../kube/service-cache.js';
import type { RuntimeManagerDeps } from '../runtime/deps.js';
import { killPodWithSyncResult } from '../runtime/kill.js';
import { getPods } from '../runtime/pod-status.js';
import type { VolumeManager } from '../volumes/volume-manager.js';
import type { PodResizer } from './pod-resize.js';

export interface PodCleanupContext {
  deps: RuntimeManagerDeps;
  logger: Logger;
  metrics: Metrics;
  probes: ProbeManager;
  resizer: PodResizer;
  volumes: VolumeManager;
  services?: ServiceCache;
  /** Every pod the sources have (for the namespaces whose services are kept). */
  pods(): V1Pod[];
  /** Pods that have a worker, and those of them not terminated. */
  isKnown(uid: string): boolean;
  activePods(): V1Pod[];
  /** A resize allocated now: true when its pod should sync. */
  resize(pod: V1Pod): boolean;
  wake(uid: string): void;
}

export async function handlePodCleanups(ctx: PodCleanupContext): Promise<void> {
  ctx.services?.retain(ctx.pods().map((p) => p.metadata?.namespace ?? ''));
  ctx.probes.cleanupPods((uid) => ctx.isKnown(uid));
  // Back-offs quiet for twice their maximum are forgotten, so a long-lived node's maps stay small.
  ctx.deps.crashLoopBackoff.gc();
  ctx.deps.imageManager.gc();
  // Resizes waiting for room are tried again (others may have left); an allocated one syncs now.
  for (const uid of ctx.resizer.due()) {
    const pod = ctx.activePods().find((p) => p.metadata?.uid === uid);
    if (pod && ctx.resize(pod)) ctx.wake(uid);
  }
  const running = await getPods(ctx.deps, false);
  ctx.resizer.actuated.retain(new Set(running.flatMap((p) => p.containers.map((c) => c.id.id))));
  ctx.metrics.runningPods.set(running.filter((p) => p.sandboxes.some((s) => s.state === 'running')).length);
  for (const p of running) {
    if (ctx.isKnown(p.uid)) continue;
    ctx.logger.info('killing unwanted pod', { pod: `${p.namespace}/${p.name}`, uid: p.uid });
    const err = (await killPodWithSyncResult(ctx.deps, undefined, p)).error();
    if (err) ctx.logger.warn('failed to kill unwanted pod', { uid: p.uid, error: err.message });
  }
  // Directories of pods no source has any more, and whose containers are gone.
  const runningUIDs = new Set(running.map((p) => p.uid));
  const removed = await ctx.volumes.cleanupOrphans((uid) => ctx.isKnown(uid) || runningUIDs.has(uid));
  if (removed.length) ctx.logger.info('removed orphaned pod directories', { uids: removed });
}
