// Original file: proto/api.proto


export interface ContainerStatusRequest {
  'container_id'?: (string);
  'verbose'?: (boolean);
}

export interface ContainerStatusRequest__Output {
  'container_id': (string);
  'verbose': (boolean);
}
