// The API PodStatus the kubelet would write, from the runtime's view of the pod and the last
// sync's results: phase, conditions, container statuses (state, lastState, restarts), IPs, QoS.
import type { V1Container, V1ContainerState, V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import { podQOSClass } from '../runtime/resources.js';
import type { PodSyncResult } from '../runtime/sync-result.js';
import { formatContainerID, type ContainerStatus, type PodStatus } from '../runtime/types.js';

export interface GenerateInput {
  pod: V1Pod;
  runtime: PodStatus;
  /** The last sync's results: containers that failed to start get its reason as their waiting reason. */
  lastSync?: PodSyncResult;
  nodeIP: string;
  now: number;
  /** The prober manager: sets each container's started and ready from its probes (without it, running is both). */
  probes?: { updatePodStatus(pod: V1Pod, status: Pick<V1PodStatus, 'containerStatuses' | 'initContainerStatuses'>): void };
}

const iso = (ms: number) => new Date(ms);

function terminated(s: ContainerStatus): V1ContainerState {
  return {
    terminated: {
      exitCode: s.exitCode,
      reason: s.reason || (s.exitCode === 0 ? 'Completed' : 'Error'),
      message: s.message || undefined,
      startedAt: s.startedAt ? iso(s.startedAt) : undefined,
      finishedAt: s.finishedAt ? iso(s.finishedAt) : undefined,
      containerID: formatContainerID(s.id),
    },
  };
}

function stateOf(s: ContainerStatus): V1ContainerState {
  switch (s.state) {
    case 'running':
      return { running: { startedAt: iso(s.startedAt) } };
    case 'exited':
      return terminated(s);
    case 'created':
      return { waiting: { reason: 'ContainerCreating' } };
    default:
      return { waiting: { reason: 'ContainerStatusUnknown', message: 'The container state could not be read from the runtime' } };
  }
}

/** convertToAPIContainerStatuses for one list of containers (init or regular). */
function containerStatuses(
  containers: V1Container[],
  input: GenerateInput,
  old: V1ContainerStatus[] | undefined,
  defaultReason: string,
): V1ContainerStatus[] {
  const failures = new Map<string, { reason: string; message: string }>();
  for (const r of input.lastSync?.results ?? []) {
    if (r.action === 'StartContainer' && r.failed) failures.set(r.target, { reason: String(r.reason), message: r.message });
  }
  return containers.map((c) => {
    const instances = input.runtime.containerStatuses.filter((s) => s.name === c.name); // newest first
    const latest = instances[0];
    const previousOld = old?.find((o) => o.name === c.name);
    let status: V1ContainerStatus;
    if (latest) {
      const lastTerminated = instances.find((s, i) => i > 0 && s.state === 'exited');
      status = {
        name: c.name,
        image: c.image ?? latest.image,
        imageID: latest.imageRef,
        containerID: formatContainerID(latest.id),
        state: stateOf(latest),
        lastState: lastTerminated ? terminated(lastTerminated) : {},
        restartCount: latest.restartCount,
        ready: latest.state === 'running',
        started: latest.state === 'running',
      };
    } else if (previousOld && (previousOld.state?.terminated || previousOld.lastState?.terminated)) {
      // The runtime collected the instance; what the API already says about it still holds.
      status = { ...previousOld, ready: false, started: false };
    } else {
      status = {
        name: c.name,
        image: c.image ?? '',
        imageID: '',
        state: { waiting: { reason: defaultReason } },
        lastState: {},
        restartCount: previousOld?.restartCount ?? 0,
        ready: false,
        started: false,
      };
    }
    const failure = failures.get(c.name);
    if (failure && !status.state?.running) {
      // A container that failed to start waits, with the failure's reason; its last exit stays visible.
      status.lastState = status.state?.terminated ? status.state : status.lastState;
      status.state = { waiting: { reason: failure.reason, message: failure.message || undefined } };
      status.ready = false;
      status.started = false;
    }
    return status;
  });
}

export function podPhase(pod: V1Pod, init: V1ContainerStatus[], regular: V1ContainerStatus[]): string {
  const policy = pod.spec?.restartPolicy ?? 'Always';
  let pendingInit = 0;
  let failedInit = 0;
  for (const s of init) {
    const t = s.state?.terminated;
    if (t && t.exitCode === 0) continue;
    if (t) failedInit++;
    else if (s.state?.waiting && s.lastState?.terminated && s.lastState.terminated.exitCode !== 0) failedInit++;
    else pendingInit++;
  }
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const s of regular) {
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    }
  }
  if (failedInit > 0 && policy === 'Never') return 'Failed';
  if (pendingInit > 0 || failedInit > 0 || waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

function condition(type: string, ok: boolean, now: number, old: V1PodCondition[] | undefined, reason?: string, message?: string): V1PodCondition {
  const status = ok ? 'True' : 'False';
  const prev = old?.find((c) => c.type === type);
  // lastTransitionTime moves only when the status does.
  const lastTransitionTime = prev && prev.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : iso(now);
  return { type, status, lastTransitionTime, lastProbeTime: null as unknown as undefined, ...(ok ? {} : { reason, message }) };
}

export function generateAPIPodStatus(input: GenerateInput): V1PodStatus {
  const { pod, runtime, now } = input;
  const old = pod.status ?? {};
  const inits = pod.spec?.initContainers ?? [];
  const hasInit = inits.length > 0;
  const initStatuses = containerStatuses(inits, input, old.initContainerStatuses, 'PodInitializing');
  // As the kubelet's prober manager: an init container that completed (exit 0) is ready.
  for (const st of initStatuses) {
    const spec = inits.find((c) => c.name === st.name);
    if (spec?.restartPolicy !== 'Always' && st.state?.terminated?.exitCode === 0) st.ready = true;
  }
  const regularStatuses = containerStatuses(pod.spec?.containers ?? [], input, old.containerStatuses, hasInit ? 'PodInitializing' : 'ContainerCreating');
  input.probes?.updatePodStatus(pod, { containerStatuses: regularStatuses, initContainerStatuses: initStatuses });
  let phase = podPhase(pod, initStatuses, regularStatuses);
  // A finished pod stays finished (the status manager refuses a terminal -> non-terminal change).
  if ((old.phase === 'Succeeded' || old.phase === 'Failed') && phase !== 'Succeeded' && phase !== 'Failed') phase = old.phase;

  const newest = runtime.sandboxStatuses[0];
  const sandboxReady = newest?.state === 'SANDBOX_READY' && (pod.spec?.hostNetwork === true || !!newest.network?.ip);
  // An init container is done when it exited 0; a sidecar, once it has started.
  const sidecar = (name: string) => inits.find((c) => c.name === name)?.restartPolicy === 'Always';
  const notInitialized = initStatuses.filter((s) => (sidecar(s.name) ? !s.started : !(s.state?.terminated && s.state.terminated.exitCode === 0))).map((s) => s.name);
  // Sidecars count for readiness as app containers do.
  const sidecars = initStatuses.filter((st) => sidecar(st.name));
  const notReady = [...sidecars, ...regularStatuses].filter((s) => !s.ready).map((s) => s.name);
  // A terminal pod is not ready, whatever its containers say, with the phase as the reason.
  const completed = phase === 'Succeeded' || phase === 'Failed';
  const readyReason = phase === 'Succeeded' ? 'PodCompleted' : phase === 'Failed' ? 'PodFailed' : 'ContainersNotReady';
  const readyMessage = completed ? undefined : `containers with unready status: [${notReady.join(' ')}]`;
  const conditions: V1PodCondition[] = [
    condition('PodReadyToStartContainers', sandboxReady, now, old.conditions),
    condition('Initialized', notInitialized.length === 0 || phase === 'Succeeded', now, old.conditions, 'ContainersNotInitialized', `containers with incomplete status: [${notInitialized.join(' ')}]`),
    condition('Ready', notReady.length === 0 && !completed, now, old.conditions, readyReason, readyMessage),
    condition('ContainersReady', notReady.length === 0 && !completed, now, old.conditions, readyReason, readyMessage),
  ];
  const scheduled = old.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled) conditions.push(scheduled);

  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const podIPs = runtime.ips.length > 0 ? runtime.ips : terminal ? (old.podIPs ?? []).map((p) => p.ip) : [];
  const status: V1PodStatus = {
    phase,
    conditions,
    hostIP: input.nodeIP,
    hostIPs: [{ ip: input.nodeIP }],
    podIP: podIPs[0],
    podIPs: podIPs.map((ip) => ({ ip })),
    startTime: old.startTime ?? iso(now),
    qosClass: podQOSClass(pod),
    containerStatuses: regularStatuses,
  };
  if (hasInit) status.initContainerStatuses = initStatuses;
  if (pod.spec?.hostNetwork) {
    status.podIP = input.nodeIP;
    status.podIPs = [{ ip: input.nodeIP }];
  }
  return status;
}
