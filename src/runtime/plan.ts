// The plan: what computePodActions decided for a pod, explained step by step in plain words, without
// acting. Pure over (pod, runtime status, actions, back-off state, probe results). `nodelet plan`
// prints it, every sync that acts logs it, and the sync history keeps it beside what happened.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { gracePeriodSeconds } from '../pods/pod-workers.js';
import { containerBackoffKey, type Backoff } from './backoff.js';
import { hashContainer } from './hash.js';
import { podSandboxChanged, type PodActions, type ProbeInputs } from './pod-actions.js';
import { findContainerStatusByName, type ContainerStatus, type PodStatus } from './types.js';

export type PlanVerb = 'kill-pod' | 'kill-sandbox' | 'create-sandbox' | 'kill' | 'start' | 'wait' | 'keep';
export type PlanTargetKind = 'pod' | 'sandbox' | 'init' | 'regular' | 'ephemeral';

export interface PlanStep {
  verb: PlanVerb;
  kind: PlanTargetKind;
  /** The container's name, or the sandbox's short ID. */
  target: string;
  /** The seed's reason for the step: SandboxChanged, LivenessProbe, CrashLoopBackOff, Running ... */
  reason: string;
  /** The step in plain words, as `nodelet plan` prints it. */
  text: string;
  /** The container's or sandbox's full ID, where there is one. */
  id?: string;
  /** The attempt a start would make (the container's restart count then, or the sandbox's attempt). */
  attempt?: number;
  /** For a wait: how long the crash-loop back-off still holds the start. */
  backOffRemainingMs?: number;
}

/** Steps that change something (a keep changes nothing; a wait is what a sync reports as CrashLoopBackOff). */
export function acts(step: PlanStep): boolean {
  return step.verb !== 'keep';
}

export interface PlanInputs {
  pod: V1Pod;
  status: PodStatus;
  actions: PodActions;
  probes: ProbeInputs;
  backoff: Pick<Backoff, 'isInBackOffSince' | 'remaining'>;
}

const short = (id: string) => id.slice(0, 12);

/** How long the crash-loop back-off still holds a container's start (0: it may start now). Reads, never records. */
export function backOffRemaining(backoff: PlanInputs['backoff'], pod: V1Pod, container: V1Container, status: PodStatus): number {
  const last = status.containerStatuses.find((c) => c.name === container.name && c.state === 'exited');
  if (!last) return 0;
  const m = pod.metadata ?? {};
  const key = containerBackoffKey(m.name ?? '', m.namespace ?? '', m.uid ?? '', container.name, hashContainer(container));
  return backoff.isInBackOffSince(key, last.finishedAt) ? Math.max(0, backoff.remaining(key, last.finishedAt)) : 0;
}

