// Original file: proto/api.proto


export interface PortForwardRequest {
  'pod_sandbox_id'?: (string);
  'port'?: (number)[];
}

export interface PortForwardRequest__Output {
  'pod_sandbox_id': (string);
  'port': (number)[];
}
