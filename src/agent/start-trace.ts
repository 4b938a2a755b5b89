// A pod's first start, step by step: seen by the agent → its worker's first sync begins (the
// queue) → every container running (the sync: sandbox, image, create, start, each also in
// kubelet_runtime_operations_duration_seconds) → the API server has acknowledged the Ready status.
// The first two together are the kubelet's kubelet_pod_start_duration_seconds; the steps are
// nodelet's own histogram, so that `make bench` can say where a start's time goes.
import type { V1PodStatus } from '@kubernetes/client-node';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../util/clock.js';

interface Marks {
  seen: number;
  syncBegan?: number;
  running?: number;
}

export class StartTrace {
  private readonly pods = new Map<string, Marks>();

  constructor(
    private readonly clock: Clock,
    private readonly metrics: Metrics,
  ) {}

  /** Pods whose start is still being traced (for the leak checks' map sizes). */
  get size(): number {
    return this.pods.size;
  }

  seen(uid: string): void {
    if (!this.pods.has(uid)) this.pods.set(uid, { seen: this.clock.now() });
  }

  syncBegan(uid: string): void {
    const m = this.pods.get(uid);
    if (m && m.syncBegan === undefined) m.syncBegan = this.clock.now();
  }

  /** After a sync: the first one that leaves every container running ends the start. */
  synced(uid: string, allRunning: boolean): void {
    const m = this.pods.get(uid);
    if (!m || m.running !== undefined || !allRunning) return;
    m.running = this.clock.now();
    this.metrics.podStartDuration.observe((m.running - m.seen) / 1000);
    const began = m.syncBegan ?? m.seen;
    this.metrics.podStartSteps.observe({ step: 'queue' }, (began - m.seen) / 1000);
    this.metrics.podStartSteps.observe({ step: 'sync' }, (m.running - began) / 1000);
  }

  /** A status the API server accepted: the first with Ready True, after the start, ends the trace. */
  statusSent(uid: string, status: V1PodStatus): void {
    const m = this.pods.get(uid);
    if (m?.running === undefined || !status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return;
    this.metrics.podStartSteps.observe({ step: 'status' }, (this.clock.now() - m.running) / 1000);
    this.pods.delete(uid);
  }

  forget(uid: string): void {
    this.pods.delete(uid);
  }
}
