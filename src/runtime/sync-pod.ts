// SyncPod: executes the plan of computePodActions against the runtime, step by step as the seed:
//   1. compute sandbox and container changes
//   2. kill the pod if the sandbox changed (or nothing is left to keep)
//   3. otherwise kill the containers that must not stay
//   4. create a new sandbox if needed
//   5. start ephemeral containers not started yet
//   6. start the next init container, and sidecars that must run again
//   7. start the app containers
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { criErrorText } from '../cri/errors.js';
import { containerRef, EventReasons, podRef } from '../kube/object-ref.js';
import { podFields } from '../observability/logger.js';
import { containerBackoffKey, formatGoDuration } from './backoff.js';
import { killContainer, pruneInitContainersBeforeStart, purgeInitContainers, startContainer } from './container.js';
import type { RuntimeManagerDeps } from './deps.js';
import { Reasons, SyncError } from './errors.js';
import { hashContainer } from './hash.js';
import { missingPullSecretsMessage, pullSecretsForPod } from '../images/pull-secrets.js';
import type { ContainerType } from './labels.js';
import { killPodWithSyncResult } from './kill.js';
import { computePodActions, isHostNetworkPod, isRestartableInitContainer } from './pod-actions.js';
import { computePodResizeAction } from './resize.js';
import { linuxContainerResources } from './resources.js';
import { createPodSandbox, determinePodSandboxIPs, generatePodSandboxConfig, SandboxConfigError } from './sandbox.js';
import { PodSyncResult, SyncResult } from './sync-result.js';
import { acts, explainPodActions } from './plan.js';
import { runningPodFromStatus, type PodStatus } from './types.js';

/** Whether the container is still backing off from its last exit; records BackOff when it is. */
export function doBackOff(deps: RuntimeManagerDeps, pod: V1Pod, container: V1Container, status: PodStatus): { inBackOff: boolean; message: string; remainingMs: number } {
  const last = status.containerStatuses.find((c) => c.name === container.name && c.state === 'exited');
  if (!last) return { inBackOff: false, message: '', remainingMs: 0 };
  const meta = pod.metadata ?? {};
  const key = containerBackoffKey(meta.name ?? '', meta.namespace ?? '', meta.uid ?? '', container.name, hashContainer(container));
  // Measured from the latest exit: a container that ran long enough starts afresh.
  const exitedAt = last.finishedAt;
  const backoff = deps.crashLoopBackoff;
  if (backoff.isInBackOffSince(key, exitedAt)) {
    const podText = `${meta.name}_${meta.namespace}(${meta.uid})`;
    // The kubelet's wording since 1.27 names the container and the pod.
    deps.recorder.event(containerRef(pod, container.name), 'Warning', EventReasons.BackOffStartContainer, `Back-off restarting failed container ${container.name} in pod ${podText}`);
    const message = `back-off ${formatGoDuration(backoff.get(key))} restarting failed container=${container.name} pod=${podText}`;
    return { inBackOff: true, message, remainingMs: backoff.remaining(key, exitedAt) };
  }
  backoff.next(key, exitedAt);
  return { inBackOff: false, message: '', remainingMs: 0 };
}

const metricType = (t: ContainerType) => (t === 'init' ? 'init_container' : t === 'ephemeral' ? 'ephemeral_container' : 'container');

