// The prober manager: a worker per probe of every container of the pods this node runs (app
// containers and sidecars), the three result stores, and what the results mean for a pod's status
// (started, ready), as the kubelet's prober manager. Changes of results go to `onUpdate`, which
// syncs the pod: liveness and startup results are read by computePodActions there.
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { EventRecorder } from '../kube/object-ref.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../util/clock.js';
import type { RunInContainer } from './exec.js';
import { runProbe } from './prober.js';
import { ResultsManager, type ProbeResult, type ResultUpdate } from './results.js';
import type { ProbeType } from './types.js';
import { bareContainerID, ProbeWorker, runningSinceBeforeRestart, type WorkerHost } from './worker.js';
import { isRestartableInitContainer } from '../runtime/pod-actions.js';

export interface ProbeManagerDeps {
  clock: Clock;
  recorder: EventRecorder;
  runInContainer: RunInContainer;
  /** The pod's status as last computed. */
  podStatus(uid: string): V1PodStatus | undefined;
  onUpdate(type: ProbeType, update: ResultUpdate): void;
  metrics?: Metrics;
  random?: () => number;
}

const TYPES: ProbeType[] = ['Startup', 'Readiness', 'Liveness'];

const key = (uid: string, container: string, type: ProbeType) => `${uid}/${container}/${type}`;

function probeOf(c: V1Container, type: ProbeType) {
  return type === 'Startup' ? c.startupProbe : type === 'Readiness' ? c.readinessProbe : c.livenessProbe;
}

export class ProbeManager {
  readonly liveness: ResultsManager;
  readonly readiness: ResultsManager;
  readonly startup: ResultsManager;
  private readonly workers = new Map<string, ProbeWorker>();
  private readonly startedAt: number;
  private readonly host: WorkerHost;

  constructor(private readonly deps: ProbeManagerDeps) {
    this.startedAt = deps.clock.now();
    this.liveness = new ResultsManager((u) => deps.onUpdate('Liveness', u));
    this.readiness = new ResultsManager((u) => deps.onUpdate('Readiness', u));
    this.startup = new ResultsManager((u) => deps.onUpdate('Startup', u));
    const results = (t: ProbeType) => (t === 'Liveness' ? this.liveness : t === 'Readiness' ? this.readiness : this.startup);
    this.host = {
      clock: deps.clock,
      startedAt: this.startedAt,
      random: deps.random ?? Math.random,
      podStatus: deps.podStatus,
      results,
      probe: (type, spec, pod, podIP, container, containerID) => runProbe({ runInContainer: deps.runInContainer, recorder: deps.recorder }, type, spec, pod, podIP, container, containerID),
      observe: (w, result, seconds) => this.observe(w, result, seconds),
      removed: (w) => this.removed(w),
    };
  }

  /** Probed containers: the app containers and the sidecars. */
  private probed(pod: V1Pod): Array<{ c: V1Container; init: boolean }> {
    return [...(pod.spec?.containers ?? []).map((c) => ({ c, init: false })), ...(pod.spec?.initContainers ?? []).filter(isRestartableInitContainer).map((c) => ({ c, init: true }))];
  }

