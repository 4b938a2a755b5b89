// Original file: proto/api.proto


export interface StreamPodSandboxMetricsRequest {
}

export interface StreamPodSandboxMetricsRequest__Output {
}
