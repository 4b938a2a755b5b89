// Containers: start (image, config, create, start), kill with the kubelet's grace period rules,
// statuses rebuilt from CRI labels/annotations, and removal of dead instances.
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Dirent } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { criStatusMessage, isNotFound } from '../cri/errors.js';
import type { ContainerConfig, Mount, PodSandboxConfig, ContainerStatus as CriContainerStatus } from '../cri/types.js';
import { containerRef, EventReasons } from '../kube/object-ref.js';
import { podFields } from '../observability/logger.js';
import type { RuntimeManagerDeps } from './deps.js';
import { makeEnvironment, expandCommandAndArgs } from './env.js';
import { Reasons, SyncError } from './errors.js';
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  newContainerAnnotations,
  newContainerLabels,
  NodeNameLabel,
  PodUIDLabel,
  type ContainerType,
} from './labels.js';
import type { ContainerKillReason } from './pod-actions.js';
import { linuxContainerResources } from './resources.js';
import { createLegacyLogSymlink, removeLegacyLogSymlink } from './log-symlinks.js';
import { podHostname, podLogDirectory, podSupplementalGroups } from './sandbox.js';
import { appArmorProfile, DEFAULT_SECCOMP, seccompProfile } from './security-profiles.js';
import { servicesForPod, serviceEnvVars } from './service-env.js';
import { readTerminationMessage } from './termination-message.js';
import { runPostStartHook, runPreStopHook } from './hooks.js';
import type { TerminationOrdering } from './termination-ordering.js';
import { raceAbort } from '../util/abort.js';
import { makeMounts } from '../volumes/container-mounts.js';
import { findContainerStatusByName, type ContainerState, type ContainerStatus, type PodStatus } from './types.js';

export const MINIMUM_GRACE_PERIOD_SECONDS = 2;

const criState: Record<string, ContainerState> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

export function containerState(criName: string): ContainerState {
  return criState[criName] ?? 'unknown';
}

const nsToMs = (ns: string | number | undefined) => Math.floor(Number(ns ?? 0) / 1e6);

export function toContainerStatus(runtimeName: string, s: CriContainerStatus): ContainerStatus {
  const labels = getContainerInfoFromLabels(s.labels);
  const annotations = getContainerInfoFromAnnotations(s.annotations);
  return {
    id: { type: runtimeName, id: s.id },
    name: labels.containerName || s.metadata?.name || '',
    state: containerState(s.state),
    createdAt: nsToMs(s.created_at),
    startedAt: nsToMs(s.started_at),
    finishedAt: nsToMs(s.finished_at),
    exitCode: s.exit_code,
    image: s.image?.image ?? '',
    imageID: s.image_ref,
    imageRef: s.image_ref,
    hash: annotations.hash,
    restartCount: annotations.restartCount,
    reason: s.reason,
    message: s.message,
    ...(s.resources?.linux
      ? { resources: { cpuShares: Number(s.resources.linux.cpu_shares ?? 0), cpuQuota: Number(s.resources.linux.cpu_quota ?? 0), memoryLimit: Number(s.resources.linux.memory_limit_in_bytes ?? 0) } }
      : {}),
  };
}

/** Every container instance of a pod, newest first. */
export async function getPodContainerStatuses(deps: RuntimeManagerDeps, uid: string): Promise<ContainerStatus[]> {
  const containers = await deps.runtime.listContainers({ label_selector: { [PodUIDLabel]: uid, [NodeNameLabel]: deps.nodeName } });
  const statuses = await Promise.all(
    containers.map(async (c) => {
      try {
        const res = await deps.runtime.containerStatus(c.id);
        if (!res.status) return undefined;
        const st = toContainerStatus(deps.runtimeName, res.status);
        if (st.state === 'exited') {
          const a = getContainerInfoFromAnnotations(res.status.annotations);
          const term = await readTerminationMessage(res.status, a.terminationMessagePath, a.terminationMessagePolicy);
          if (term) st.message = st.message ? `${st.message}: ${term}` : term;
        }
        return st;
      } catch (err) {
        // Removed between the list and the status call: as if it was never listed.
        if (isNotFound(err)) return undefined;
        throw err;
      }
    }),
  );
  return statuses.filter((s): s is ContainerStatus => s !== undefined).sort((a, b) => b.createdAt - a.createdAt);
}

export interface StartContainerInput {
  sandboxID: string;
  sandboxConfig: PodSandboxConfig;
  container: V1Container;
  type: ContainerType;
  pod: V1Pod;
  podStatus: PodStatus;
  podIPs: string[];
  /** The pod's image pull secrets that could be read (this sync's). */
  pullSecrets?: V1Secret[];
}

