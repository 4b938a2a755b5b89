// computePodActions: what SyncPod must do to bring a pod's runtime state to its spec.
// Pure: (pod, runtime status, probe results) -> plan. Every branch follows the seed's computePodActions.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { PodSandboxStatus } from '../cri/types.js';
import { hashContainer, legacyHashContainer } from './hash.js';
import { containerShouldRestart } from './restart-policy.js';
import { findContainerStatusByName, type ContainerStatus, type PodStatus } from './types.js';

export type ContainerKillReason = 'StartupProbe' | 'LivenessProbe' | 'FailedPostStartHook' | 'Unknown' | '';

export interface ContainerToKill {
  container: V1Container;
  name: string;
  /** Why, in the words of the Killing event ("Container x definition changed, will be restarted"). */
  message: string;
  reason: ContainerKillReason;
}

export interface PodActions {
  /** Stop every container and sandbox of the pod. */
  killPod: boolean;
  /** Create a new sandbox (after killing the old one; init containers are then purged). */
  createSandbox: boolean;
  /** The existing sandbox to start containers in; with createSandbox, the one being replaced ('' if none). */
  sandboxID: string;
  /** Attempt number of the sandbox to create. */
  attempt: number;
  /** Indexes into pod.spec.initContainers, in start order: the next init container, and sidecars to (re)start. */
  initContainersToStart: number[];
  /** Indexes into pod.spec.containers. */
  containersToStart: number[];
  /** Indexes into pod.spec.ephemeralContainers: those never started (they are never restarted). */
  ephemeralContainersToStart: number[];
  /** Keyed by container ID. */
  containersToKill: Map<string, ContainerToKill>;
}

/** Unknown: a startup probe that has not judged the container yet. */
export type ProbeResult = 'Success' | 'Failure' | 'Unknown';

/** Read side of the prober's results (liveness, readiness or startup), keyed by container ID. */
export interface ProbeResults {
  get(containerID: string): ProbeResult | undefined;
}

export const noProbeResults: ProbeResults = { get: () => undefined };

export interface ProbeInputs {
  liveness: ProbeResults;
  startup: ProbeResults;
}

/** An init container with restartPolicy Always: a sidecar, which keeps running beside the app. */
export function isRestartableInitContainer(c: V1Container): boolean {
  return c.restartPolicy === 'Always';
}

function createdMs(ns: string | undefined): number {
  return ns ? Number(BigInt(ns) / 1_000_000n) : 0;
}

/** The container instances of the pod's newest sandbox (the kubelet's ActiveContainerStatuses). */
export function activeContainerStatuses(status: PodStatus): ContainerStatus[] {
  const newest = status.sandboxStatuses[0];
  if (!newest) return [];
  const since = createdMs(String(newest.created_at ?? '0'));
  return status.containerStatuses.filter((c) => c.createdAt >= since);
}

function findActive(status: PodStatus, name: string): ContainerStatus | undefined {
  return activeContainerStatuses(status).find((c) => c.name === name);
}

export function isHostNetworkPod(pod: V1Pod): boolean {
  return pod.spec?.hostNetwork === true;
}

/** The CRI network namespace mode the pod needs. */
export function networkNamespaceForPod(pod: V1Pod): 'NODE' | 'POD' {
  return isHostNetworkPod(pod) ? 'NODE' : 'POD';
}

function restartPolicy(pod: V1Pod): string {
  return pod.spec?.restartPolicy ?? 'Always';
}

export function shouldRestartOnFailure(pod: V1Pod): boolean {
  return restartPolicy(pod) !== 'Never';
}

function containerSucceeded(c: V1Container, status: PodStatus): boolean {
  const s = findContainerStatusByName(status, c.name);
  if (!s || s.state === 'running') return false;
  return s.exitCode === 0;
}

export function isInitContainerFailed(status: ContainerStatus): boolean {
  if (status.reason === 'OOMKilled') return true;
  if (status.state === 'exited' && status.exitCode !== 0) return true;
  return status.state === 'unknown';
}

/** Whether a container that is not running should be (re)started, by its or the pod's restart policy. */
export function shouldContainerBeRestarted(container: V1Container, pod: V1Pod, status: PodStatus): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  const s = findContainerStatusByName(status, container.name);
  if (!s) return true;
  if (s.state === 'running') return false;
  if (s.state === 'unknown' || s.state === 'created') return true;
  return containerShouldRestart(container, pod.spec, s.exitCode);
}

