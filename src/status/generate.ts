// The API PodStatus the kubelet would write, from the runtime's view of the pod and the last
// sync's results: phase, conditions, container statuses (state, lastState, restarts), IPs, QoS.
import type { NodeEnded } from './node-ended.js';
import type { V1Container, V1ContainerState, V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus, V1ResourceRequirements } from '@kubernetes/client-node';
import { isStaticPod } from '../pods/static-pods.js';
import { terminatedPodStatus } from './terminate.js';
import { volumeMountStatuses } from '../volumes/container-mounts.js';
import { isRestartableInitContainer } from '../runtime/pod-actions.js';
import { podQOSClass } from '../runtime/resources.js';
import { containerShouldRestart } from '../runtime/restart-policy.js';
import type { PodSyncResult } from '../runtime/sync-result.js';
import { KUBELET_CONDITIONS } from './patch.js';
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
  /** Its containers have stopped for good (after a kill on deletion, or at its end). */
  podIsTerminal?: boolean;
  /** The node ends the pod (evicted, or activeDeadlineSeconds passed): phase Failed with this reason and message; an eviction for node pressure says so in a DisruptionTarget condition too. */
  evict?: NodeEnded;
  /** In-place resize: the resources allocated (the pod as allocated), those each running container has, and the resize conditions. */
  resize?: { allocatedPod: V1Pod; actuated: (containerID: string) => V1ResourceRequirements | undefined; conditions: V1PodCondition[] };
  /** The status last computed for the pod (the status manager's), newer than the API's copy until it is written and seen. */
  oldStatus?: V1PodStatus;
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

/**
 * One runtime instance as the API shows it (convertContainerStatus). A container the runtime
 * cannot tell about (unknown) but the API last saw running has stopped: Terminated with exit code
 * 137 and one more restart, so a run-once container is not run twice.
 */
function stateOf(s: ContainerStatus, old: V1ContainerStatus | undefined): { state: V1ContainerState; lostRestart: boolean } {
  switch (s.state) {
    case 'running':
      return { state: { running: { startedAt: iso(s.startedAt) } }, lostRestart: false };
    case 'exited':
      return { state: terminated(s), lostRestart: false };
    case 'created':
      // Created, not started: waiting to run, with no reason of its own.
      return { state: { waiting: {} }, lostRestart: false };
    default:
      if (old?.state?.running) {
        const t = { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated', exitCode: 137 };
        return { state: { terminated: t }, lostRestart: true };
      }
      return { state: { waiting: {} }, lostRestart: false };
  }
}

/**
 * Whether a container that is not running will be started again (the kubelet's
 * ShouldContainerBeRestarted): only then is it shown waiting with the last sync's reason.
 */
function willRestart(c: V1Container, input: GenerateInput, status: V1ContainerStatus): boolean {
  const pod = input.pod;
  if (pod.metadata?.deletionTimestamp || input.podIsTerminal) return false;
  const t = status.state?.terminated;
  return !t || containerShouldRestart(c, pod.spec, t.exitCode);
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
      const current = stateOf(latest, previousOld);
      // The instance before the newest, whatever became of it.
      const before = instances[1] ? stateOf(instances[1], previousOld).state : undefined;
      status = {
        name: c.name,
        image: c.image ?? latest.image,
        imageID: latest.imageRef,
        containerID: formatContainerID(latest.id),
        state: current.state,
        lastState: before ?? {},
        restartCount: current.lostRestart ? (previousOld?.restartCount ?? latest.restartCount) + 1 : latest.restartCount,
        ready: latest.state === 'running',
        started: latest.state === 'running',
      };
    } else if (previousOld?.state?.terminated) {
      // The runtime collected the instance; what the API already says about it still holds.
      status = { ...previousOld, ready: false, started: false };
    } else {
      status = {
        name: c.name,
        image: c.image ?? '',
        imageID: '',
        state: { waiting: { reason: defaultReason } },
        lastState: previousOld?.lastState ?? {},
        restartCount: previousOld?.restartCount ?? 0,
        ready: false,
        started: false,
      };
      if (previousOld?.state?.running && !status.lastState?.terminated) {
        // It ran, and the runtime no longer has it: it stopped, though how is not known.
        const message = 'The container could not be located when the pod was deleted.  The container used to be Running';
        status.lastState = { terminated: { reason: 'ContainerStatusUnknown', message, exitCode: 137 } };
        if (!input.pod.metadata?.deletionTimestamp) status.restartCount++;
      }
    }
    if (input.resize && latest) {
      // What it was allocated, and what it runs with (the allocation until a resize is applied);
      // as the kubelet, only for containers the runtime has.
      const allocated = [...(input.resize.allocatedPod.spec?.initContainers ?? []), ...(input.resize.allocatedPod.spec?.containers ?? [])].find((x) => x.name === c.name)?.resources ?? {};
      if (allocated.requests) status.allocatedResources = allocated.requests;
      status.resources = (latest && latest.state === 'running' && input.resize.actuated(latest.id.id)) || allocated;
    }
    const failure = failures.get(c.name);
    if (failure && !status.state?.running && willRestart(c, input, status)) {
      // A container that failed to start waits, with the failure's reason; its last exit stays visible.
      status.lastState = status.state?.terminated ? status.state : status.lastState;
      status.state = { waiting: { reason: failure.reason, message: failure.message || undefined } };
      status.ready = false;
      status.started = false;
    }
    // Whatever its state, from its spec (no runtime here offers recursive read-only mounts yet).
    const mounts = volumeMountStatuses(c, false);
    if (mounts) status.volumeMounts = mounts;
    return status;
  });
}

