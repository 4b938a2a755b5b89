// What the node's readiness is made of, as the kubelet's runtimeState: the runtime's own conditions
// (RuntimeReady, NetworkReady, read every few seconds), and health checks of the agent's parts (the
// PLEG). The node is Ready only when none has an error; pods that need the pod network wait while
// the runtime says it is not ready.
import type { RuntimeService } from '../cri/services.js';
import type { RuntimeHealth } from '../kube/node-status.js';

/** A part's health: undefined when healthy, else why not. */
export type HealthCheck = () => string | undefined;

/** Several errors as Go's aggregate error prints them: one alone, more in brackets; repeats once. */
export function aggregateErrors(errors: string[]): string | undefined {
  const unique = [...new Set(errors)];
  if (unique.length === 0) return undefined;
  return unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`;
}

/** The runtime's conditions, in the kubelet's words. */
export async function readRuntimeConditions(runtime: RuntimeService): Promise<{ runtimeVersion: string; runtimeError?: string; networkError?: string }> {
  let runtimeVersion = 'unknown://unknown';
  try {
    const v = await runtime.version('0.1.0');
    runtimeVersion = `${v.runtime_name}://${v.runtime_version}`;
    const conds = (await runtime.status()).status?.conditions ?? [];
    const problem = (type: string, what: string) => {
      const c = conds.find((x) => x.type === type);
      return c?.status ? undefined : `${what}: ${type}=false reason:${c?.reason ?? ''} message:${c?.message ?? 'no such condition reported'}`;
    };
    return {
      runtimeVersion,
      runtimeError: problem('RuntimeReady', 'container runtime not ready'),
      networkError: problem('NetworkReady', 'container runtime network not ready'),
    };
  } catch (err) {
    return { runtimeVersion, runtimeError: `container runtime is down: ${(err as Error).message}` };
  }
}

export class RuntimeState {
  private runtimeVersion = 'unknown://unknown';
  private runtimeError?: string = 'container runtime status check may not have completed yet';
  private networkError?: string;
  private readonly checks: Array<{ name: string; check: HealthCheck }> = [];

  constructor(private readonly runtime: RuntimeService) {}

  addHealthCheck(name: string, check: HealthCheck): void {
    this.checks.push({ name, check });
  }

  /** Reads the runtime's conditions again (the kubelet's updateRuntimeUp). */
  async refresh(): Promise<void> {
    const r = await readRuntimeConditions(this.runtime);
    this.runtimeVersion = r.runtimeVersion;
    this.runtimeError = r.runtimeError;
    this.networkError = r.networkError;
  }

  /** Why pods that need the pod network cannot start now (undefined: they can). */
  networkNotReady(): string | undefined {
    return this.networkError;
  }

  runtimeErrors(): string[] {
    const errors = this.runtimeError ? [this.runtimeError] : [];
    for (const { name, check } of this.checks) {
      const problem = check();
      if (problem) errors.push(`${name} is not healthy: ${problem}`);
    }
    return errors;
  }

  /** What the node status shows: the runtime's version, and why the node is not Ready (if it is not). */
  health(): RuntimeHealth {
    return { runtimeVersion: this.runtimeVersion, notReadyMessage: aggregateErrors([...this.runtimeErrors(), ...(this.networkError ? [this.networkError] : [])]) };
  }
}
