// References to a pod, or to one of its containers, as Events name them (involvedObject).
import type { V1ObjectReference, V1Pod } from '@kubernetes/client-node';

export function podRef(pod: V1Pod): V1ObjectReference {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    namespace: pod.metadata?.namespace,
    name: pod.metadata?.name,
    uid: pod.metadata?.uid,
    resourceVersion: pod.metadata?.resourceVersion,
  };
}

/** fieldPath as the kubelet writes it: spec.containers{name}, spec.initContainers{name} or spec.ephemeralContainers{name}. */
export function containerRef(pod: V1Pod, containerName: string): V1ObjectReference {
  const isInit = (pod.spec?.initContainers ?? []).some((c) => c.name === containerName);
  const isEphemeral = (pod.spec?.ephemeralContainers ?? []).some((c) => c.name === containerName);
  return { ...podRef(pod), fieldPath: `spec.${isInit ? 'initContainers' : isEphemeral ? 'ephemeralContainers' : 'containers'}{${containerName}}` };
}

export type EventType = 'Normal' | 'Warning';

/** Records core/v1 Events. Never blocks and never throws: recording is best effort, as in the kubelet. */
export interface EventRecorder {
  event(ref: V1ObjectReference, type: EventType, reason: string, message: string): void;
}

/** The kubelet's event reasons (pkg/kubelet/events), the words users see in `kubectl describe`. */
export const EventReasons = {
  CreatedContainer: 'Created',
  StartedContainer: 'Started',
  FailedToCreateContainer: 'Failed',
  FailedToStartContainer: 'Failed',
  KillingContainer: 'Killing',
  PreemptContainer: 'Preempting',
  BackOffStartContainer: 'BackOff',
  ExceededGracePeriod: 'ExceededGracePeriod',
  FailedPostStartHook: 'FailedPostStartHook',
  FailedPreStopHook: 'FailedPreStopHook',
  PullingImage: 'Pulling',
  PulledImage: 'Pulled',
  FailedToPullImage: 'Failed',
  FailedToInspectImage: 'InspectFailed',
  ErrImageNeverPullPolicy: 'ErrImageNeverPull',
  BackOffPullImage: 'BackOff',
  FailedToRetrieveImagePullSecret: 'FailedToRetrieveImagePullSecret',
  SandboxChanged: 'SandboxChanged',
  FailedCreatePodSandBox: 'FailedCreatePodSandBox',
  FailedStatusPodSandBox: 'FailedStatusPodSandBox',
  FailedMountVolume: 'FailedMount',
  MissingClusterDNS: 'MissingClusterDNS',
  NetworkNotReady: 'NetworkNotReady',
  ImageGCFailed: 'ImageGCFailed',
  InvalidDiskCapacity: 'InvalidDiskCapacity',
  FreeDiskSpaceFailed: 'FreeDiskSpaceFailed',
} as const;