/** The service-link variables of a pod; the kubelet's error when the Services are not read yet. */
async function podServiceEnv(deps: RuntimeManagerDeps, pod: V1Pod): Promise<Map<string, string> | undefined> {
  if (!deps.services) return undefined;
  const ns = pod.metadata?.namespace ?? '';
  const [own, inDefault] = await Promise.all([pod.spec?.enableServiceLinks === false ? [] : deps.services.services(ns), deps.services.services('default')]);
  if (own === undefined || inDefault === undefined) throw new SyncError(Reasons.CreateContainerConfig, 'services have not yet been read at least once, cannot construct envvars');
  return serviceEnvVars(servicesForPod(pod, own, inDefault));
}

/**
 * runAsNonRoot as the kubelet checks it before a container is made: the user asked for, else the
 * image's (no user in the image is root); failing is CreateContainerConfigError in its words.
 */
async function verifyRunAsNonRoot(deps: RuntimeManagerDeps, pod: V1Pod, container: V1Container, imageRef: string, runAsUser: number | undefined): Promise<void> {
  const nonRoot = container.securityContext?.runAsNonRoot ?? pod.spec?.securityContext?.runAsNonRoot;
  if (!nonRoot) return;
  const who = `pod: "${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})", container: ${container.name}`;
  const fail = (msg: string) => new SyncError(Reasons.CreateContainerConfig, msg);
  if (runAsUser != null) {
    if (runAsUser === 0) throw fail(`container's runAsUser breaks non-root policy (${who})`);
    return;
  }
  const img = (await deps.images.imageStatus({ image: imageRef }).catch(() => undefined))?.image;
  const uid = img?.uid?.value !== undefined && img.uid !== null ? Number(img.uid.value) : undefined;
  if (uid === undefined && img?.username) throw fail(`container has runAsNonRoot and image has non-numeric user (${img.username}), cannot verify user is non-root (${who})`);
  if ((uid ?? 0) === 0) throw fail(`container has runAsNonRoot and image will run as root (${who})`);
}

async function generateContainerConfig(deps: RuntimeManagerDeps, input: StartContainerInput, imageRef: string, restartCount: number): Promise<ContainerConfig> {
  const { container, pod } = input;
  if (container.volumeDevices?.length) {
    throw new SyncError(Reasons.CreateContainerConfig, `volume devices are not supported by nodelet (container ${container.name} uses ${container.volumeDevices.map((m) => m.name).join(', ')})`);
  }
  if (!deps.volumes && container.volumeMounts?.length) {
    throw new SyncError(Reasons.CreateContainerConfig, `volume mounts need a volume manager (container ${container.name} mounts ${container.volumeMounts.map((m) => m.name).join(', ')})`);
  }
  const env = await makeEnvironment({
    pod,
    container,
    podIPs: input.podIPs,
    hostIP: deps.nodeIP,
    nodeName: deps.nodeName,
    memoryCapacity: deps.memoryCapacity,
    configSource: deps.configSource,
    serviceEnv: await podServiceEnv(deps, pod),
    volumePath: (name) => deps.volumes?.volumesOf(pod.metadata?.uid ?? '').get(name)?.path,
  });
  const { command, args } = expandCommandAndArgs(container, env);
  let mounts: Mount[] = [];
  if (deps.volumes) {
    try {
      mounts = await makeMounts({
        pod,
        container,
        volumes: deps.volumes.volumesOf(pod.metadata?.uid ?? ''),
        paths: deps.volumes.host.paths,
        mounter: deps.volumes.host.mounter,
        env: new Map(env.map((e) => [e.key, e.value])),
        podIPs: input.podIPs,
        hostname: podHostname(pod),
        clusterDomain: deps.clusterDomain,
      });
    } catch (err) {
      throw new SyncError(Reasons.CreateContainerConfig, (err as Error).message, { cause: err });
    }
  }
  const sc = container.securityContext;
  const apparmor = appArmorProfile(pod, container);
  const podSc = pod.spec?.securityContext;
  const runAsUser = sc?.runAsUser ?? podSc?.runAsUser;
  await verifyRunAsNonRoot(deps, pod, container, imageRef, runAsUser);
  const runAsGroup = sc?.runAsGroup ?? podSc?.runAsGroup;
  return {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: imageRef, user_specified_image: container.image ?? '' },
    command,
    args,
    working_dir: container.workingDir ?? '',
    mounts,
    // KeyValue.value is `bytes` in CRI v1: a string would be read as base64.
    envs: env.map((e) => ({ key: e.key, value: Buffer.from(e.value, 'utf8') })),
    labels: newContainerLabels(container, pod, deps.nodeName),
    annotations: newContainerAnnotations(container, pod, restartCount, input.type),
    log_path: `${container.name}/${restartCount}.log`,
    stdin: container.stdin ?? false,
    stdin_once: container.stdinOnce ?? false,
    tty: container.tty ?? false,
    linux: {
      resources: linuxContainerResources(pod, container, deps),
      security_context: {
        privileged: calculatePrivileged(deps.allowPrivileged, sc?.privileged),
        run_as_user: runAsUser != null ? { value: String(runAsUser) } : null,
        run_as_group: runAsGroup != null ? { value: String(runAsGroup) } : null,
        readonly_rootfs: sc?.readOnlyRootFilesystem ?? false,
        no_new_privs: sc?.allowPrivilegeEscalation === false,
        capabilities: sc?.capabilities ? { add_capabilities: sc.capabilities.add ?? [], drop_capabilities: sc.capabilities.drop ?? [] } : null,
        namespace_options: namespaceOptions(input),
        // fsGroup too: files of volumes owned by that group are readable by the container's user.
        supplemental_groups: podSupplementalGroups(pod),
        // procMount Default hides and protects parts of /proc and /sys; Unmasked leaves them.
        masked_paths: sc?.procMount === 'Unmasked' ? [] : DEFAULT_MASKED_PATHS,
        readonly_paths: sc?.procMount === 'Unmasked' ? [] : DEFAULT_READONLY_PATHS,
        seccomp: seccompProfile(pod, container, deps.seccomp ?? DEFAULT_SECCOMP),
        ...(apparmor ? { apparmor: apparmor.profile, apparmor_profile: apparmor.deprecated } : {}),
      },
    },
  };
}

