// Prometheus metrics under the kubelet's names, in a registry of our own (not prom-client's global one).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CriCallObserver } from '../cri/client.js';

const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  readonly probesRegistry = new Registry();

  readonly startedPods = new Counter({ name: 'kubelet_started_pods_total', help: 'Pod sandboxes started', registers: [this.registry] });
  readonly startedPodsErrors = new Counter({
    name: 'kubelet_started_pods_errors_total',
    help: 'Pod sandboxes that failed to start',
    registers: [this.registry],
  });
  readonly startedContainers = new Counter({
    name: 'kubelet_started_containers_total',
    help: 'Containers started',
    labelNames: ['container_type'],
    registers: [this.registry],
  });
  readonly startedContainersErrors = new Counter({
    name: 'kubelet_started_containers_errors_total',
    help: 'Containers that failed to start, by error code',
    labelNames: ['container_type', 'code'],
    registers: [this.registry],
  });
  readonly podWorkerDuration = new Histogram({
    name: 'kubelet_pod_worker_duration_seconds',
    help: 'Duration of one pod sync, by operation (create, update, sync, terminate)',
    labelNames: ['operation'],
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  readonly podStartDuration = new Histogram({
    name: 'kubelet_pod_start_duration_seconds',
    help: 'From the pod being seen by the agent to all its containers running',
    buckets: [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly plegRelistDuration = new Histogram({
    name: 'kubelet_pleg_relist_duration_seconds',
    help: 'Duration of one PLEG relist',
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  readonly runtimeOperationsDuration = new Histogram({
    name: 'kubelet_runtime_operations_duration_seconds',
    help: 'Duration of CRI calls, by operation',
    labelNames: ['operation_type'],
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  readonly runtimeOperationsErrors = new Counter({
    name: 'kubelet_runtime_operations_errors_total',
    help: 'Failed CRI calls, by operation',
    labelNames: ['operation_type'],
    registers: [this.registry],
  });
  readonly runningPods = new Gauge({ name: 'kubelet_running_pods', help: 'Pods with a ready sandbox', registers: [this.registry] });
  readonly runningContainers = new Gauge({
    name: 'kubelet_running_containers',
    help: 'Containers by state',
    labelNames: ['container_state'],
    registers: [this.registry],
  });
  readonly eventsDropped = new Counter({
    name: 'nodelet_events_dropped_total',
    help: 'Events not sent because of rate limits or API errors',
    labelNames: ['why'],
    registers: [this.registry],
  });

  /** The kubelet serves these two at /metrics/probes; nodelet there and at /metrics. */
  readonly proberProbeTotal = new Counter({
    name: 'prober_probe_total',
    help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
    labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
    registers: [this.registry, this.probesRegistry],
  });
  readonly proberProbeDuration = new Histogram({
    name: 'prober_probe_duration_seconds',
    help: 'Duration in seconds for a probe response.',
    labelNames: ['probe_type', 'container', 'pod', 'namespace'],
    registers: [this.registry, this.probesRegistry],
  });

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** An observer for CriClient that fills the runtime operation metrics (operation names in snake case, as the kubelet's). */
  criObserver(): CriCallObserver {
    return (method, seconds, error) => {
      const op = method.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
      this.runtimeOperationsDuration.observe({ operation_type: op }, seconds);
      if (error) this.runtimeOperationsErrors.inc({ operation_type: op });
    };
  }
}
