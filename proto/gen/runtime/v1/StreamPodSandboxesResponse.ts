// Original file: proto/api.proto

import type { PodSandbox as _runtime_v1_PodSandbox, PodSandbox__Output as _runtime_v1_PodSandbox__Output } from '../../runtime/v1/PodSandbox.js';

export interface StreamPodSandboxesResponse {
  'pod_sandboxes'?: (_runtime_v1_PodSandbox)[];
}

export interface StreamPodSandboxesResponse__Output {
  'pod_sandboxes': (_runtime_v1_PodSandbox__Output)[];
}