export async function syncPod(deps: RuntimeManagerDeps, pod: V1Pod, status: PodStatus): Promise<PodSyncResult> {
  const result = new PodSyncResult();
  const fields = podFields(pod);

  // Step 1, explained before anything acts (the back-off read here is what the starts will meet).
  const actions = computePodActions(pod, status, deps.probes);
  result.plan = explainPodActions({ pod, status, actions, probes: deps.probes, backoff: deps.crashLoopBackoff });
  const acting = result.plan.filter(acts);
  if (acting.length) deps.logger.debug('sync plan', { ...fields, plan: acting.map((s) => s.text) });
  if (actions.createSandbox && actions.sandboxID !== '') {
    deps.recorder.event(podRef(pod), 'Normal', EventReasons.SandboxChanged, 'Pod sandbox changed, it will be killed and re-created.');
  }

  // Resources changed in place (pods/resize): updated, or restarted where their resizePolicy says so.
  const resizes = deps.actuated ? computePodResizeAction(pod, status, actions, deps.actuated) : [];

  // Step 2
  if (actions.killPod) {
    const kill = await killPodWithSyncResult(deps, pod, runningPodFromStatus(deps.runtimeName, status));
    result.addAll(kill);
    if (kill.error()) {
      deps.logger.error('killPodWithSyncResult failed', { ...fields, error: kill.error()!.message });
      return result;
    }
    if (actions.createSandbox) await purgeInitContainers(deps, pod, status);
  } else {
    // Step 3
    for (const [containerID, info] of actions.containersToKill) {
      const r = result.add(new SyncResult('KillContainer', info.name));
      const t0 = deps.clock.now();
      try {
        await killContainer(deps, pod, containerID, info.name, info.message, info.reason);
        r.durationMs = deps.clock.now() - t0;
      } catch (err) {
        r.fail(Reasons.KillContainer, (err as Error).message);
        deps.logger.error('kill container failed', { ...fields, container: info.name, error: (err as Error).message });
        return result;
      }
    }
  }

  // Dead init containers are removed eagerly rather than waiting for GC.
  await pruneInitContainersBeforeStart(deps, pod, status);

  let podIPs = status.ips;

  // Step 4
  let sandboxID = actions.sandboxID;
  if (actions.createSandbox) {
    deps.metrics.startedPods.inc();
    const r = result.add(new SyncResult('CreatePodSandbox', `${pod.metadata?.namespace}/${pod.metadata?.name}`));
    const t0 = deps.clock.now();
    try {
      sandboxID = await createPodSandbox(deps, pod, actions.attempt);
      r.durationMs = deps.clock.now() - t0;
    } catch (err) {
      deps.metrics.startedPodsErrors.inc();
      // A pod deleted while its sandbox was being created is not an error worth reporting.
      if (deps.podState.isPodTerminationRequested(pod.metadata?.uid ?? '')) return result;
      // The runtime's answer as the kubelet quotes it: "rpc error: code = ... desc = ...".
      const message = criErrorText(err);
      // A configuration the spec makes impossible is the kubelet's own words, not the runtime's.
      r.fail(Reasons.CreatePodSandbox, err instanceof SandboxConfigError ? `Failed to generate sandbox config for pod "${pod.metadata?.namespace}/${pod.metadata?.name}": ${message}` : message);
      deps.recorder.event(podRef(pod), 'Warning', EventReasons.FailedCreatePodSandBox, `Failed to create pod sandbox: ${message}`);
      deps.logger.error('CreatePodSandbox failed', { ...fields, error: message });
      return result;
    }
    try {
      const sb = (await deps.runtime.podSandboxStatus(sandboxID)).status;
      if (!sb) {
        result.fail(new Error('pod sandbox status is nil'));
        return result;
      }
      if (!isHostNetworkPod(pod)) podIPs = determinePodSandboxIPs(sb);
    } catch (err) {
      deps.recorder.event(podRef(pod), 'Warning', EventReasons.FailedStatusPodSandBox, `Unable to get pod sandbox status: ${(err as Error).message}`);
      result.fail(err as Error);
      return result;
    }
  }

  const configResult = result.add(new SyncResult('ConfigPodSandbox', sandboxID));
  let sandboxConfig;
  try {
    sandboxConfig = generatePodSandboxConfig(deps, pod, 0);
  } catch (err) {
    configResult.fail(Reasons.ConfigPodSandbox, `GeneratePodSandboxConfig for pod ${fields.pod} failed: ${(err as Error).message}`);
    return result;
  }

  // The resize of running containers (before any start), decreases first; one that fails stops the rest (retried next sync).
  // The pod's cgroup gets its new limits around them: before (room for an increase) and after (a decrease, once the containers' are lower).
  if (resizes.length) deps.podCgroupResized?.(pod);
  for (const u of resizes) {
    const r = result.add(new SyncResult('ResizePodInPlace', u.container.name));
    try {
      await deps.runtime.updateContainerResources(u.containerID, linuxContainerResources(pod, u.container, deps));
      deps.actuated!.set(u.containerID, u.container);
    } catch (err) {
      r.fail(Reasons.ResizePodInPlace, (err as Error).message);
      deps.logger.warn('container resize failed', { ...fields, container: u.container.name, error: (err as Error).message });
      break;
    }
  }

  if (resizes.length) deps.podCgroupResized?.(pod);
  const pull = await pullSecretsForPod(deps.configSource, pod);
  const start = async (container: V1Container, type: ContainerType): Promise<boolean> => {
    const r = result.add(new SyncResult('StartContainer', container.name));
    const bo = doBackOff(deps, pod, container, status);
    if (bo.inBackOff) {
      r.fail(Reasons.CrashLoopBackOff, bo.message);
      r.retryAfterMs = bo.remainingMs;
      return false;
    }
    const t0 = deps.clock.now();
    try {
      await startContainer(deps, { sandboxID, sandboxConfig, container, type, pod, podStatus: status, podIPs, pullSecrets: pull.secrets });
      r.durationMs = deps.clock.now() - t0;
      deps.metrics.startedContainers.inc({ container_type: metricType(type) });
      return true;
    } catch (err) {
      const reason = err instanceof SyncError ? err.reason : Reasons.RunContainer;
      deps.metrics.startedContainersErrors.inc({ container_type: metricType(type), code: reason });
      r.fail(reason, (err as Error).message);
      if (err instanceof SyncError) r.retryAfterMs = err.retryAfterMs;
      deps.logger.warn('container start failed', { ...fields, container: container.name, reason, error: (err as Error).message });
      return false;
    }
  };

  // Step 5: ephemeral containers first, so that one can debug a pod whose init containers fail.
  for (const idx of actions.ephemeralContainersToStart) await start(pod.spec!.ephemeralContainers![idx]! as V1Container, 'ephemeral');

  // Step 6: init containers in order; a sidecar that fails to start does not hold the others up.
  let initFailed = false;
  for (const idx of actions.initContainersToStart) {
    const c = pod.spec!.initContainers![idx]!;
    if (!(await start(c, 'init')) && !isRestartableInitContainer(c)) {
      initFailed = true;
      break;
    }
  }

  // Step 7: app containers start one after another, in spec order, each independent of the others' failure.
  if (!initFailed) for (const idx of actions.containersToStart) await start(pod.spec!.containers[idx]!, 'regular');

  // A pull that failed while some named pull secret could not be read: that may be why.
  if (pull.missing.length > 0 && result.results.some((r) => r.reason === Reasons.ImagePull)) {
    deps.recorder.event(podRef(pod), 'Warning', EventReasons.FailedToRetrieveImagePullSecret, missingPullSecretsMessage(pull.missing));
  }
  return result;
}
