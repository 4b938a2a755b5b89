// Probe results, one store per probe type (liveness, readiness, startup), keyed by container ID.
// A result that changes is announced once, so the agent syncs the pod (liveness and startup feed
// computePodActions; readiness and startup feed the pod's status).
import type { ProbeResult, ProbeResults } from '../runtime/pod-actions.js';

export type { ProbeResult };

export interface ResultUpdate {
  containerID: string;
  result: ProbeResult;
  podUID: string;
}

export class ResultsManager implements ProbeResults {
  private readonly results = new Map<string, ProbeResult>();

  constructor(private readonly onUpdate: (u: ResultUpdate) => void = () => undefined) {}

  get(containerID: string): ProbeResult | undefined {
    return this.results.get(containerID);
  }

  set(containerID: string, result: ProbeResult, podUID: string): void {
    if (this.results.get(containerID) === result) return;
    this.results.set(containerID, result);
    this.onUpdate({ containerID, result, podUID });
  }

  remove(containerID: string): void {
    this.results.delete(containerID);
  }

  get size(): number {
    return this.results.size;
  }
}
