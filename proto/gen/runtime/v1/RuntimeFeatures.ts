// Original file: proto/api.proto


export interface RuntimeFeatures {
  'supplemental_groups_policy'?: (boolean);
  'user_namespaces_host_network'?: (boolean);
  'mount_options'?: (boolean);
}

export interface RuntimeFeatures__Output {
  'supplemental_groups_policy': (boolean);
  'user_namespaces_host_network': (boolean);
  'mount_options': (boolean);
}
