// Original file: proto/api.proto


export interface CheckpointPodResponse {
}

export interface CheckpointPodResponse__Output {
}
