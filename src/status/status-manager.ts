// The status manager: keeps each pod's API status current. A status is sent (strategic merge patch
// to pods/status, UID as precondition) only when it differs from the last one sent; one request per
// pod is in flight at a time and newer statuses replace queued ones; conflicts and errors retry;
// a pod that no longer exists is dropped quietly.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { apiErrorMessage, httpCode, type PodApi } from '../kube/client.js';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../util/clock.js';

interface Entry {
  namespace: string;
  name: string;
  uid: string;
  desired?: V1PodStatus;
  /** The newest status computed, sent or not (what the node API shows). */
  latest?: V1PodStatus;
  sentJSON?: string;
  inFlight: boolean;
  attempts: number;
}

/** Statuses compare without timestamps that move on their own. */
function comparable(status: V1PodStatus): string {
  return JSON.stringify(status, (k, v) => (k === 'lastProbeTime' || k === 'lastHeartbeatTime' ? undefined : v));
}

export class StatusManager {
  private readonly entries = new Map<string, Entry>();
  private readonly maxConcurrent: number;
  private active = 0;
  private readonly ready: string[] = [];
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly api: PodApi,
    private readonly clock: Clock,
    private readonly logger: Logger,
    opts: { maxConcurrent?: number } = {},
  ) {
    this.maxConcurrent = opts.maxConcurrent ?? 8;
  }

  /** Records the status the pod should have; sends it if it differs from what the API has. */
  setPodStatus(pod: V1Pod, status: V1PodStatus): void {
    const uid = pod.metadata?.uid ?? '';
    let e = this.entries.get(uid);
    if (!e) {
      e = { namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', uid, inFlight: false, attempts: 0 };
      // What the API already shows counts as sent: an adopted pod is not patched for nothing.
      if (pod.status) e.sentJSON = comparable(pod.status);
      this.entries.set(uid, e);
    }
    // A pod's phase never goes back from Succeeded or Failed (a late status made before the end).
    const terminal = (p?: string) => p === 'Succeeded' || p === 'Failed';
    if (terminal(e.latest?.phase) && !terminal(status.phase)) return;
    e.latest = status;
    const json = comparable(status);
    if (json === e.sentJSON && !e.inFlight) {
      e.desired = undefined;
      return;
    }
    e.desired = status;
    this.schedule(uid);
  }

  /** The newest status computed for a pod. */
  podStatus(uid: string): V1PodStatus | undefined {
    return this.entries.get(uid)?.latest;
  }

  /** The status last sent for a pod, if any (what the API shows, as far as this agent knows). */
  lastSent(uid: string): string | undefined {
    return this.entries.get(uid)?.sentJSON;
  }

  /** Pods kept, and statuses waiting to be sent (for /metrics). */
  sizes(): { pods: number; queue: number } {
    return { pods: this.entries.size, queue: this.ready.length };
  }

  /**
   * Sends the pod's newest status again, whatever was sent before: the object it went to is a new
   * one (a static pod's mirror pod, deleted and made again, starts with no status).
   */
  resend(uid: string): void {
    const e = this.entries.get(uid);
    if (!e) return;
    e.sentJSON = undefined;
    if (e.latest) {
      e.desired = e.latest;
      this.schedule(uid);
    }
  }

  forget(uid: string): void {
    const e = this.entries.get(uid);
    if (e && !e.inFlight) this.entries.delete(uid);
    else if (e) e.desired = undefined;
  }

  /** Whether the newest status of the pod has been sent (or there is none to send). */
  isSynced(uid: string): boolean {
    const e = this.entries.get(uid);
    return !e || (!e.desired && !e.inFlight);
  }

  /** Waits up to `timeoutMs` for the pod's newest status to be sent; whether it was. */
  async waitSynced(uid: string, timeoutMs: number): Promise<boolean> {
    const until = this.clock.now() + timeoutMs;
    while (!this.isSynced(uid)) {
      if (this.clock.now() >= until) return false;
      await this.clock.sleep(20);
    }
    return true;
  }

  /** Resolves when no status is queued or in flight. */
  flush(): Promise<void> {
    if (this.active === 0 && this.ready.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private schedule(uid: string): void {
    const e = this.entries.get(uid);
    if (!e || e.inFlight || this.ready.includes(uid)) return;
    this.ready.push(uid);
    this.pump();
  }

  private pump(): void {
    while (this.active < this.maxConcurrent && this.ready.length > 0) {
      const uid = this.ready.shift()!;
      const e = this.entries.get(uid);
      if (!e?.desired) continue;
      this.active++;
      e.inFlight = true;
      void this.send(e).finally(() => {
        this.active--;
        e.inFlight = false;
        if (e.desired) this.schedule(uid);
        this.pump();
        if (this.active === 0 && this.ready.length === 0) {
          const w = this.idleWaiters;
          this.idleWaiters = [];
          w.forEach((f) => f());
        }
      });
    }
  }

  private async send(e: Entry): Promise<void> {
    const status = e.desired!;
    const json = comparable(status);
    e.desired = undefined;
    try {
      await this.api.patchPodStatus(e.namespace, e.name, e.uid, status);
      e.sentJSON = json;
      e.attempts = 0;
    } catch (err) {
      const code = httpCode(err);
      if (code === 404 || (code === 409 && /UID|precondition/i.test(apiErrorMessage(err)))) {
        // The pod is gone (or replaced by one of the same name): nothing to report to.
        this.logger.debug('status dropped: pod no longer exists', { pod: `${e.namespace}/${e.name}`, uid: e.uid });
        this.entries.delete(e.uid);
        return;
      }
      e.attempts++;
      this.logger.warn('pod status update failed, will retry', { pod: `${e.namespace}/${e.name}`, uid: e.uid, code, error: apiErrorMessage(err) });
      // Keep the newest desired status; retry this one if nothing newer came.
      e.desired ??= status;
      await this.clock.sleep(Math.min(10_000, 100 * 2 ** Math.min(e.attempts, 7)));
    }
  }
}
