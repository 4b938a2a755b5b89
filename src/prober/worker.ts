// One probe of one container, run every periodSeconds from when its pod is added until the pod
// is removed or terminal, as the kubelet's probe worker: the result only changes once a run of
// successThreshold successes or failureThreshold failures is seen; liveness and startup are
// skipped until the container has started, readiness too; after a liveness failure (or a decided
// startup) the worker waits for the container to be replaced.
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus, V1Probe } from '@kubernetes/client-node';
import { containerShouldRestart } from '../runtime/restart-policy.js';
import type { Clock, Timer } from '../util/clock.js';
import type { ProbeResult, ResultsManager } from './results.js';
import type { ProbeType } from './types.js';

export interface WorkerHost {
  clock: Clock;
  /** When the manager started: a worker of an agent that just started waits a random part of a period first. */
  startedAt: number;
  random(): number;
  /** The pod's status as last computed (the status manager's), if any. */
  podStatus(uid: string): V1PodStatus | undefined;
  probe(type: ProbeType, spec: V1Probe, pod: V1Pod, podIP: string, container: V1Container, containerID: string): Promise<{ result: ProbeResult; error?: Error }>;
  results(type: ProbeType): ResultsManager;
  /** A probe ran: for prober_probe_total and prober_probe_duration_seconds. */
  observe(w: ProbeWorker, result: ProbeResult, seconds: number): void;
  /** The worker ended (pod terminal or removed). */
  removed(w: ProbeWorker): void;
}

/** The kubelet's grace for telling containers that ran before a restart of the agent. */
const RESTART_GRACE_MS = 10_000;

/** "containerd://abc" -> "abc": results are keyed by the runtime's own ID. */
export function bareContainerID(id: string | undefined): string {
  if (!id) return '';
  const i = id.indexOf('://');
  return i < 0 ? id : id.slice(i + 3);
}

/** Whether a running container started before the agent (that started at `agentStart`) did. */
export function runningSinceBeforeRestart(s: V1ContainerStatus, agentStart: number): boolean {
  const at = s.state?.running?.startedAt ? new Date(s.state.running.startedAt).getTime() : undefined;
  return at !== undefined && at < agentStart - RESTART_GRACE_MS;
}

export class ProbeWorker {
  private containerID = '';
  private lastResult?: ProbeResult;
  private resultRun = 0;
  private onHold = false;
  private timer?: Timer;
  private running = false;
  private triggered = false;
  private stopped = false;
  private readonly initialValue: ProbeResult | undefined;

  constructor(
    private readonly host: WorkerHost,
    readonly type: ProbeType,
    public pod: V1Pod,
    readonly container: V1Container,
    private readonly spec: V1Probe,
    /** An init container with restartPolicy Always (a sidecar). */
    readonly restartableInit: boolean,
  ) {
    // Until probed: not ready, alive, not started.
    this.initialValue = type === 'Readiness' ? 'Failure' : type === 'Liveness' ? 'Success' : 'Unknown';
  }

  get periodMs(): number {
    return (this.spec.periodSeconds && this.spec.periodSeconds > 0 ? this.spec.periodSeconds : 10) * 1000;
  }

  start(): void {
    const { clock } = this.host;
    // An agent that just (re)started would probe everything at once: spread the first runs.
    const delay = this.periodMs > clock.now() - this.host.startedAt ? Math.floor(this.host.random() * this.periodMs) : 0;
    this.timer = clock.setTimer(delay, () => void this.loop());
  }