export interface SandboxChange {
  changed: boolean;
  attempt: number;
  sandboxID: string;
  /** Why a new sandbox is needed, for the log. */
  why?: string;
}

/** Whether the pod needs a new sandbox (sandboxes are newest first in the status). */
export function podSandboxChanged(pod: V1Pod, status: PodStatus): SandboxChange {
  const sandboxes: PodSandboxStatus[] = status.sandboxStatuses;
  if (sandboxes.length === 0) return { changed: true, attempt: 0, sandboxID: '', why: 'no sandbox for the pod' };
  const ready = sandboxes.filter((s) => s.state === 'SANDBOX_READY').length;
  const latest = sandboxes[0]!;
  const nextAttempt = (latest.metadata?.attempt ?? 0) + 1;
  if (ready > 1) return { changed: true, attempt: nextAttempt, sandboxID: latest.id, why: 'multiple ready sandboxes' };
  if (latest.state !== 'SANDBOX_READY') return { changed: true, attempt: nextAttempt, sandboxID: latest.id, why: 'no ready sandbox' };
  const netMode = latest.linux?.namespaces?.options?.network ?? 'POD';
  if (netMode !== networkNamespaceForPod(pod)) {
    // As the seed: the old sandbox ID is not carried, so no SandboxChanged event is recorded for it.
    return { changed: true, attempt: nextAttempt, sandboxID: '', why: 'network namespace changed' };
  }
  if (!isHostNetworkPod(pod) && !latest.network?.ip) {
    return { changed: true, attempt: nextAttempt, sandboxID: latest.id, why: 'sandbox has no IP address' };
  }
  return { changed: false, attempt: latest.metadata?.attempt ?? 0, sandboxID: latest.id };
}

export function containerChanged(container: V1Container, status: ContainerStatus): boolean {
  return status.hash !== hashContainer(container) && status.hash !== legacyHashContainer(container);
}

export function computePodActions(pod: V1Pod, status: PodStatus, probes: ProbeInputs = { liveness: noProbeResults, startup: noProbeResults }): PodActions {
  const sandbox = podSandboxChanged(pod, status);
  const actions: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxID: sandbox.sandboxID,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: new Map(),
  };
  const containers = pod.spec?.containers ?? [];
  const inits = pod.spec?.initContainers ?? [];

  // A new sandbox means everything is killed and recreated, and init containers run again.
  if (sandbox.changed) {
    if (!shouldRestartOnFailure(pod) && sandbox.attempt !== 0 && status.containerStatuses.length !== 0) {
      // restartPolicy Never and containers already ran: the pod is done, do not bring it back.
      actions.createSandbox = false;
      return actions;
    }
    const toStart: number[] = [];
    containers.forEach((c, idx) => {
      const runOnce = c.restartPolicy ? c.restartPolicy === 'OnFailure' : restartPolicy(pod) === 'OnFailure';
      if (runOnce && containerSucceeded(c, status)) return;
      toStart.push(idx);
    });
    if (toStart.length === 0 && hasAnyRegularContainerCreated(pod, status)) {
      // Initialised and nothing left to run: no sandbox for a finished pod.
      actions.createSandbox = false;
      return actions;
    }
    if (inits.length !== 0) {
      actions.initContainersToStart = [0];
      return actions;
    }
    actions.containersToStart = toStart;
    return actions;
  }

  // Ephemeral containers run once, whatever the state of the others (a debugger for a pod stuck in init too).
  (pod.spec?.ephemeralContainers ?? []).forEach((c, i) => {
    if (!findContainerStatusByName(status, c.name)) actions.ephemeralContainersToStart.push(i);
  });

  const initialized = computeInitContainerActions(pod, status, probes, actions);
  if (actions.killPod || !initialized) return actions;

  let keepCount = 0;
  containers.forEach((container, idx) => {
    const cs = findContainerStatusByName(status, container.name);
    if (!cs || cs.state !== 'running') {
      if (shouldContainerBeRestarted(container, pod, status)) {
        actions.containersToStart.push(idx);
        if (cs?.state === 'unknown') {
          // It may be running after all: kill it so two instances never run at once.
          actions.containersToKill.set(cs.id.id, {
            name: cs.name,
            container,
            message: `Container is in "${cs.state}" state, try killing it before restart`,
            reason: 'Unknown',
          });
        }
      }
      return;
    }
    let message: string;
    let reason: ContainerKillReason = '';
    let restart = container.restartPolicy ? container.restartPolicy !== 'Never' : shouldRestartOnFailure(pod);
    if (containerChanged(container, cs)) {
      message = `Container ${container.name} definition changed`;
      // A changed spec is restarted whatever the restart policy.
      restart = true;
    } else if (probes.liveness.get(cs.id.id) === 'Failure') {
      message = `Container ${container.name} failed liveness probe`;
      reason = 'LivenessProbe';
    } else if (probes.startup.get(cs.id.id) === 'Failure') {
      message = `Container ${container.name} failed startup probe`;
      reason = 'StartupProbe';
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      actions.containersToStart.push(idx);
    }
    actions.containersToKill.set(cs.id.id, { name: cs.name, container, message, reason });
  });

  if (keepCount === 0 && actions.containersToStart.length === 0) {
    actions.killPod = true;
    actions.initContainersToStart = [];
  }
  return actions;
}

