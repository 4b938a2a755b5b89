// Original file: proto/api.proto


export interface Device {
  'container_path'?: (string);
  'host_path'?: (string);
  'permissions'?: (string);
}

export interface Device__Output {
  'container_path': (string);
  'host_path': (string);
  'permissions': (string);
}