  /** Starts the workers a pod's probes need (those already running are kept, and see the newest pod). */
  addPod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    for (const { c, init } of this.probed(pod)) {
      for (const type of TYPES) {
        const spec = probeOf(c, type);
        if (!spec) continue;
        const k = key(uid, c.name, type);
        const have = this.workers.get(k);
        if (have) {
          have.pod = pod;
          continue;
        }
        const w = new ProbeWorker(this.host, type, pod, c, spec, init);
        this.workers.set(k, w);
        w.start();
      }
    }
  }

  /** A pod that terminates: liveness and startup no longer matter (readiness goes on until it stops). */
  stopLivenessAndStartup(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    for (const c of pod.spec?.containers ?? []) for (const t of ['Liveness', 'Startup'] as const) this.workers.get(key(uid, c.name, t))?.stop();
  }

  removePod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    for (const [k, w] of this.workers) if (k.startsWith(`${uid}/`)) w.stop();
  }

  /** Stops the workers of every pod not wanted any more. */
  cleanupPods(wanted: (uid: string) => boolean): void {
    for (const [k, w] of this.workers) if (!wanted(k.slice(0, k.indexOf('/')))) w.stop();
  }

  get workerCount(): number {
    return this.workers.size;
  }

  /** Results remembered, of all three probe types (for /metrics). */
  get resultCount(): number {
    return this.liveness.size + this.readiness.size + this.startup.size;
  }

  private removed(w: ProbeWorker): void {
    const uid = w.pod.metadata?.uid ?? '';
    const k = key(uid, w.container.name, w.type);
    if (this.workers.get(k) === w) this.workers.delete(k);
    const m = this.deps.metrics;
    if (!m) return;
    const { name = '', namespace = '' } = w.pod.metadata ?? {};
    for (const result of ['successful', 'failed', 'unknown']) m.proberProbeTotal.remove(w.type, result, w.container.name, name, namespace, uid);
    m.proberProbeDuration.remove(w.type, w.container.name, name, namespace);
  }

  private observe(w: ProbeWorker, result: ProbeResult, seconds: number): void {
    const m = this.deps.metrics;
    if (!m) return;
    const { name = '', namespace = '', uid = '' } = w.pod.metadata ?? {};
    const label = result === 'Success' ? 'successful' : result === 'Failure' ? 'failed' : 'unknown';
    m.proberProbeTotal.inc({ probe_type: w.type, result: label, container: w.container.name, pod: name, namespace, pod_uid: uid });
    // As the kubelet: the duration of successful (and unknown) probes only.
    if (result !== 'Failure') m.proberProbeDuration.observe({ probe_type: w.type, container: w.container.name, pod: name, namespace }, seconds);
  }

  private isStarted(pod: V1Pod, s: V1ContainerStatus): boolean {
    if (!s.state?.running) return false;
    const r = this.startup.get(bareContainerID(s.containerID));
    if (r !== undefined) return r === 'Success';
    // Started before the agent restarted, and the API said so: still started.
    const before = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find((o) => o.containerID === s.containerID);
    if (before?.started && runningSinceBeforeRestart(s, this.startedAt)) return true;
    // A startup probe that has not judged yet: not started; none at all: started.
    return !this.workers.has(key(pod.metadata?.uid ?? '', s.name, 'Startup'));
  }

  private isReady(pod: V1Pod, s: V1ContainerStatus, spec: V1Container | undefined): boolean {
    if (!s.state?.running) return false;
    const id = bareContainerID(s.containerID);
    const r = this.readiness.get(id);
    if (r === 'Success') return true;
    const w = this.workers.get(key(pod.metadata?.uid ?? '', s.name, 'Readiness'));
    // No readiness probe: ready once started. One that has not run yet: run it now.
    let ready = !w;
    w?.trigger();
    if (runningSinceBeforeRestart(s, this.startedAt)) {
      // An agent restart does not make a ready pod flap: until probed, as the API last had it.
      if (!ready && r === undefined) ready = true;
      const podReady = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
      if (spec?.readinessProbe && !podReady) ready = false;
    }
    return ready;
  }

  /** Sets `started` and `ready` of the pod's container statuses from the probes' results. */
  updatePodStatus(pod: V1Pod, status: Pick<V1PodStatus, 'containerStatuses' | 'initContainerStatuses'>): void {
    for (const s of status.containerStatuses ?? []) {
      const started = this.isStarted(pod, s);
      s.started = started;
      s.ready = started && this.isReady(pod, s, pod.spec?.containers?.find((c) => c.name === s.name));
    }
    for (const s of status.initContainerStatuses ?? []) {
      const spec = pod.spec?.initContainers?.find((c) => c.name === s.name);
      const started = this.isStarted(pod, s);
      s.started = started;
      if (!spec || !isRestartableInitContainer(spec)) {
        // A completed init container is ready; a running or failed one is not.
        s.ready = s.state?.terminated?.exitCode === 0;
        continue;
      }
      s.ready = started && this.isReady(pod, s, spec);
    }
  }
}