  /** Ends the worker after its current probe, if one runs. Safe to call more than once. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.timer?.cancel();
    if (!this.running) this.finish();
  }

  /** Probe now (readiness, when a status is made and this container has no result yet). */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.triggered = true;
      return;
    }
    this.timer?.cancel();
    void this.loop();
  }

  private async loop(): Promise<void> {
    if (this.stopped || this.running) return;
    this.running = true;
    let keepGoing = true;
    try {
      keepGoing = await this.doProbe();
    } catch {
      keepGoing = true;
    } finally {
      this.running = false;
    }
    if (this.stopped || !keepGoing) {
      this.stopped = true;
      this.finish();
      return;
    }
    if (this.triggered) {
      this.triggered = false;
      this.timer = this.host.clock.setTimer(0, () => void this.loop());
      return;
    }
    this.timer = this.host.clock.setTimer(this.periodMs, () => void this.loop());
  }

  private finish(): void {
    if (this.containerID) this.host.results(this.type).remove(this.containerID);
    this.host.removed(this);
  }

  private set(result: ProbeResult): void {
    this.host.results(this.type).set(this.containerID, result, this.pod.metadata?.uid ?? '');
  }

  private findStatus(status: V1PodStatus): V1ContainerStatus | undefined {
    const name = this.container.name;
    const c = status.containerStatuses?.find((s) => s.name === name);
    if (c?.containerID) return c;
    const i = status.initContainerStatuses?.find((s) => s.name === name);
    return i?.containerID ? i : undefined;
  }

  /** One run; whether the worker goes on. */
  async doProbe(): Promise<boolean> {
    const { clock } = this.host;
    const started = clock.now();
    const uid = this.pod.metadata?.uid ?? '';
    const status = this.host.podStatus(uid);
    if (!status) return true; // not synced yet
    if (status.phase === 'Failed' || status.phase === 'Succeeded') return false;
    const c = this.findStatus(status);
    if (!c) return true; // no container yet
    const id = bareContainerID(c.containerID);
    if (id !== this.containerID) {
      if (this.containerID) this.host.results(this.type).remove(this.containerID);
      this.containerID = id;
      // A container that ran before the agent restarted keeps its state until probed, so that a
      // ready pod does not flap to not ready on a restart of the agent.
      const fromBefore = runningSinceBeforeRestart(c, this.host.startedAt);
      if (this.restartableInit && this.type === 'Startup' && c.started) this.set('Success');
      if (!fromBefore) this.set(this.initialValue!);
      this.onHold = false;
    }
    if (this.onHold) return true;
    if (!c.state?.running) {
      this.set('Failure');
      // Keep going only while the container may be started again.
      return !c.state?.terminated || this.restartableInit || containerShouldRestart(this.container, this.pod.spec, c.state.terminated.exitCode);
    }
    if (this.pod.metadata?.deletionTimestamp && (this.type === 'Liveness' || this.type === 'Startup')) {
      // A pod that is going is not restarted for failing: a last Success, and no more probes.
      this.set('Success');
      return false;
    }
    const startedAt = new Date(c.state.running.startedAt ?? 0).getTime();
    if (clock.now() - startedAt < (this.spec.initialDelaySeconds ?? 0) * 1000) return true;
    if (c.started) {
      // A started container needs no more startup probes (the worker stays for its next instance).
      if (this.type === 'Startup') return true;
    } else if (this.type !== 'Startup') {
      return true;
    }
    const podIP = status.podIP ?? '';
    const { result, error } = await this.host.probe(this.type, this.spec, this.pod, podIP, this.container, this.containerID);
    if (error) return true; // could not probe: the result is thrown away
    this.host.observe(this, result, (clock.now() - started) / 1000);
    if (this.lastResult === result) this.resultRun++;
    else {
      this.lastResult = result;
      this.resultRun = 1;
    }
    const failureThreshold = this.spec.failureThreshold && this.spec.failureThreshold > 0 ? this.spec.failureThreshold : 3;
    const successThreshold = this.spec.successThreshold && this.spec.successThreshold > 0 ? this.spec.successThreshold : 1;
    if ((result === 'Failure' && this.resultRun < failureThreshold) || (result === 'Success' && this.resultRun < successThreshold)) return true;
    this.set(result);
    if ((this.type === 'Liveness' && result === 'Failure') || this.type === 'Startup') {
      // The container will be restarted (or has started): nothing to probe until its next instance.
      this.onHold = true;
      this.resultRun = 0;
    }
    return true;
  }
}