/** The sandbox's namespaces; an ephemeral container with a target joins that container's PID namespace. */
function namespaceOptions(input: StartContainerInput) {
  const base = input.sandboxConfig.linux?.security_context?.namespace_options ?? null;
  const target = input.type === 'ephemeral' ? (input.container as { targetContainerName?: string }).targetContainerName : undefined;
  if (!target) return base;
  const running = input.podStatus.containerStatuses.find((c) => c.name === target && c.state === 'running');
  return running ? { ...(base ?? {}), pid: 'TARGET' as const, target_id: running.id.id } : base;
}

/** The kubelet's default masked paths (securitycontext.ConvertToRuntimeMaskedPaths). */
export const DEFAULT_MASKED_PATHS = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];

/** The kubelet's default read-only paths (securitycontext.ConvertToRuntimeReadonlyPaths). */
export const DEFAULT_READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** securityContext.privileged takes effect only where the node allows privileged containers. */
export function calculatePrivileged(allowPrivileged: boolean, privileged: boolean | undefined): boolean {
  return allowPrivileged && privileged === true;
}

/** One more than the highest `<n>.log` (rotated or not) in a container's log directory; 0 when it has none. */
export async function restartCountFromLogs(dir: string): Promise<number> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let next = 0;
  for (const e of entries) {
    const m = e.isDirectory() ? null : /^(\d{1,10})\.log(\..*)?$/.exec(e.name);
    // As strconv.Atoi into an int32 count: anything larger is not a restart count.
    if (m && Number(m[1]) < 2 ** 31 - 1) next = Math.max(next, Number(m[1]) + 1);
  }
  return next;
}

/** A container name as the API allows one (a DNS label): a static pod's may not have been checked. */
const CONTAINER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * Starts one container: image, config, create, start, with the kubelet's events.
 * Throws SyncError whose reason is the container's waiting reason (ErrImagePull, CreateContainerConfigError, ...).
 */
