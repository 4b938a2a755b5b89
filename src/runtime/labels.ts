// Labels and annotations are the runtime manager's memory: everything needed to rebuild its view
// after a restart is written on the sandbox and the container (the kubelet's keys), and read back here.
import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import { hashContainer } from './hash.js';

export const PodNameLabel = 'io.kubernetes.pod.name';
export const PodNamespaceLabel = 'io.kubernetes.pod.namespace';
export const PodUIDLabel = 'io.kubernetes.pod.uid';
export const ContainerNameLabel = 'io.kubernetes.container.name';
/** nodelet's own: which node's agent owns a sandbox/container, so two agents can share one runtime. */
export const NodeNameLabel = 'nodelet.io/node-name';

export const ContainerHashAnnotation = 'io.kubernetes.container.hash';
export const ContainerRestartCountAnnotation = 'io.kubernetes.container.restartCount';
export const TerminationMessagePathAnnotation = 'io.kubernetes.container.terminationMessagePath';
export const TerminationMessagePolicyAnnotation = 'io.kubernetes.container.terminationMessagePolicy';
export const PodDeletionGracePeriodAnnotation = 'io.kubernetes.pod.deletionGracePeriod';
export const PodTerminationGracePeriodAnnotation = 'io.kubernetes.pod.terminationGracePeriod';
export const ContainerPortsAnnotation = 'io.kubernetes.container.ports';
/** The preStop hook, so that a container whose pod is gone still gets it when killed. */
export const ContainerPreStopHandlerAnnotation = 'io.kubernetes.container.preStopHandler';
/** Whether the container was started as an init container (the kubelet infers it from the spec; a restarted agent may not have it). */
export const ContainerTypeAnnotation = 'io.kubernetes.container.type';

export type ContainerType = 'init' | 'regular' | 'ephemeral';

export function newPodLabels(pod: V1Pod, nodeName: string): Record<string, string> {
  return {
    ...(pod.metadata?.labels ?? {}),
    [PodNameLabel]: pod.metadata?.name ?? '',
    [PodNamespaceLabel]: pod.metadata?.namespace ?? '',
    [PodUIDLabel]: pod.metadata?.uid ?? '',
    [NodeNameLabel]: nodeName,
  };
}

export function newPodAnnotations(pod: V1Pod): Record<string, string> {
  return { ...(pod.metadata?.annotations ?? {}) };
}

export function newContainerLabels(container: V1Container, pod: V1Pod, nodeName: string): Record<string, string> {
  return {
    [PodNameLabel]: pod.metadata?.name ?? '',
    [PodNamespaceLabel]: pod.metadata?.namespace ?? '',
    [PodUIDLabel]: pod.metadata?.uid ?? '',
    [ContainerNameLabel]: container.name,
    [NodeNameLabel]: nodeName,
  };
}

export function newContainerAnnotations(container: V1Container, pod: V1Pod, restartCount: number, type: ContainerType): Record<string, string> {
  const a: Record<string, string> = {
    [ContainerHashAnnotation]: hashContainer(container),
    [ContainerRestartCountAnnotation]: String(restartCount),
    [TerminationMessagePathAnnotation]: container.terminationMessagePath ?? '/dev/termination-log',
    [TerminationMessagePolicyAnnotation]: container.terminationMessagePolicy ?? 'File',
    [ContainerTypeAnnotation]: type,
  };
  if (pod.metadata?.deletionGracePeriodSeconds != null) a[PodDeletionGracePeriodAnnotation] = String(pod.metadata.deletionGracePeriodSeconds);
  if (pod.spec?.terminationGracePeriodSeconds != null) a[PodTerminationGracePeriodAnnotation] = String(pod.spec.terminationGracePeriodSeconds);
  if (container.ports?.length) a[ContainerPortsAnnotation] = JSON.stringify(container.ports);
  if (container.lifecycle?.preStop) a[ContainerPreStopHandlerAnnotation] = JSON.stringify(container.lifecycle.preStop);
  return a;
}

export interface LabeledContainerInfo {
  podName: string;
  podNamespace: string;
  podUID: string;
  containerName: string;
}

export function getContainerInfoFromLabels(labels: Record<string, string> | undefined): LabeledContainerInfo {
  const l = labels ?? {};
  return {
    podName: l[PodNameLabel] ?? '',
    podNamespace: l[PodNamespaceLabel] ?? '',
    podUID: l[PodUIDLabel] ?? '',
    containerName: l[ContainerNameLabel] ?? '',
  };
}

export interface AnnotatedContainerInfo {
  hash: string;
  restartCount: number;
  podDeletionGracePeriod?: number;
  podTerminationGracePeriod?: number;
  terminationMessagePath: string;
  terminationMessagePolicy: string;
  type?: ContainerType;
  preStop?: V1LifecycleHandler;
}

function parseJSON<T>(v: string | undefined): T | undefined {
  if (!v) return undefined;
  try {
    return JSON.parse(v) as T;
  } catch {
    return undefined;
  }
}

function intAnnotation(a: Record<string, string>, key: string): number | undefined {
  const v = a[key];
  if (v === undefined || !/^-?\d+$/.test(v)) return undefined;
  return Number(v);
}

export function getContainerInfoFromAnnotations(annotations: Record<string, string> | undefined): AnnotatedContainerInfo {
  const a = annotations ?? {};
  const type = a[ContainerTypeAnnotation];
  return {
    hash: a[ContainerHashAnnotation] ?? '',
    // A container without the annotation (made by an older agent) counts as its first start.
    restartCount: intAnnotation(a, ContainerRestartCountAnnotation) ?? 0,
    podDeletionGracePeriod: intAnnotation(a, PodDeletionGracePeriodAnnotation),
    podTerminationGracePeriod: intAnnotation(a, PodTerminationGracePeriodAnnotation),
    terminationMessagePath: a[TerminationMessagePathAnnotation] ?? '',
    terminationMessagePolicy: a[TerminationMessagePolicyAnnotation] ?? '',
    type: type === 'init' || type === 'regular' || type === 'ephemeral' ? type : undefined,
    preStop: parseJSON<V1LifecycleHandler>(a[ContainerPreStopHandlerAnnotation]),
  };
}
