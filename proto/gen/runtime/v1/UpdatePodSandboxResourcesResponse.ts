// Original file: proto/api.proto


export interface UpdatePodSandboxResourcesResponse {
}

export interface UpdatePodSandboxResourcesResponse__Output {
}
