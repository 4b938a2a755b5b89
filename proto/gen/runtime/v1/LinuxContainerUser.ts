// Original file: proto/api.proto

import type { Long } from '@grpc/proto-loader';

export interface LinuxContainerUser {
  'uid'?: (number | string | Long);
  'gid'?: (number | string | Long);
  'supplemental_groups'?: (number | string | Long)[];
}

export interface LinuxContainerUser__Output {
  'uid': (string);
  'gid': (string);
  'supplemental_groups': (string)[];
}
