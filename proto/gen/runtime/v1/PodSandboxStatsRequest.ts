// Original file: proto/api.proto


export interface PodSandboxStatsRequest {
  'pod_sandbox_id'?: (string);
}

export interface PodSandboxStatsRequest__Output {
  'pod_sandbox_id': (string);
}