/**
 * The kubelet's getPhase. Sidecars (restartable init containers) hold the pod Pending until they
 * have started, count as running while they run, and are not counted once they stopped; a pod
 * whose containers have all stopped for good (`podIsTerminal`: it was deleted, or ran to its end)
 * is Succeeded or Failed whatever its restart policy.
 */
export function podPhase(pod: V1Pod, init: V1ContainerStatus[], regular: V1ContainerStatus[], podIsTerminal = false, podHasInitialized = false): string {
  const find = (list: V1ContainerStatus[], name: string) => list.find((s) => s.name === name);
  let pendingInit = 0;
  let pendingSidecars = 0;
  let failedInitForGood = 0;
  let stoppedForGood = 0;
  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    const s = find(init, c.name);
    if (isRestartableInitContainer(c)) {
      if (!s) unknown++;
      else if (s.state?.running) {
        if (!s.started) pendingSidecars++;
        running++;
      } else if (s.state?.terminated) {
        // A stopped sidecar does not count.
      } else if (s.state?.waiting) {
        if (!s.lastState?.terminated) {
          pendingSidecars++;
          waiting++;
        }
      } else {
        pendingSidecars++;
        unknown++;
      }
      continue;
    }
    const t = s?.state?.terminated ?? (s?.state?.waiting ? s.lastState?.terminated : undefined);
    if (!s || s.state?.running) pendingInit++;
    else if (t) {
      if (t.exitCode !== 0 && !containerShouldRestart(c, pod.spec, t.exitCode)) failedInitForGood++;
    } else pendingInit++;
  }
  for (const c of pod.spec?.containers ?? []) {
    const s = find(regular, c.name);
    if (!s) unknown++;
    else if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (!containerShouldRestart(c, pod.spec, s.state.terminated.exitCode)) stoppedForGood++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) {
        stopped++;
        if (!containerShouldRestart(c, pod.spec, s.lastState.terminated.exitCode)) stoppedForGood++;
      } else waiting++;
    } else unknown++;
  }
  // Each container's own restart policy (or the pod's) decides what "done" means.
  if (failedInitForGood > 0) return 'Failed';
  if (pendingInit > 0 || (pendingSidecars > 0 && !podHasInitialized)) return 'Pending';
  if (waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    // Stopped for good: the restart policy no longer matters (static pods keep the old rule).
    if (podIsTerminal && !isStaticPod(pod)) return stopped === succeeded ? 'Succeeded' : 'Failed';
    if (stopped !== stoppedForGood) return 'Running';
    return stopped === succeeded ? 'Succeeded' : 'Failed';
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

const DISRUPTION_TARGET = 'DisruptionTarget';

/** The condition the kubelet's eviction manager sets on a pod it evicts for node pressure. */
function disruptionTarget(message: string, now: number, old: V1PodCondition[] | undefined): V1PodCondition {
  const prev = old?.find((c) => c.type === DISRUPTION_TARGET && c.status === 'True');
  return { type: DISRUPTION_TARGET, status: 'True', reason: 'TerminationByKubelet', message, lastTransitionTime: prev?.lastTransitionTime ?? iso(now), lastProbeTime: null as unknown as undefined };
}

const containersReadyOk = (notReady: string[], completed: boolean) => notReady.length === 0 && !completed;

/** Why the pod's readiness gates are not satisfied, in the kubelet's words (none: satisfied). */
function readinessGateMessages(pod: V1Pod, conditions: V1PodCondition[]): string[] {
  const out: string[] = [];
  for (const g of pod.spec?.readinessGates ?? []) {
    const c = conditions.find((x) => x.type === g.conditionType);
    if (!c) out.push(`corresponding condition of pod readiness gate "${g.conditionType}" does not exist.`);
    else if (c.status !== 'True') out.push(`the status of pod readiness gate "${g.conditionType}" is not "True", but ${c.status}`);
  }
  return out;
}

export function generateAPIPodStatus(input: GenerateInput): V1PodStatus {
  const { pod, runtime, now } = input;
  // As the kubelet: the status manager's newest status is the one to continue from; the API's copy is
  // only older, except for what others own (their conditions) and the phase the API already shows.
  const api = pod.status ?? {};
  const old = input.oldStatus ?? api;
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
  const podHasInitialized = regularStatuses.some((s) => s.state?.running || s.state?.terminated || s.lastState?.terminated);
  let phase = podPhase(pod, initStatuses, regularStatuses, input.podIsTerminal, podHasInitialized);
  // A finished pod stays finished (the status manager refuses a terminal -> non-terminal change).
  if ((old.phase === 'Succeeded' || old.phase === 'Failed') && phase !== 'Succeeded' && phase !== 'Failed') phase = old.phase;
  // The reason and message of a phase stay with it.
  let reason = phase === old.phase ? old.reason || api.reason : undefined;
  let message = phase === old.phase ? old.message || api.message : undefined;
  if (input.evict) {
    phase = 'Failed';
    reason = input.evict.reason;
    message = input.evict.message;
  }
  // No way out of a terminal phase the API already shows.
  if ((api.phase === 'Succeeded' || api.phase === 'Failed') && phase !== api.phase) {
    phase = api.phase;
    reason = api.reason;
    message = api.message;
  }

  const newest = runtime.sandboxStatuses[0];
  const sandboxReady = newest?.state === 'SANDBOX_READY' && (pod.spec?.hostNetwork === true || !!newest.network?.ip);
  // An init container is done when it exited 0; a sidecar, once it has started.
  const sidecar = (name: string) => inits.some((c) => c.name === name && isRestartableInitContainer(c));
  const notInitialized = initStatuses.filter((s) => (sidecar(s.name) ? !s.started : !(s.state?.terminated && s.state.terminated.exitCode === 0))).map((s) => s.name);
  // Sidecars count for readiness as app containers do.
  const sidecars = initStatuses.filter((st) => sidecar(st.name));
  const notReady = [...sidecars, ...regularStatuses].filter((s) => !s.ready).map((s) => s.name);
  // A terminal pod is not ready, whatever its containers say, with the phase as the reason.
  const completed = phase === 'Succeeded' || phase === 'Failed';
  const readyReason = phase === 'Succeeded' ? 'PodCompleted' : phase === 'Failed' ? 'PodFailed' : 'ContainersNotReady';
  const readyMessage = completed ? undefined : `containers with unready status: [${notReady.join(' ')}]`;
  // Readiness gates: Ready also waits for every gate's condition (set by others) to be True.
  const gates = containersReadyOk(notReady, completed) ? readinessGateMessages(pod, api.conditions ?? []) : [];
  const podReady = notReady.length === 0 && !completed && gates.length === 0;
  const conditions: V1PodCondition[] = [
    // Conditions other controllers own (DisruptionTarget, readiness gates' ...) are theirs: kept as they are.
    ...(api.conditions ?? []).filter((c) => !KUBELET_CONDITIONS.has(c.type) && !(input.evict?.disruptionTarget && c.type === DISRUPTION_TARGET)),
    ...(input.evict?.disruptionTarget ? [disruptionTarget(input.evict.disruptionTarget, now, api.conditions)] : []),
    condition('PodReadyToStartContainers', sandboxReady, now, old.conditions),
    condition('Initialized', notInitialized.length === 0 || phase === 'Succeeded', now, old.conditions, 'ContainersNotInitialized', `containers with incomplete status: [${notInitialized.join(' ')}]`),
    gates.length ? condition('Ready', false, now, old.conditions, 'ReadinessGatesNotReady', gates.join(', ')) : condition('Ready', podReady, now, old.conditions, readyReason, readyMessage),
    condition('ContainersReady', notReady.length === 0 && !completed, now, old.conditions, readyReason, readyMessage),
  ];
  // A pod on this node is scheduled, whoever bound it (the scheduler, or its creator through
  // spec.nodeName): the kubelet reports PodScheduled True either way, the scheduler's as it was.
  const scheduled = old.conditions?.find((c) => c.type === 'PodScheduled') ?? api.conditions?.find((c) => c.type === 'PodScheduled');
  conditions.push(scheduled?.status === 'True' ? scheduled : condition('PodScheduled', true, now, undefined));
  // A terminal pod has no resize to wait for or to apply.
  if (input.resize && phase !== 'Succeeded' && phase !== 'Failed') conditions.push(...input.resize.conditions);

  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const podIPs = runtime.ips.length > 0 ? runtime.ips : terminal ? (old.podIPs ?? []).map((p) => p.ip) : [];
  const status: V1PodStatus = {
    phase,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
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
  const ephemeral = (pod.spec?.ephemeralContainers ?? []) as V1Container[];
  if (ephemeral.length) {
    // Ephemeral containers are never ready (nothing routes to them) and never restarted.
    status.ephemeralContainerStatuses = containerStatuses(ephemeral, { ...input, pod: { ...pod, spec: { ...pod.spec!, restartPolicy: 'Never' } } }, old.ephemeralContainerStatuses, 'ContainerCreating');
    for (const st of status.ephemeralContainerStatuses) st.ready = false;
  }
  if (pod.spec?.hostNetwork) {
    status.podIP = input.nodeIP;
    status.podIPs = [{ ip: input.nodeIP }];
  }
  return input.podIsTerminal ? terminatedPodStatus(pod, status) : status;
}