export async function startContainer(deps: RuntimeManagerDeps, input: StartContainerInput): Promise<void> {
  const { pod, container } = input;
  const ref = containerRef(pod, container.name);
  // A runtime's error may name the container's ID: the event names the container instead, as the
  // kubelet's do, so that the attempts' events aggregate into one.
  let containerID = '';
  const warn = (msg: string) => deps.recorder.event(ref, 'Warning', EventReasons.FailedToCreateContainer, `Error: ${containerID ? msg.split(containerID).join(container.name) : msg}`);

  let imageRef: string;
  try {
    imageRef = await deps.imageManager.ensureImageExists(pod, container, input.sandboxConfig, input.pullSecrets);
  } catch (err) {
    if (err instanceof SyncError) warn(err.reason);
    throw err;
  }

  // The restart count lives on the previous instance; a new instance counts one more. Without one
  // (the runtime lost it, or it was purged), the log files of earlier instances still count.
  const previous = findContainerStatusByName(input.podStatus, container.name);
  const meta = pod.metadata ?? {};
  const restartCount = previous
    ? previous.restartCount + 1
    : CONTAINER_NAME.test(container.name)
      ? await restartCountFromLogs(join(podLogDirectory(deps.podLogRoot, meta.namespace ?? '', meta.name ?? '', meta.uid ?? ''), container.name))
      : 0;

  let config: ContainerConfig;
  try {
    config = await generateContainerConfig(deps, input, imageRef, restartCount);
  } catch (err) {
    const se = err instanceof SyncError ? err : new SyncError(Reasons.CreateContainerConfig, (err as Error).message, { cause: err });
    warn(se.message);
    throw se;
  }

  try {
    containerID = await deps.runtime.createContainer(input.sandboxID, config, input.sandboxConfig);
  } catch (err) {
    warn(criStatusMessage(err));
    throw new SyncError(Reasons.CreateContainer, criStatusMessage(err), { cause: err });
  }
  deps.recorder.event(ref, 'Normal', EventReasons.CreatedContainer, 'Container created');
  deps.actuated?.set(containerID, container);

  try {
    await deps.runtime.startContainer(containerID);
  } catch (err) {
    warn(criStatusMessage(err));
    throw new SyncError(Reasons.RunContainer, criStatusMessage(err), { cause: err });
  }
  deps.recorder.event(ref, 'Normal', EventReasons.StartedContainer, 'Container started');
  // The runtime opens the log when the container starts: only then is there a file to link to.
  const sandboxMeta = input.sandboxConfig.metadata;
  await createLegacyLogSymlink(deps, join(input.sandboxConfig.log_directory ?? '', config.log_path ?? ''), { name: sandboxMeta?.name ?? '', namespace: sandboxMeta?.namespace ?? '' }, container.name, containerID);

  const hookFailure = await runPostStartHook(deps, pod, container, containerID, input.podIPs);
  if (hookFailure !== undefined) {
    try {
      await killContainer(deps, pod, containerID, container.name, 'FailedPostStartHook', 'FailedPostStartHook');
    } catch (err) {
      deps.logger.warn('failed to kill a container whose postStart hook failed', { ...podFields(pod), container: container.name, error: (err as Error).message });
    }
    throw new SyncError(Reasons.PostStartHook, hookFailure);
  }
}

/**
 * The grace period of a kill, before its preStop hook takes its share: override >
 * deletionGracePeriodSeconds > the failed probe's own terminationGracePeriodSeconds >
 * terminationGracePeriodSeconds > 2 s (the stop itself always gets at least 2 s).
 */
export function killGracePeriod(
  pod: V1Pod | undefined,
  annotated: { podDeletionGracePeriod?: number; podTerminationGracePeriod?: number },
  override?: number,
  spec?: V1Container,
  reason: ContainerKillReason = '',
): number {
  if (override != null) return override;
  const deletion = pod?.metadata?.deletionGracePeriodSeconds ?? (pod ? undefined : annotated.podDeletionGracePeriod);
  const termination = pod?.spec?.terminationGracePeriodSeconds ?? (pod ? undefined : annotated.podTerminationGracePeriod);
  if (deletion != null) return deletion;
  if (termination != null) {
    const probe = reason === 'LivenessProbe' ? spec?.livenessProbe : reason === 'StartupProbe' ? spec?.startupProbe : undefined;
    return probe?.terminationGracePeriodSeconds ?? termination;
  }
  return MINIMUM_GRACE_PERIOD_SECONDS;
}

function containerSpec(pod: V1Pod, name: string): V1Container | undefined {
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []), ...((pod.spec?.ephemeralContainers ?? []) as V1Container[])].find((c) => c.name === name);
}

/**
 * Stops one container within its grace period, recording a Killing event. `pod` may be undefined
 * for a container whose pod the agent no longer knows: then what it needs is read from the
 * container's own labels and annotations.
 */
