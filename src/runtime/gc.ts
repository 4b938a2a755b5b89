// Container garbage collection, as the kubelet's containerGC: every container that is not running
// (exited, created but never started, unknown) beyond the policy, sandboxes that are neither ready
// nor hold a container (but a live pod's newest), and log directories of pods that are gone. The
// decisions are pure (planContainerGC, planSandboxGC); garbageCollect carries them out.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isNotFound } from '../cri/errors.js';
import type { Container, PodSandbox } from '../cri/types.js';
import { killContainer, removeContainer } from './container.js';
import type { RuntimeManagerDeps } from './deps.js';
import { getContainerInfoFromLabels, NodeNameLabel, PodUIDLabel } from './labels.js';
import { sweepDanglingLogSymlinks } from './log-symlinks.js';

export interface GCPolicy {
  /** Containers created more recently than this are kept (the kubelet's minimum-container-ttl-duration: 0). */
  minAgeMs: number;
  /** Dead instances kept per (pod, container name) (maximum-dead-containers-per-container: 1). */
  maxPerPodContainer: number;
  /** Dead containers kept on the node in all; negative for no limit (maximum-dead-containers: -1). */
  maxContainers: number;
}

export const defaultGCPolicy: GCPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

export interface GCReport {
  containersRemoved: number;
  sandboxesRemoved: number;
  logDirsRemoved: number;
  /** Legacy log links (log-symlinks.ts) whose log is gone. */
  logLinksRemoved: number;
}

/** What GC needs of a container. */
export interface GCContainer {
  id: string;
  name: string;
  podUID: string;
  sandboxID: string;
  createdAt: number;
  state: 'running' | 'created' | 'exited' | 'unknown';
}

export interface GCSandbox {
  id: string;
  podUID: string;
  createdAt: number;
  ready: boolean;
}

/** Answers for one pod: whether everything of it may go (it is deleted and terminated, or unknown once sources are ready). */
export type PodGone = (uid: string) => boolean;

const newestFirst = <T extends { createdAt: number }>(list: T[]) => [...list].sort((a, b) => b.createdAt - a.createdAt);

/** The containers to remove, in the order to remove them. */
export function planContainerGC(containers: GCContainer[], now: number, policy: GCPolicy, gone: PodGone): GCContainer[] {
  const units = new Map<string, GCContainer[]>();
  for (const c of containers) {
    if (c.state === 'running' || now - c.createdAt < policy.minAgeMs) continue;
    const key = `${c.podUID}/${c.name}`;
    units.set(key, [...(units.get(key) ?? []), c]);
  }
  const remove: GCContainer[] = [];
  // The oldest of a unit beyond `keep` go; what stays, newest first.
  const trim = (list: GCContainer[], keep: number): GCContainer[] => {
    const sorted = newestFirst(list);
    remove.push(...sorted.slice(Math.max(keep, 0)).reverse());
    return sorted.slice(0, Math.max(keep, 0));
  };
  for (const [key, list] of units) {
    if (gone(list[0]!.podUID)) {
      trim(list, 0);
      units.delete(key);
    }
  }
  if (policy.maxPerPodContainer >= 0) for (const [key, list] of units) units.set(key, trim(list, policy.maxPerPodContainer));
  const total = () => [...units.values()].reduce((n, l) => n + l.length, 0);
  if (policy.maxContainers >= 0 && total() > policy.maxContainers) {
    // First evenly across units (at least one each), then the oldest of all.
    const perUnit = Math.max(1, Math.floor(policy.maxContainers / units.size));
    for (const [key, list] of units) units.set(key, trim(list, perUnit));
    if (total() > policy.maxContainers) trim([...units.values()].flat(), policy.maxContainers);
  }
  return remove;
}

/**
 * The sandboxes to remove: of a pod that is gone every inactive one, of a live pod every inactive
 * one but its newest (which it still needs to tell whether it must make a new one). A sandbox is
 * active while it is ready or any container of it remains (their restart counts live there).
 */
export function planSandboxGC(sandboxes: GCSandbox[], containers: GCContainer[], gone: PodGone): GCSandbox[] {
  const withContainers = new Set(containers.map((c) => c.sandboxID));
  const byPod = new Map<string, GCSandbox[]>();
  for (const sb of sandboxes) byPod.set(sb.podUID, [...(byPod.get(sb.podUID) ?? []), sb]);
  const remove: GCSandbox[] = [];
  for (const [uid, list] of byPod) {
    const candidates = gone(uid) ? newestFirst(list) : newestFirst(list).slice(1);
    remove.push(...candidates.filter((sb) => !sb.ready && !withContainers.has(sb.id)).reverse());
  }
  return remove;
}

function gcContainer(c: Container): GCContainer {
  const states = { CONTAINER_RUNNING: 'running', CONTAINER_CREATED: 'created', CONTAINER_EXITED: 'exited' } as const;
  const info = getContainerInfoFromLabels(c.labels);
  return {
    id: c.id,
    name: info.containerName || (c.metadata?.name ?? ''),
    podUID: info.podUID,
    sandboxID: c.pod_sandbox_id,
    createdAt: Math.floor(Number(c.created_at) / 1e6),
    state: states[c.state as keyof typeof states] ?? 'unknown',
  };
}

