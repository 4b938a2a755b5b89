// CPU and memory requests/limits to CRI Linux resources, and the QoS class and OOM score that go with them.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { LinuxContainerResources } from '../cri/types.js';
import type { ContainerCgroupSettings } from './deps.js';
import { isMirrorPod } from '../pods/mirror-pods.js';
import { isStaticPod } from '../pods/static-pods.js';
import { bytes, milliCPU, parseQuantity } from '../util/quantity.js';

const MIN_SHARES = 2;
const SHARES_PER_CPU = 1024;
const MAX_SHARES = 262144;
export const QUOTA_PERIOD_US = 100_000;
const MIN_QUOTA_US = 1000;

export function milliCPUToShares(milli: number): number {
  if (milli === 0) return MIN_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((milli * SHARES_PER_CPU) / 1000)));
}

export function milliCPUToQuota(milli: number, periodUs: number): number {
  if (milli === 0) return 0;
  return Math.max(MIN_QUOTA_US, Math.floor((milli * periodUs) / 1000));
}

function quantity(map: Record<string, string> | undefined, key: string): string | undefined {
  return map?.[key];
}

export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/**
 * The pod's QoS class: the API's (status.qosClass is set at creation and immutable, so a status
 * sent with another would be refused for ever), else computed as the API server computes it.
 */
export function podQOSClass(pod: V1Pod): QOSClass {
  const stored = pod.status?.qosClass;
  return stored === 'Guaranteed' || stored === 'Burstable' || stored === 'BestEffort' ? stored : computePodQOS(pod);
}

type Requirements = { requests?: Record<string, string>; limits?: Record<string, string> };

/** One resource's shape: equal and non-zero Guaranteed, both zero BestEffort, else Burstable. */
function resourceQOS(r: Requirements, name: 'cpu' | 'memory'): QOSClass {
  // The API server defaults a request to its limit; a pod read from a file may not have been defaulted.
  const limit = r.limits?.[name];
  const request = r.requests?.[name] ?? limit;
  const [rq, lm] = [request === undefined ? 0 : parseQuantity(request), limit === undefined ? 0 : parseQuantity(limit)];
  if (rq !== lm) return 'Burstable';
  return rq === 0 ? 'BestEffort' : 'Guaranteed';
}

/** The class of one set of requirements (a container's, or the pod-level ones). */
function requirementsQOS(r: Requirements): QOSClass {
  if (!Object.keys(r.requests ?? {}).length && !Object.keys(r.limits ?? {}).length) return 'BestEffort';
  const [cpu, memory] = [resourceQOS(r, 'cpu'), resourceQOS(r, 'memory')];
  return cpu === memory ? cpu : 'Burstable';
}

/** The API server's computation: pod-level cpu or memory when set, else every container's (init ones too) alike. */
export function computePodQOS(pod: V1Pod): QOSClass {
  const podLevel = pod.spec?.resources as Requirements | undefined;
  const set = (m?: Record<string, string>) => m?.cpu !== undefined || m?.memory !== undefined;
  if (podLevel && (set(podLevel.requests) || set(podLevel.limits))) return requirementsQOS(podLevel);
  let qos: QOSClass | undefined;
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    const q = requirementsQOS((c.resources ?? {}) as Requirements);
    if (q === 'Burstable' || (qos !== undefined && qos !== q)) return 'Burstable';
    qos = q;
  }
  return qos ?? 'BestEffort';
}

