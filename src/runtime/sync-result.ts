// The outcome of each action of one SyncPod (the kubelet's PodSyncResult), read by the status code.
import type { Reason } from './errors.js';
import type { PlanStep } from './plan.js';

export type SyncAction =
  | 'StartContainer'
  | 'KillContainer'
  | 'InitContainer'
  | 'CreatePodSandbox'
  | 'ConfigPodSandbox'
  | 'KillPodSandbox'
  | 'ResizePodInPlace';

export class SyncResult {
  reason?: Reason | string;
  message = '';
  /** For a back-off: when a retry can succeed. */
  retryAfterMs?: number;
  /** How long the action took (set where it ran). */
  durationMs?: number;

  constructor(readonly action: SyncAction, readonly target: string) {}

  fail(reason: Reason | string, message: string): void {
    this.reason = reason;
    this.message = message;
  }

  get failed(): boolean {
    return this.reason !== undefined;
  }
}

export class PodSyncResult {
  readonly results: SyncResult[] = [];
  /** An error of the sync as a whole, outside any one action. */
  syncError?: Error;
  /** What computePodActions decided, explained (set by SyncPod before it acts). */
  plan?: PlanStep[];

  add(result: SyncResult): SyncResult {
    this.results.push(result);
    return result;
  }

  addAll(other: PodSyncResult): void {
    this.results.push(...other.results);
    if (other.syncError) this.syncError = other.syncError;
  }

  fail(err: Error): void {
    this.syncError = err;
  }

  /** The combined error, or undefined when every action succeeded. */
  error(): Error | undefined {
    const failed = this.results.filter((r) => r.failed);
    if (!this.syncError && failed.length === 0) return undefined;
    const parts = failed.map((r) => `failed to "${r.action}" for "${r.target}" with ${r.reason}: "${r.message}"`);
    if (this.syncError) parts.unshift(this.syncError.message);
    return new Error(parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`);
  }
}