function gcSandbox(sb: PodSandbox): GCSandbox {
  return { id: sb.id, podUID: sb.metadata?.uid ?? '', createdAt: Math.floor(Number(sb.created_at) / 1e6), ready: sb.state === 'SANDBOX_READY' };
}

/**
 * What a deleted pod left in the runtime (its stopped containers and sandboxes), removed as soon as
 * its worker is done with it, as the kubelet's pod container deletor removes a deleted pod's dead
 * containers at once: under churn the once-a-minute GC, one removal after another, falls behind,
 * and every relist grows with what it has not removed yet. Never throws: what fails here, GC
 * removes later.
 */
export async function removeDeletedPod(deps: RuntimeManagerDeps, pod: { uid: string; fields: Record<string, unknown> }): Promise<{ containers: number; sandboxes: number }> {
  const sel = { label_selector: { [NodeNameLabel]: deps.nodeName, [PodUIDLabel]: pod.uid } };
  const removed = { containers: 0, sandboxes: 0 };
  try {
    for (const c of await deps.runtime.listContainers(sel)) {
      if (c.state === 'CONTAINER_RUNNING') continue;
      await removeContainer(deps, c.id);
      removed.containers++;
    }
    // A sandbox goes with the last of its containers.
    if ((await deps.runtime.listContainers(sel)).length === 0) {
      for (const sb of await deps.runtime.listPodSandbox(sel)) {
        await deps.runtime.stopPodSandbox(sb.id);
        await deps.runtime.removePodSandbox(sb.id);
        removed.sandboxes++;
      }
    }
    deps.logger.debug('deleted pod removed from the runtime', { ...pod.fields, ...removed });
  } catch (err) {
    deps.logger.warn('deleted pod not removed from the runtime: garbage collection will', { ...pod.fields, error: (err as Error).message });
  }
  return removed;
}

/**
 * @param allSourcesReady only then are pods the agent does not know treated as gone
 *   (before the first list from the API server every pod would look unknown).
 * @param evictTerminatedPods the containers of pods that have ended (still in the API) go too,
 *   as the kubelet's DeleteAllUnusedContainers frees disk for its eviction manager.
 */
export async function garbageCollect(deps: RuntimeManagerDeps, policy: GCPolicy, allSourcesReady: boolean, evictTerminatedPods = false): Promise<GCReport> {
  const report: GCReport = { containersRemoved: 0, sandboxesRemoved: 0, logDirsRemoved: 0, logLinksRemoved: 0 };
  const gone: PodGone = (uid) => allSourcesReady && (deps.podState.shouldPodContentBeRemoved(uid) || (evictTerminatedPods && deps.podState.shouldPodRuntimeBeRemoved(uid)));
  const mine = { label_selector: { [NodeNameLabel]: deps.nodeName } };
  const listContainers = async () => (await deps.runtime.listContainers(mine)).map(gcContainer);

  for (const c of planContainerGC(await listContainers(), deps.clock.now(), policy, gone)) {
    try {
      // A container in unknown state may still run: it is stopped before it is removed.
      if (c.state === 'unknown') await killContainer(deps, undefined, c.id, c.name, 'Container is in unknown state, try killing it before removal', 'Unknown');
      await removeContainer(deps, c.id);
      report.containersRemoved++;
    } catch (err) {
      deps.logger.warn('gc: failed to remove container', { uid: c.podUID, container: c.name, containerID: c.id, error: (err as Error).message });
    }
  }

  const sandboxes = (await deps.runtime.listPodSandbox(mine)).map(gcSandbox);
  for (const sb of planSandboxGC(sandboxes, await listContainers(), gone)) {
    try {
      // Stopped first: its network and mounts are released even if the runtime kept them.
      await deps.runtime.stopPodSandbox(sb.id);
      await deps.runtime.removePodSandbox(sb.id);
      report.sandboxesRemoved++;
    } catch (err) {
      if (!isNotFound(err)) deps.logger.warn('gc: failed to remove sandbox', { uid: sb.podUID, sandbox: sb.id, error: (err as Error).message });
    }
  }

  // Log directories <ns>_<name>_<uid> of pods that are gone and have nothing left in the runtime.
  if (allSourcesReady) {
    const inRuntime = new Set([...(await listContainers()).map((c) => c.podUID), ...(await deps.runtime.listPodSandbox(mine)).map((s) => s.metadata?.uid)]);
    let entries: string[] = [];
    try {
      entries = await readdir(deps.podLogRoot);
    } catch {
      entries = [];
    }
    for (const dir of entries) {
      const uid = dir.split('_').pop() ?? '';
      if (!uid || inRuntime.has(uid) || !deps.podState.shouldPodContentBeRemoved(uid)) continue;
      await rm(join(deps.podLogRoot, dir), { recursive: true, force: true });
      report.logDirsRemoved++;
    }
    // The legacy links to logs that are gone (their container removed behind our back, a purge).
    report.logLinksRemoved = await sweepDanglingLogSymlinks(deps);
  }
  return report;
}