/** The kubelet's OOM score adjustment by QoS class. */
export function oomScoreAdj(pod: V1Pod, container: V1Container, memoryCapacity: number): number {
  // A node-critical pod (static or mirror, or of critical priority, in system-node-critical) is killed last.
  if (isNodeCriticalPod(pod)) return GUARANTEED_OOM_SCORE_ADJ;
  switch (podQOSClass(pod)) {
    case 'Guaranteed':
      return GUARANTEED_OOM_SCORE_ADJ;
    case 'BestEffort':
      return BESTEFFORT_OOM_SCORE_ADJ;
    default: {
      const capacity = Math.max(1, memoryCapacity);
      const score = (memRequest: number) => 1000 - Math.floor((1000 * memRequest) / capacity);
      let adj = score(memoryRequest(container));
      // A sidecar is never killed before the regular container with the smallest request.
      const sidecar = container.restartPolicy === 'Always' && (pod.spec?.initContainers ?? []).some((c) => c.name === container.name);
      if (sidecar && pod.spec?.containers.length) adj = Math.min(adj, score(Math.min(...pod.spec.containers.map(memoryRequest))));
      // Burstable stays above Guaranteed (3 at least) and below BestEffort (999 at most).
      if (adj < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
      return adj === BESTEFFORT_OOM_SCORE_ADJ ? adj - 1 : adj;
    }
  }
}

const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;
/** The priority from which a pod is critical (scheduling.SystemCriticalPriority). */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

function memoryRequest(c: V1Container): number {
  const req = quantity(c.resources?.requests as Record<string, string> | undefined, 'memory');
  return req ? bytes(req) : 0;
}

/** The kubelet's IsNodeCriticalPod: critical (static, mirror, or critical priority) and in system-node-critical. */
export function isNodeCriticalPod(pod: V1Pod): boolean {
  const critical = isStaticPod(pod) || isMirrorPod(pod) || (pod.spec?.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
  return critical && pod.spec?.priorityClassName === 'system-node-critical';
}

/** CRI Linux resources of a container: cpu shares from the request, CFS quota from the limit (if enabled), memory limit. */
export function linuxContainerResources(pod: V1Pod, container: V1Container, opts: { cpuCFSQuota: boolean; memoryCapacity: number; containerCgroups?: ContainerCgroupSettings }): LinuxContainerResources {
  const req = container.resources?.requests as Record<string, string> | undefined;
  const lim = container.resources?.limits as Record<string, string> | undefined;
  const cpuReq = quantity(req, 'cpu');
  const cpuLim = quantity(lim, 'cpu');
  const memLim = quantity(lim, 'memory');
  // No request but a limit: the API defaults the request to the limit.
  const sharesFrom = cpuReq !== undefined ? milliCPU(cpuReq) : cpuLim !== undefined ? milliCPU(cpuLim) : 0;
  const res: LinuxContainerResources = {
    cpu_shares: String(milliCPUToShares(sharesFrom)),
    oom_score_adj: String(oomScoreAdj(pod, container, opts.memoryCapacity)),
  };
  if (memLim !== undefined) res.memory_limit_in_bytes = String(bytes(memLim));
  if (opts.cpuCFSQuota && cpuLim !== undefined) {
    res.cpu_period = String(QUOTA_PERIOD_US);
    res.cpu_quota = String(milliCPUToQuota(milliCPU(cpuLim), QUOTA_PERIOD_US));
  }
  const cg = opts.containerCgroups;
  if (cg?.version === 'v2') {
    const unified: Record<string, string> = {};
    if (cg.oomGroup) unified['memory.oom.group'] = '1';
    if (cg.swapController) unified['memory.swap.max'] = '0';
    if (Object.keys(unified).length) res.unified = unified;
  } else if (cg?.swapController && res.memory_limit_in_bytes) {
    // NoSwap on v1: memory+swap no larger than memory.
    res.memory_swap_limit_in_bytes = res.memory_limit_in_bytes;
  }
  return res;
}

/**
 * Linux resources from a cpu request and limit and a memory limit (the kubelet's
 * calculateLinuxResources): what a sandbox is told of its pod's sum and overhead.
 */
export function linuxResourcesFrom(milliRequest: number, milliLimit: number, memoryLimit: number, cpuCFSQuota: boolean): LinuxContainerResources {
  const res: LinuxContainerResources = { cpu_shares: String(milliCPUToShares(milliRequest === 0 && milliLimit !== 0 ? milliLimit : milliRequest)) };
  if (memoryLimit > 0) res.memory_limit_in_bytes = String(memoryLimit);
  if (cpuCFSQuota) {
    res.cpu_period = String(QUOTA_PERIOD_US);
    res.cpu_quota = String(milliCPUToQuota(milliLimit, QUOTA_PERIOD_US));
  }
  return res;
}
