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
import type { RunningPod } from '../runtime/types.js';
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
  /** Pod cgroups of pods that may still run (known and not terminated, or running) are kept; the others go. */
  podCgroups?: { cleanup(possiblyRunning: (uid: string) => boolean): void };
  isTerminated?(uid: string): boolean;
  /** What the PLEG last saw run (pod UID -> object ID -> state), or undefined when it is not current. */
  plegSeen?(): ReadonlyMap<string, ReadonlyMap<string, string>> | undefined;
}

/** Longer than the PLEG can lag behind the runtime while it is healthy (its relist period, or an event's delivery). */
const VIEW_LAG_MS = 10_000;

/** What runs in the runtime: pods with a ready sandbox or a running container, and those containers. */
interface RunningView {
  uids: Set<string>;
  containerIDs: Set<string>;
  podsWithReadySandbox: number;
}

function viewOfPods(pods: RunningPod[]): RunningView {
  return {
    uids: new Set(pods.map((p) => p.uid)),
    containerIDs: new Set(pods.flatMap((p) => p.containers.map((c) => c.id.id))),
    podsWithReadySandbox: pods.filter((p) => p.sandboxes.some((s) => s.state === 'running')).length,
  };
}

function viewOfPleg(seen: ReadonlyMap<string, ReadonlyMap<string, string>>): RunningView {
  const view: RunningView = { uids: new Set(), containerIDs: new Set(), podsWithReadySandbox: 0 };
  for (const [uid, objects] of seen) {
    let ready = false;
    for (const [id, state] of objects) {
      if (state === 'CONTAINER_RUNNING') view.containerIDs.add(id);
      if (state === 'CONTAINER_RUNNING' || state === 'SANDBOX_READY') view.uids.add(uid);
      if (state === 'SANDBOX_READY') ready = true;
    }
    if (ready) view.podsWithReadySandbox++;
  }
  return view;
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
  // While the PLEG is current (its relist and the runtime's events), what runs is read from it: two
  // lists of every sandbox and container every 2 s were most of an idle node's CRI traffic. The
  // runtime is listed only to kill what no worker has (for its names), or when the PLEG is not current.
  const seen = ctx.plegSeen?.();
  let pods = seen ? undefined : await getPods(ctx.deps, false);
  const running = seen ? viewOfPleg(seen) : viewOfPods(pods!);
  // A container started after the PLEG last looked is not in its view: such recent ones are kept.
  ctx.resizer.actuated.retain(running.containerIDs, seen ? ctx.deps.clock.now() - VIEW_LAG_MS : Infinity);
  ctx.metrics.runningPods.set(running.podsWithReadySandbox);
  if ([...running.uids].some((uid) => !ctx.isKnown(uid))) {
    pods ??= await getPods(ctx.deps, false);
    for (const p of pods) {
      if (ctx.isKnown(p.uid)) continue;
      ctx.logger.info('killing unwanted pod', { pod: `${p.namespace}/${p.name}`, uid: p.uid });
      const err = (await killPodWithSyncResult(ctx.deps, undefined, p)).error();
      if (err) ctx.logger.warn('failed to kill unwanted pod', { uid: p.uid, error: err.message });
    }
  }
  // Directories of pods no source has any more, and whose containers are gone.
  const removed = await ctx.volumes.cleanupOrphans((uid) => ctx.isKnown(uid) || running.uids.has(uid));
  if (removed.length) ctx.logger.info('removed orphaned pod directories', { uids: removed });
  ctx.podCgroups?.cleanup((uid) => (ctx.isKnown(uid) && !ctx.isTerminated?.(uid)) || running.uids.has(uid));
}
