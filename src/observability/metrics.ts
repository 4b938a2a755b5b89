// Prometheus metrics under the kubelet's names, in a registry of our own (not prom-client's global one).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CriCallObserver } from '../cri/client.js';

/**
 * What can grow with the pods a node has seen, read when /metrics is scraped (nothing is counted
 * in between): under churn a leak shows as a slope, a healthy agent returns to its standing size.
 */
export interface InternalSizes {
  workingPods: { sync: number; terminating: number; terminated: number };
  /** Pods with work waiting: an update not yet taken, or a requeue (resync, back-off) timer. */
  podWorkQueue: number;
  backoffEntries: { crash_loop: number; image_pull: number };
  clockTimers: number;
  statusManager: { pods: number; queue: number };
  probeWorkers: number;
  plegPods: number;
  eventRecorder: { queue: number; caches: Record<string, number> };
  volumeManagerPods: number;
  /** Other per-pod or per-container maps, by name. */
  maps: Record<string, number>;
}

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
  readonly podStartSteps = new Histogram({
    name: 'nodelet_pod_start_steps_seconds',
    help: 'A pod\'s first start by step: queue (seen to its first sync), sync (to all containers running), status (to the Ready status acknowledged)',
    labelNames: ['step'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly plegRelistDuration = new Histogram({
    name: 'kubelet_pleg_relist_duration_seconds',
    help: 'Duration of one PLEG relist',
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  readonly eventedPlegConnections = new Counter({
    name: 'kubelet_evented_pleg_connection_success_count',
    help: "Times the runtime's container event stream was opened",
    registers: [this.registry],
  });
  readonly eventedPlegConnectionErrors = new Counter({
    name: 'kubelet_evented_pleg_connection_error_count',
    help: "Times the runtime's container event stream failed or was refused",
    registers: [this.registry],
  });
  readonly eventedPlegLatency = new Histogram({
    name: 'kubelet_evented_pleg_connection_latency_seconds',
    help: 'From a container event in the runtime to the agent receiving it',
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

  /** client-go's metric (the kubelet's API requests), watches counted when they open. */
  readonly restClientRequests = new Counter({
    name: 'rest_client_requests_total',
    help: 'Number of HTTP requests to the API server, partitioned by status code, method, and host.',
    labelNames: ['code', 'method', 'host'],
    registers: [this.registry],
  });

  /** Where the size gauges read from (set by the agent once its parts exist). */
  sizes?: () => InternalSizes;

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
    this.sizeGauges();
  }

  private sizeGauges(): void {
    const registers = [this.registry];
    const read = () => this.sizes?.();
    // A gauge whose value (or values, by one label) is read at scrape time.
    const gauge = (name: string, help: string, label: string | undefined, value: (s: InternalSizes) => number | Record<string, number>) =>
      new Gauge({
        name,
        help,
        labelNames: label ? [label] : [],
        registers,
        collect() {
          const s = read();
          if (!s) return;
          const v = value(s);
          if (typeof v === 'number') this.set(v);
          else for (const [k, n] of Object.entries(v)) this.set({ [label!]: k }, n);
        },
      });
    gauge('kubelet_working_pods', 'Pods the pod workers have, by lifecycle phase', 'lifecycle', (s) => s.workingPods);
    gauge('nodelet_pod_work_queue_length', 'Pods with work waiting: an update not yet taken, or a requeue timer', undefined, (s) => s.podWorkQueue);
    gauge('nodelet_backoff_entries', 'Keys remembered by a back-off, by back-off', 'backoff', (s) => s.backoffEntries);
    gauge('nodelet_clock_active_timers', "Timers and sleeps of the agent's clock not yet due or cancelled", undefined, (s) => s.clockTimers);
    gauge('nodelet_status_manager_pods', 'Pods whose status the status manager keeps', undefined, (s) => s.statusManager.pods);
    gauge('nodelet_status_manager_queue_length', 'Pod statuses waiting to be sent', undefined, (s) => s.statusManager.queue);
    gauge('nodelet_probe_workers', 'Probe workers running', undefined, (s) => s.probeWorkers);
    gauge('nodelet_pleg_pods', "Pods in the PLEG's last relist", undefined, (s) => s.plegPods);
    gauge('nodelet_event_recorder_queue_length', 'Events waiting to be sent', undefined, (s) => s.eventRecorder.queue);
    gauge('nodelet_event_recorder_cache_entries', "Entries of the event recorder's caches (bounded LRUs), by cache", 'cache', (s) => s.eventRecorder.caches);
    gauge('nodelet_volume_manager_pods', 'Pods with volumes set up', undefined, (s) => s.volumeManagerPods);
    gauge('nodelet_map_entries', 'Entries of other per-pod and per-container maps, by map', 'map', (s) => s.maps);
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