function exitText(s: ContainerStatus): string {
  if (s.state === 'exited') return `exited with ${s.exitCode}${s.reason && s.reason !== 'Error' && s.reason !== 'Completed' ? ` (${s.reason})` : ''}`;
  return s.state === 'created' ? 'created but never started' : `in state "${s.state}"`;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.ceil(ms)} ms` : `${Math.ceil(ms / 1000)} s`;
}

/** Why a container is started: the plan's kill of it, else what became of its last instance. */
function startWhy(status: ContainerStatus | undefined, killed: { reason: string; message: string } | undefined, newSandbox: boolean): { reason: string; why: string } {
  if (killed) return { reason: killReason(killed.reason), why: killed.message };
  if (!status) return { reason: 'NotStarted', why: 'not started yet' };
  if (newSandbox) return { reason: 'SandboxChanged', why: 'the pod gets a new sandbox' };
  return { reason: status.state === 'exited' ? 'Exited' : status.state === 'created' ? 'Created' : 'Unknown', why: `the last instance ${exitText(status)}` };
}

function killReason(reason: string): string {
  return reason === '' ? 'DefinitionChanged' : reason;
}

function probeFailures(c: V1Container, probe: 'liveness' | 'startup'): number {
  return (probe === 'liveness' ? c.livenessProbe : c.startupProbe)?.failureThreshold ?? 3;
}

/** The kill step of a container computePodActions kills, in words that say why. */
function killStep(kind: PlanTargetKind, id: string, k: { container: V1Container; name: string; message: string; reason: string }): PlanStep {
  let why = k.message;
  if (k.reason === 'LivenessProbe') why = `liveness probe failed ${probeFailures(k.container, 'liveness')} times`;
  else if (k.reason === 'StartupProbe') why = `startup probe failed ${probeFailures(k.container, 'startup')} times`;
  else if (k.reason === '') why = 'its definition changed (spec hash differs)';
  const restarts = k.message.endsWith('will be restarted');
  return { verb: 'kill', kind, target: k.name, id, reason: killReason(k.reason), text: `${restarts ? 'restart' : 'kill'} container ${k.name}: ${why}` };
}

/** The plan of one sync, in the order SyncPod runs it. */
export function explainPodActions(input: PlanInputs): PlanStep[] {
  const { pod, status, actions } = input;
  const steps: PlanStep[] = [];
  const spec = pod.spec;
  const sandbox = podSandboxChanged(pod, status);
  const current = status.sandboxStatuses[0];

  if (actions.killPod) {
    if (actions.createSandbox && current) {
      steps.push({ verb: 'kill-sandbox', kind: 'sandbox', target: short(current.id), id: current.id, reason: 'SandboxChanged', text: `kill sandbox ${short(current.id)} (${sandbox.why ?? 'the sandbox changed'}) and every container in it` });
    } else if (!actions.createSandbox) {
      const why = status.sandboxStatuses.length === 0 ? 'nothing of it runs' : 'no container runs or will run again (restartPolicy ' + (spec?.restartPolicy ?? 'Always') + ')';
      steps.push({ verb: 'kill-pod', kind: 'pod', target: pod.metadata?.name ?? '', reason: 'KillPod', text: `stop the pod: ${why}` });
    }
  } else {
    for (const [id, k] of actions.containersToKill) {
      const isInit = (spec?.initContainers ?? []).some((c) => c.name === k.name);
      steps.push(killStep(isInit ? 'init' : 'regular', id, k));
    }
  }
  if (actions.createSandbox) {
    const why = actions.attempt === 0 ? 'the pod has none yet' : (sandbox.why ?? 'the sandbox changed');
    steps.push({ verb: 'create-sandbox', kind: 'sandbox', target: 'sandbox', reason: actions.attempt === 0 ? 'NoSandbox' : 'SandboxChanged', attempt: actions.attempt, text: `create sandbox (attempt ${actions.attempt}): ${why}` });
  } else if (!actions.killPod && current) {
    steps.push({ verb: 'keep', kind: 'sandbox', target: short(current.id), id: current.id, reason: 'Ready', text: `keep sandbox ${short(current.id)}: ready, network unchanged` });
  }

  const starting = (kind: PlanTargetKind, c: V1Container) => {
    const s = findContainerStatusByName(status, c.name);
    const killed = s ? actions.containersToKill.get(s.id.id) : undefined;
    const attempt = s ? s.restartCount + 1 : 0;
    const { reason, why } = startWhy(s, killed, actions.createSandbox);
    const wait = killed || actions.createSandbox ? 0 : backOffRemaining(input.backoff, pod, c, status);
    if (wait > 0) {
      steps.push({ verb: 'wait', kind, target: c.name, reason: 'CrashLoopBackOff', attempt, backOffRemainingMs: Math.round(wait), text: `start container ${c.name} (attempt ${attempt}): back-off ends in ${seconds(wait)} (${why})` });
      return;
    }
    steps.push({ verb: 'start', kind, target: c.name, reason, attempt, text: `start container ${c.name} (attempt ${attempt}): ${why}` });
  };
  const keeping = (kind: PlanTargetKind, c: V1Container) => {
    const s = findContainerStatusByName(status, c.name);
    if (!s || (s.id.id && actions.containersToKill.has(s.id.id))) return;
    if (s.state === 'running') {
      steps.push({ verb: 'keep', kind, target: c.name, id: s.id.id, reason: 'Running', text: `keep container ${c.name}: running, spec hash unchanged` });
      return;
    }
    const policy = c.restartPolicy ?? spec?.restartPolicy ?? 'Always';
    const done = kind === 'init' && s.state === 'exited' && s.exitCode === 0;
    steps.push({ verb: 'keep', kind, target: c.name, id: s.id.id, reason: done ? 'Completed' : 'NotRestarted', text: done ? `keep init container ${c.name}: completed` : `leave container ${c.name}: ${exitText(s)}, restartPolicy ${policy}` });
  };

  (spec?.ephemeralContainers ?? []).forEach((c, i) => {
    if (actions.ephemeralContainersToStart.includes(i)) starting('ephemeral', c as V1Container);
    else if (!actions.killPod) keeping('ephemeral', c as V1Container);
  });
  const inits = spec?.initContainers ?? [];
  inits.forEach((c, i) => {
    if (actions.initContainersToStart.includes(i)) starting('init', c);
    else if (!actions.killPod && !actions.createSandbox) keeping('init', c);
  });
  (spec?.containers ?? []).forEach((c, i) => {
    if (actions.containersToStart.includes(i)) starting('regular', c);
    else if (!actions.killPod && !actions.createSandbox) keeping('regular', c);
  });
  return steps;
}

/** The plan of a pod being terminated: every running container, then the sandbox, is stopped. */
export function explainTermination(pod: V1Pod, status: PodStatus, why: string): PlanStep[] {
  const steps: PlanStep[] = [];
  for (const c of status.containerStatuses) {
    if (c.state !== 'running') continue;
    steps.push({ verb: 'kill', kind: (pod.spec?.initContainers ?? []).some((x) => x.name === c.name) ? 'init' : 'regular', target: c.name, id: c.id.id, reason: 'Terminating', text: `kill container ${c.name}: ${why}` });
  }
  for (const s of status.sandboxStatuses) {
    if (s.state !== 'SANDBOX_READY') continue;
    steps.push({ verb: 'kill-sandbox', kind: 'sandbox', target: short(s.id), id: s.id, reason: 'Terminating', text: `stop sandbox ${short(s.id)}: ${why}` });
  }
  if (steps.length === 0) steps.push({ verb: 'kill-pod', kind: 'pod', target: pod.metadata?.name ?? '', reason: 'Terminating', text: `finish the pod: ${why}; nothing of it runs any more` });
  return steps;
}

/** Why a pod's containers are stopped: its deletion (with the grace period its kill gets), or its end. */
export function terminationWhy(pod: V1Pod): string {
  return pod.metadata?.deletionTimestamp ? `the pod is being deleted (grace period ${gracePeriodSeconds(pod)} s)` : 'the pod has finished';
}