function hasAnyRegularContainerCreated(pod: V1Pod, status: PodStatus): boolean {
  return (pod.spec?.containers ?? []).some((c) => {
    const s = findContainerStatusByName(status, c.name);
    return s !== undefined && s.state !== 'unknown';
  });
}

/**
 * The kubelet's computeInitContainerActions: walking the init containers from the last, the next
 * one to start once the one before it completed (or, for a sidecar, started), and the sidecars to
 * start again (exited, failed probes, changed spec). Whether the pod is initialised (its app
 * containers may run). A failed init container under restartPolicy Never kills the pod.
 */
export function computeInitContainerActions(pod: V1Pod, status: PodStatus, probes: ProbeInputs, actions: PodActions): boolean {
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length === 0) return true;
  // An app container of the current sandbox means initialisation ended earlier.
  let initialized = (pod.spec?.containers ?? []).some((c) => findActive(status, c.name) !== undefined);
  let previouslyInitialized = initialized;
  const restartOnFailure = shouldRestartOnFailure(pod);
  const toStart: number[] = [];
  const kill = (s: ContainerStatus, c: V1Container, message: string, reason: ContainerKillReason) => actions.containersToKill.set(s.id.id, { name: c.name, container: c, message, reason });
  for (let i = inits.length - 1; i >= 0; i--) {
    const c = inits[i]!;
    const sidecar = isRestartableInitContainer(c);
    const s = findActive(status, c.name);
    if (!s) {
      // Initialised before, and its instance is gone: a sidecar is started again.
      if (previouslyInitialized && sidecar) toStart.push(i);
      continue;
    }
    if (previouslyInitialized && !sidecar) continue; // done; only sidecars are kept running
    switch (s.state) {
      case 'created':
        // Created but never started (the runtime failed to start it): start it again.
        toStart.push(i);
        break;
      case 'running': {
        if (!sidecar) break;
        if (c.startupProbe) {
          const startup = probes.startup.get(s.id.id);
          if (startup !== 'Success') {
            if (startup === 'Failure') {
              kill(s, c, `Init container ${c.name} failed startup probe`, 'StartupProbe');
              toStart.push(i);
            }
            break; // not started yet: the next one waits
          }
        }
        if (i === inits.length - 1) initialized = true;
        else if (!previouslyInitialized) toStart.push(i + 1);
        if (containerChanged(c, s)) {
          kill(s, c, `Init container ${c.name} definition changed`, '');
          toStart.push(i);
          break;
        }
        if (c.livenessProbe && probes.liveness.get(s.id.id) === 'Failure') {
          kill(s, c, `Init container ${c.name} failed liveness probe`, 'LivenessProbe');
          toStart.push(i);
        }
        break;
      }
      case 'exited':
        if (sidecar) {
          toStart.push(i);
        } else if (isInitContainerFailed(s)) {
          if (!shouldContainerBeRestarted(c, pod, status)) {
            actions.killPod = true;
            actions.initContainersToStart = [];
            return false;
          }
          toStart.push(i);
        } else if (i === inits.length - 1) {
          initialized = true;
        } else {
          toStart.push(i + 1);
        }
        break;
      default:
        // Unknown: it may still run; kill it before it is started again (no exit code: only policies count).
        if (!sidecar && !(c.restartPolicy ? c.restartPolicy !== 'Never' : restartOnFailure)) {
          actions.killPod = true;
          actions.initContainersToStart = [];
          return false;
        }
        kill(s, c, `Init container is in "${s.state}" state, try killing it before restart`, 'Unknown');
        toStart.push(i);
    }
    // Everything before this one has run (or runs).
    if (!previouslyInitialized) previouslyInitialized = true;
  }
  if (!previouslyInitialized) toStart.push(0);
  actions.initContainersToStart = toStart.reverse();
  return initialized;
}
