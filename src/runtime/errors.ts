// Sync failures carry the kubelet's reason strings: they are what `kubectl get pods` shows.

export const Reasons = {
  CrashLoopBackOff: 'CrashLoopBackOff',
  ContainerNotFound: 'ContainerNotFound',
  RunContainer: 'RunContainerError',
  KillContainer: 'KillContainerError',
  CreatePodSandbox: 'CreatePodSandboxError',
  ConfigPodSandbox: 'ConfigPodSandboxError',
  KillPodSandbox: 'KillPodSandboxError',
  CreateContainerConfig: 'CreateContainerConfigError',
  CreateContainer: 'CreateContainerError',
  PostStartHook: 'PostStartHookError',
  ImagePull: 'ErrImagePull',
  ImagePullBackOff: 'ImagePullBackOff',
  ImageNeverPull: 'ErrImageNeverPull',
  ImageInspect: 'ImageInspectError',
  InvalidImageName: 'InvalidImageName',
  // CRI's own pull errors (k8s.io/cri-api/pkg/errors), which a runtime names at the head of its message.
  RegistryUnavailable: 'RegistryUnavailable',
  SignatureValidationFailed: 'SignatureValidationFailed',
  ResizePodInPlace: 'ResizePodInPlaceError',
} as const;

export type Reason = (typeof Reasons)[keyof typeof Reasons];

/** An error whose `reason` is one of the kubelet's; `message` is the detail users read. */
export class SyncError extends Error {
  /** For a back-off: when trying again can succeed. */
  readonly retryAfterMs?: number;

  constructor(readonly reason: Reason, message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super(message, options);
    this.name = 'SyncError';
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** Reasons that mean "waiting for a retry" rather than "broken": PLEG should not be woken for them. */
export function isBackOffReason(reason: string): boolean {
  return reason === Reasons.CrashLoopBackOff || reason === Reasons.ImagePullBackOff;
}
