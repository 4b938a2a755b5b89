// The order in which pods are evicted, as the kubelet ranks them for each resource: memory (usage
// over request first, then lower priority, then the larger usage above request), pids (lower
// priority, then more processes) and disk (as memory, with the filesystem use the signal stands
// for: see diskStatsFor). A pod without stats comes first. Pure.
import type { V1Pod } from '@kubernetes/client-node';
import { podRequest } from '../cm/pod-resources.js';
import type { FsStats, PodSummary } from '../server/stats.js';
import type { Signal } from './thresholds.js';

/** What of a pod's filesystem use counts for a disk signal (the kubelet's fsStatsType). */
export type FsStatsType = 'root' | 'logs' | 'localVolumeSource' | 'images';

export type PodStats = Map<string, PodSummary>;
type Cmp = (a: V1Pod, b: V1Pod) => number;

const uidOf = (p: V1Pod) => p.metadata?.uid ?? '';
const cmpBool = (a: boolean, b: boolean) => (a === b ? 0 : a ? -1 : 1);
const byPriority: Cmp = (a, b) => (a.spec?.priority ?? 0) - (b.spec?.priority ?? 0);

/** Compares by `f` when both pods have stats; a pod without stats first. */
function withStats(stats: PodStats, f: (a: PodSummary, b: PodSummary, pa: V1Pod, pb: V1Pod) => number): Cmp {
  return (a, b) => {
    const sa = stats.get(uidOf(a));
    const sb = stats.get(uidOf(b));
    if (!sa || !sb) return cmpBool(!sa, !sb);
    return f(sa, sb, a, b);
  };
}

function orderedBy(pods: V1Pod[], ...cmps: Cmp[]): V1Pod[] {
  return [...pods].sort((a, b) => {
    for (const c of cmps) {
      const r = c(a, b);
      if (r !== 0) return r;
    }
    return 0;
  });
}

const workingSet = (s: PodSummary) => s.memory?.workingSetBytes ?? 0;

export function rankMemoryPressure(pods: V1Pod[], stats: PodStats): V1Pod[] {
  const over = (s: PodSummary, p: V1Pod) => workingSet(s) - podRequest(p, 'memory');
  return orderedBy(
    pods,
    withStats(stats, (sa, sb, pa, pb) => cmpBool(over(sa, pa) > 0, over(sb, pb) > 0)),
    byPriority,
    withStats(stats, (sa, sb, pa, pb) => over(sb, pb) - over(sa, pa)),
  );
}

export function rankPIDPressure(pods: V1Pod[], stats: PodStats): V1Pod[] {
  const procs = (s: PodSummary) => s.process_stats?.process_count ?? 0;
  return orderedBy(pods, byPriority, withStats(stats, (sa, sb) => procs(sb) - procs(sa)));
}

/** Volumes whose use is the node's: hostPath and the local ephemeral ones (emptyDir not in memory, configMap, secret, downwardAPI, gitRepo). */
function localVolumeNames(pod: V1Pod): Set<string> {
  return new Set(
    (pod.spec?.volumes ?? [])
      .filter((v) => v.hostPath || (v.emptyDir && v.emptyDir.medium !== 'Memory') || v.configMap || v.secret || v.downwardAPI || v.gitRepo)
      .map((v) => v.name),
  );
}

/** A pod's disk use (bytes and inodes) of the kinds measured. */
export function podDiskUsage(s: PodSummary, pod: V1Pod, measure: FsStatsType[]): { bytes: number; inodes: number } {
  let bytes = 0;
  let inodes = 0;
  const add = (f: FsStats | undefined) => {
    bytes += f?.usedBytes ?? 0;
    inodes += f?.inodesUsed ?? 0;
  };
  for (const c of s.containers) {
    if (measure.includes('root')) add(c.rootfs);
    if (measure.includes('logs')) add(c.logs);
  }
  if (measure.includes('localVolumeSource')) {
    const local = localVolumeNames(pod);
    for (const v of s.volume ?? []) if (local.has(v.name)) add(v);
  }
  return { bytes, inodes };
}

export function rankDiskPressure(pods: V1Pod[], stats: PodStats, measure: FsStatsType[], resource: 'ephemeral-storage' | 'inodes'): V1Pod[] {
  const usage = (s: PodSummary, p: V1Pod) => {
    const u = podDiskUsage(s, p, measure);
    return resource === 'inodes' ? u.inodes : u.bytes;
  };
  // As the kubelet: inodes are compared with the pod's inode request, which no pod can make (0);
  // the use above request is taken against ephemeral-storage for both.
  const request = (p: V1Pod) => (resource === 'inodes' ? 0 : podRequest(p, 'ephemeral-storage'));
  return orderedBy(
    pods,
    withStats(stats, (sa, sb, pa, pb) => cmpBool(usage(sa, pa) > request(pa), usage(sb, pb) > request(pb))),
    byPriority,
    withStats(stats, (sa, sb, pa, pb) => usage(sb, pb) - podRequest(pb, 'ephemeral-storage') - (usage(sa, pa) - podRequest(pa, 'ephemeral-storage'))),
  );
}

/**
 * What a disk signal measures of a pod, as buildSignalToRankFunc: with an image filesystem of its
 * own, nodefs is logs and local volumes and imagefs the writable layers; on one filesystem,
 * everything for every disk signal.
 */
export function diskStatsFor(signal: Signal, dedicatedImageFs: boolean): FsStatsType[] {
  if (!dedicatedImageFs) return ['images', 'root', 'logs', 'localVolumeSource'];
  return signal.startsWith('nodefs.') ? ['logs', 'localVolumeSource'] : ['root', 'images'];
}

/** The pods ranked for a signal. */
export function rankFor(signal: Signal, pods: V1Pod[], stats: PodStats, dedicatedImageFs: boolean): V1Pod[] {
  if (signal === 'memory.available' || signal === 'allocatableMemory.available') return rankMemoryPressure(pods, stats);
  if (signal === 'pid.available') return rankPIDPressure(pods, stats);
  return rankDiskPressure(pods, stats, diskStatsFor(signal, dedicatedImageFs), signal.endsWith('inodesFree') ? 'inodes' : 'ephemeral-storage');
}
