// Container garbage collection: dead containers beyond the policy, sandboxes and log directories
// of pods that are gone. The kubelet's containerGC, with its default policy.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { removeContainer } from './container.js';
import type { RuntimeManagerDeps } from './deps.js';
import { getPods } from './pod-status.js';
import type { RunningContainer } from './types.js';
import { isNotFound } from '../cri/errors.js';

export interface GCPolicy {
  /** Dead containers younger than this are kept (the kubelet's MinAge: 1 min). */
  minAgeMs: number;
  /** Dead instances kept per (pod, container name) (MaxPerPodContainer: 1). */
  maxPerPodContainer: number;
}

export const defaultGCPolicy: GCPolicy = { minAgeMs: 60_000, maxPerPodContainer: 1 };

export interface GCReport {
  containersRemoved: number;
  sandboxesRemoved: number;
  logDirsRemoved: number;
}

/**
 * @param allSourcesReady only then are pods the agent does not know treated as gone
 *   (before the first list from the API server every pod would look unknown).
 */
export async function garbageCollect(deps: RuntimeManagerDeps, policy: GCPolicy, allSourcesReady: boolean): Promise<GCReport> {
  const report: GCReport = { containersRemoved: 0, sandboxesRemoved: 0, logDirsRemoved: 0 };
  const now = deps.clock.now();
  const pods = await getPods(deps, true);
  const gone = (uid: string) => allSourcesReady && deps.podState.shouldPodContentBeRemoved(uid);

  // Dead containers, grouped per pod and container name, newest first.
  for (const pod of pods) {
    const groups = new Map<string, RunningContainer[]>();
    for (const c of pod.containers) {
      if (c.state === 'running' || c.state === 'created' || now - c.createdAt < policy.minAgeMs) continue;
      const list = groups.get(c.name) ?? [];
      list.push(c);
      groups.set(c.name, list);
    }
    for (const list of groups.values()) {
      list.sort((a, b) => b.createdAt - a.createdAt);
      const keep = gone(pod.uid) ? 0 : policy.maxPerPodContainer;
      for (const c of list.slice(keep)) {
        try {
          await removeContainer(deps, c.id.id);
          report.containersRemoved++;
        } catch (err) {
          deps.logger.warn('gc: failed to remove container', { uid: pod.uid, container: c.name, error: (err as Error).message });
        }
      }
    }
  }

  // Sandboxes: a pod that is gone loses every stopped sandbox; a pod still known keeps its newest.
  const remaining = await getPods(deps, true);
  const containersBySandboxPod = new Map(remaining.map((p) => [p.uid, p.containers.length]));
  for (const pod of remaining) {
    const sandboxes = [...pod.sandboxes].sort((a, b) => b.createdAt - a.createdAt);
    const podGone = gone(pod.uid);
    const candidates = podGone ? sandboxes : sandboxes.slice(1);
    for (const sb of candidates) {
      if (sb.state === 'running') continue;
      // Removing a sandbox removes its containers, and with them the restart count they carry:
      // a live pod's old sandboxes wait until its dead containers are collected.
      if (!podGone && (containersBySandboxPod.get(pod.uid) ?? 0) > 0) continue;
      try {
        await deps.runtime.removePodSandbox(sb.id.id);
        report.sandboxesRemoved++;
      } catch (err) {
        if (!isNotFound(err)) deps.logger.warn('gc: failed to remove sandbox', { uid: pod.uid, sandbox: sb.id.id, error: (err as Error).message });
      }
    }
  }

  // Log directories <ns>_<name>_<uid> of pods with nothing left in the runtime.
  if (allSourcesReady) {
    const inRuntime = new Set((await getPods(deps, true)).map((p) => p.uid));
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
  }
  return report;
}
