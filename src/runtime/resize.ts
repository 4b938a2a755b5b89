// In-place resize of running containers, as the kubelet's computePodResizeAction: a running
// container whose allocated resources differ from those it runs with (its "actuated" resources) is
// updated through UpdateContainerResources, or restarted when a changed resource's resizePolicy
// says RestartContainer. Decreases go before increases, so the node is never over-committed on the way.
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { bytes, milliCPU } from '../util/quantity.js';
import { isRestartableInitContainer, type PodActions } from './pod-actions.js';
import { milliCPUToQuota, milliCPUToShares, QUOTA_PERIOD_US } from './resources.js';
import type { ContainerStatus, PodStatus } from './types.js';

/** The four values a resize compares (cpu in millicores, memory in bytes; 0 for unset). */
export interface ResourceValues {
  cpuRequest: number;
  cpuLimit: number;
  memoryRequest: number;
  memoryLimit: number;
}

/** What a running container was last given: its values, and the requirements they came from (for the status). */
export interface Actuated {
  values: ResourceValues;
  resources: V1ResourceRequirements;
  /** When it was recorded. */
  at: number;
}

/** The actuated resources of containers, by container ID (the kubelet's actuated-state checkpoint). */
export class ActuatedResources {
  private readonly byID = new Map<string, Actuated>();

  constructor(private readonly now: () => number = Date.now) {}

  get(containerID: string): Actuated | undefined {
    return this.byID.get(containerID);
  }

  set(containerID: string, container: V1Container): void {
    this.byID.set(containerID, { values: resourceValues(container), resources: structuredClone(container.resources ?? {}), at: this.now() });
  }

  delete(containerID: string): void {
    this.byID.delete(containerID);
  }

  /**
   * Forgets containers the runtime no longer runs, of those recorded before `recordedBefore`: a view
   * of the runtime taken earlier (the PLEG's) may not have a container started since.
   */
  retain(containerIDs: Set<string>, recordedBefore = Infinity): void {
    for (const [id, a] of this.byID) if (!containerIDs.has(id) && a.at < recordedBefore) this.byID.delete(id);
  }

  size(): number {
    return this.byID.size;
  }
}

export function resourceValues(c: V1Container): ResourceValues {
  const req = (c.resources?.requests ?? {}) as Record<string, string>;
  const lim = (c.resources?.limits ?? {}) as Record<string, string>;
  const cpu = (v?: string) => (v === undefined ? 0 : milliCPU(v));
  const mem = (v?: string) => (v === undefined ? 0 : bytes(v));
  return { cpuRequest: cpu(req.cpu), cpuLimit: cpu(lim.cpu), memoryRequest: mem(req.memory), memoryLimit: mem(lim.memory) };
}

/** Whether the runtime's own figures are those of `desired` (cpu compared as shares and CFS quota, as they are set). */
function runsWith(r: NonNullable<ContainerStatus['resources']>, desired: ResourceValues, periodUs: number): boolean {
  const quota = (v: number) => (v > 0 ? v : 0);
  return (
    r.cpuShares === milliCPUToShares(desired.cpuRequest || desired.cpuLimit) &&
    quota(r.cpuQuota) === milliCPUToQuota(desired.cpuLimit, periodUs) &&
    quota(r.memoryLimit) === desired.memoryLimit
  );
}

export interface ContainerToUpdate {
  containerID: string;
  container: V1Container;
  /** Whether the update lowers anything (those are applied first). */
  decrease: boolean;
}

function resizePolicyOf(c: V1Container, resource: 'cpu' | 'memory'): string {
  return c.resizePolicy?.find((p) => p.resourceName === resource)?.restartPolicy ?? 'NotRequired';
}

/**
 * Adds to `actions` the containers a resize restarts; returns those it updates in place, decreases
 * first. `pod` carries the allocated resources. Containers already being killed are left to that.
 */
export function computePodResizeAction(pod: V1Pod, status: PodStatus, actions: PodActions, actuated: ActuatedResources, cfsPeriodUs = QUOTA_PERIOD_US): ContainerToUpdate[] {
  if (actions.killPod || actions.createSandbox) return [];
  const decreases: ContainerToUpdate[] = [];
  const increases: ContainerToUpdate[] = [];
  const consider = (c: V1Container, restart: () => void) => {
    const s = status.containerStatuses.find((x) => x.name === c.name);
    if (!s || s.state !== 'running' || actions.containersToKill.has(s.id.id)) return;
    const desired = resourceValues(c);
    let current = actuated.get(s.id.id)?.values;
    if (!current) {
      // Not known (the agent restarted): what the runtime says it runs with, where it says; else
      // what it runs with is taken as what it was given.
      if (!s.resources || runsWith(s.resources, desired, cfsPeriodUs)) {
        actuated.set(s.id.id, c);
        return;
      }
      current = { cpuRequest: -1, cpuLimit: -1, memoryRequest: desired.memoryRequest, memoryLimit: -1 };
    }
    const cpuChanged = desired.cpuRequest !== current.cpuRequest || desired.cpuLimit !== current.cpuLimit;
    const memoryChanged = desired.memoryRequest !== current.memoryRequest || desired.memoryLimit !== current.memoryLimit;
    if (!cpuChanged && !memoryChanged) return;
    if ((cpuChanged && resizePolicyOf(c, 'cpu') === 'RestartContainer') || (memoryChanged && resizePolicyOf(c, 'memory') === 'RestartContainer')) {
      actions.containersToKill.set(s.id.id, { name: c.name, container: c, message: `Container ${c.name} resize requires restart`, reason: '' });
      restart();
      return;
    }
    const decrease = desired.cpuRequest < current.cpuRequest || desired.cpuLimit < current.cpuLimit || desired.memoryRequest < current.memoryRequest || desired.memoryLimit < current.memoryLimit;
    (decrease ? decreases : increases).push({ containerID: s.id.id, container: c, decrease });
  };
  (pod.spec?.initContainers ?? []).forEach((c, i) => {
    if (isRestartableInitContainer(c)) consider(c, () => actions.initContainersToStart.push(i));
  });
  (pod.spec?.containers ?? []).forEach((c, i) => consider(c, () => actions.containersToStart.push(i)));
  return [...decreases, ...increases];
}
