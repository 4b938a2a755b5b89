// What the node's readiness is made of, as the kubelet's runtimeState: the runtime's own conditions
// (RuntimeReady, NetworkReady, read every few seconds; a runtime silent for 30 s is down), and
// health checks of the agent's parts (the PLEG). The node is Ready only when none has an error;
// pods that need the pod network wait while the runtime says it is not ready.
import type { RuntimeService } from '../cri/services.js';
import type { RuntimeHealth } from '../kube/node-status.js';
import type { Clock } from '../util/clock.js';
import { aggregateErrors } from '../util/errors.js';

/** A part's health: undefined when healthy, else why not. */
export type HealthCheck = () => string | undefined;


/** The runtime's conditions, in the kubelet's words; `unreachable` when it did not answer. */
export async function readRuntimeConditions(
  runtime: RuntimeService,
): Promise<{ runtimeVersion: string; runtimeError?: string; networkError?: string } | { unreachable: string }> {
  try {
    const v = await runtime.version('0.1.0');
    const conds = (await runtime.status()).status?.conditions ?? [];
    const problem = (type: string, what: string) => {
      const c = conds.find((x) => x.type === type);
      return c?.status ? undefined : `${what}: ${type}=false reason:${c?.reason ?? ''} message:${c?.message ?? 'no such condition reported'}`;
    };
    return {
      runtimeVersion: `${v.runtime_name}://${v.runtime_version}`,
      runtimeError: problem('RuntimeReady', 'container runtime not ready'),
      networkError: problem('NetworkReady', 'container runtime network not ready'),
    };
  } catch (err) {
    return { unreachable: (err as Error).message };
  }
}

/** A runtime that has not answered for this long is down (the kubelet's maxWaitForContainerRuntime). */
export const RUNTIME_DOWN_AFTER_MS = 30_000;

export class RuntimeState {
  private runtimeVersion = 'unknown://unknown';
  private runtimeError?: string;
  private networkError?: string;
  /** When the runtime last answered (0: never), and why it did not since. */
  private lastSync = 0;
  private lastFailure?: string;
  private readonly checks: Array<{ name: string; check: HealthCheck }> = [];

  constructor(
    private readonly runtime: RuntimeService,
    private readonly clock: Clock,
    private readonly downAfterMs = RUNTIME_DOWN_AFTER_MS,
  ) {}

  addHealthCheck(name: string, check: HealthCheck): void {
    this.checks.push({ name, check });
  }

  /**
   * Reads the runtime's conditions again (the kubelet's updateRuntimeUp). A runtime that does not
   * answer keeps its last conditions: one failed call does not flip the node or the network gate.
   */
  async refresh(): Promise<void> {
    const r = await readRuntimeConditions(this.runtime);
    if ('unreachable' in r) {
      this.lastFailure = r.unreachable;
      return;
    }
    this.lastSync = this.clock.now();
    this.lastFailure = undefined;
    this.runtimeVersion = r.runtimeVersion;
    this.runtimeError = r.runtimeError;
    this.networkError = r.networkError;
  }

  /** Why pods that need the pod network cannot start now (undefined: they can). */
  networkNotReady(): string | undefined {
    return this.networkError;
  }

  /** In the kubelet's order: the runtime's answering, the health checks, the runtime's readiness. */
  runtimeErrors(): string[] {
    const errors: string[] = [];
    if (this.lastSync === 0) {
      errors.push(this.lastFailure ? `container runtime is down: ${this.lastFailure}` : 'container runtime status check may not have completed yet');
    } else if (this.clock.now() - this.lastSync > this.downAfterMs) {
      errors.push(`container runtime is down: ${this.lastFailure ?? 'no answer'}`);
    }
    for (const { name, check } of this.checks) {
      const problem = check();
      if (problem) errors.push(`${name} is not healthy: ${problem}`);
    }
    if (this.runtimeError) errors.push(this.runtimeError);
    return errors;
  }

  /** What the node status shows: the runtime's version, and why the node is not Ready (if it is not). */
  health(): RuntimeHealth {
    return { runtimeVersion: this.runtimeVersion, notReadyMessage: aggregateErrors([...this.runtimeErrors(), ...(this.networkError ? [this.networkError] : [])]) };
  }
}
