// Original file: proto/api.proto


export interface NetworkConfig {
  'pod_cidr'?: (string);
}

export interface NetworkConfig__Output {
  'pod_cidr': (string);
}
