// Original file: proto/api.proto

import type { Long } from '@grpc/proto-loader';

export interface CheckpointContainerRequest {
  'container_id'?: (string);
  'location'?: (string);
  'timeout'?: (number | string | Long);
}

export interface CheckpointContainerRequest__Output {
  'container_id': (string);
  'location': (string);
  'timeout': (string);
}