export async function killContainer(
  deps: RuntimeManagerDeps,
  pod: V1Pod | undefined,
  containerID: string,
  containerName: string,
  message: string,
  reason: ContainerKillReason,
  gracePeriodOverride?: number,
  ordering?: TerminationOrdering,
  signal?: AbortSignal,
): Promise<void> {
  // Cut short before it began: the kill with the shorter grace period does it.
  if (signal?.aborted) throw new KillAbortedError(containerName);
  let annotated: ReturnType<typeof getContainerInfoFromAnnotations> = { hash: '', restartCount: 0, terminationMessagePath: '', terminationMessagePolicy: '' };
  let eventPod = pod;
  if (!pod) {
    try {
      const st = (await deps.runtime.containerStatus(containerID)).status;
      annotated = getContainerInfoFromAnnotations(st?.annotations);
      const l = getContainerInfoFromLabels(st?.labels);
      eventPod = { metadata: { name: l.podName, namespace: l.podNamespace, uid: l.podUID }, spec: { containers: [{ name: containerName }] } };
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }
  const spec = pod ? containerSpec(pod, containerName) : undefined;
  let grace = killGracePeriod(pod, annotated, gracePeriodOverride, spec, reason);
  const msg = message || `Stopping container ${containerName}`;
  if (eventPod) deps.recorder.event(containerRef(eventPod, containerName), 'Normal', EventReasons.KillingContainer, msg);
  const preStop = spec ? spec.lifecycle?.preStop : annotated.preStop;
  if (preStop && grace > 0 && eventPod) grace -= await runPreStopHook(deps, eventPod, spec ?? { name: containerName }, preStop, containerID, grace, signal);
  if (ordering && grace > 0) grace -= Math.floor(await ordering.waitForTurn(containerName, grace, deps.clock, signal));
  if (signal?.aborted) throw new KillAbortedError(containerName);
  // Whatever the hook left, the container gets a moment to stop.
  if (grace < MINIMUM_GRACE_PERIOD_SECONDS) grace = MINIMUM_GRACE_PERIOD_SECONDS;
  deps.logger.info('killing container', { ...(eventPod ? podFields(eventPod) : {}), container: containerName, containerID, gracePeriod: grace, reason: reason || undefined });
  const stop = deps.runtime.stopContainer(containerID, grace);
  try {
    // Given up when cut short: the runtime still finishes this stop, while a shorter one follows.
    if ((await raceAbort(stop, signal)) === 'aborted') {
      stop.catch(() => undefined);
      throw new KillAbortedError(containerName);
    }
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  ordering?.containerTerminated(containerName);
}

/** A kill given up because a shorter grace period arrived (the kill is made again with it). */
export class KillAbortedError extends Error {
  constructor(container: string) {
    super(`the kill of container ${container} was cut short by a shorter grace period`);
  }
}


/** Removes a dead container and its log file. */
export async function removeContainer(deps: RuntimeManagerDeps, containerID: string): Promise<void> {
  deps.actuated?.delete(containerID);
  try {
    const st = (await deps.runtime.containerStatus(containerID)).status;
    if (st?.log_path) await rm(st.log_path, { force: true });
    const info = getContainerInfoFromLabels(st?.labels ?? {});
    await removeLegacyLogSymlink(deps, { name: info.podName, namespace: info.podNamespace }, info.containerName, containerID);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  try {
    await deps.runtime.removeContainer(containerID);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

function initContainerNames(pod: V1Pod): Set<string> {
  return new Set((pod.spec?.initContainers ?? []).map((c) => c.name));
}

/** Keeps only the latest dead instance of each init container before new starts (pruneInitContainersBeforeStart). */
export async function pruneInitContainersBeforeStart(deps: RuntimeManagerDeps, pod: V1Pod, status: PodStatus): Promise<void> {
  const names = initContainerNames(pod);
  const seen = new Set<string>();
  for (const s of status.containerStatuses) {
    if (!names.has(s.name) || (s.state !== 'exited' && s.state !== 'unknown')) continue;
    if (!seen.has(s.name)) {
      seen.add(s.name);
      continue;
    }
    await removeContainer(deps, s.id.id).catch((err) =>
      deps.logger.warn('failed to prune init container', { ...podFields(pod), container: s.name, error: (err as Error).message }),
    );
  }
}

/** Removes every instance of the pod's init containers: with a new sandbox, initialisation starts over. */
export async function purgeInitContainers(deps: RuntimeManagerDeps, pod: V1Pod, status: PodStatus): Promise<void> {
  const names = initContainerNames(pod);
  for (const s of status.containerStatuses) {
    if (!names.has(s.name)) continue;
    await removeContainer(deps, s.id.id).catch((err) =>
      deps.logger.warn('failed to purge init container', { ...podFields(pod), container: s.name, error: (err as Error).message }),
    );
  }
}
