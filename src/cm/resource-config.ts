// What a cgroup of the node's hierarchy is given (the kubelet's ResourceConfig), and how a pod's
// and the node's are computed (ResourceConfigForPod, the allocatable cgroup's). Pure.
import type { V1Pod } from '@kubernetes/client-node';
import { milliCPUToQuota, milliCPUToShares, podQOSClass, QUOTA_PERIOD_US, type QOSClass } from '../runtime/resources.js';
import { limitsDeclared, podLimit, podRequest } from './pod-resources.js';

/** Unset fields are left as they are; cpuQuota -1 and pidsLimit -1 mean unbounded. */
export interface ResourceConfig {
  cpuShares?: number;
  cpuQuota?: number;
  cpuPeriod?: number;
  memory?: number;
  pidsLimit?: number;
}

/** A cgroup's name as components from the hierarchy's root ([] is the root itself). */
export type CgroupName = readonly string[];

/** '/a/b' to ['a', 'b'] (the cgroupfs driver's literal names). */
export function parseCgroupfs(path: string): CgroupName {
  return path.split('/').filter(Boolean);
}

/** ['a', 'b'] to '/a/b', as CRI's cgroup_parent carries it. */
export function toCgroupfs(name: CgroupName): string {
  return `/${name.join('/')}`;
}

export const KUBEPODS = 'kubepods';
export const POD_CGROUP_PREFIX = 'pod';

/** The QoS cgroup a pod's cgroup sits in: Guaranteed pods directly under kubepods. */
export function qosCgroupName(kubepods: CgroupName, qos: QOSClass): CgroupName {
  return qos === 'Guaranteed' ? kubepods : [...kubepods, qos.toLowerCase()];
}

/** The pod's own cgroup: <kubepods>[/<qos>]/pod<UID>. */
export function podCgroupName(kubepods: CgroupName, pod: V1Pod): CgroupName {
  return [...qosCgroupName(kubepods, podQOSClass(pod)), `${POD_CGROUP_PREFIX}${pod.metadata?.uid ?? ''}`];
}

/**
 * The pod cgroup's limits (ResourceConfigForPod): Guaranteed gets shares, quota and memory;
 * Burstable shares always, a quota only when every container declares a cpu limit, memory only
 * when every container declares a memory limit (pod-level limits count as declared); BestEffort
 * the minimum shares. Overhead is in the sums.
 */
export function resourceConfigForPod(pod: V1Pod, opts: { cpuCFSQuota: boolean; cpuPeriod?: number }): ResourceConfig {
  const period = opts.cpuPeriod ?? QUOTA_PERIOD_US;
  const shares = milliCPUToShares(podRequest(pod, 'cpu'));
  const quota = opts.cpuCFSQuota ? milliCPUToQuota(podLimit(pod, 'cpu'), period) : -1;
  const memory = podLimit(pod, 'memory');
  switch (podQOSClass(pod)) {
    case 'Guaranteed':
      return { cpuShares: shares, cpuQuota: quota, cpuPeriod: period, memory };
    case 'Burstable': {
      const config: ResourceConfig = { cpuShares: shares };
      if (limitsDeclared(pod, 'cpu')) Object.assign(config, { cpuQuota: quota, cpuPeriod: period });
      if (limitsDeclared(pod, 'memory')) config.memory = memory;
      return config;
    }
    default:
      return { cpuShares: milliCPUToShares(0) };
  }
}

/** What the node's pods together may use: cpu in millicores, memory in bytes, pids. */
export interface Allocatable {
  milliCPU: number;
  memory: number;
  pids: number;
}

/** The kubepods cgroup's limits (the kubelet's getCgroupConfig of node allocatable). */
export function allocatableConfig(a: Allocatable): ResourceConfig {
  return { cpuShares: milliCPUToShares(Math.max(0, a.milliCPU)), memory: Math.max(0, a.memory), pidsLimit: a.pids > 0 ? a.pids : -1 };
}

/** The Burstable QoS cgroup's shares: the sum of its pods' cpu requests. */
export function burstableShares(pods: V1Pod[]): number {
  const milli = pods.filter((p) => podQOSClass(p) === 'Burstable').reduce((n, p) => n + podRequest(p, 'cpu'), 0);
  return milliCPUToShares(milli);
}
