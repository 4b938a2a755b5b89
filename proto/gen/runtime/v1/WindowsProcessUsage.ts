// Original file: proto/api.proto

import type { UInt64Value as _runtime_v1_UInt64Value, UInt64Value__Output as _runtime_v1_UInt64Value__Output } from '../../runtime/v1/UInt64Value.js';
import type { Long } from '@grpc/proto-loader';

export interface WindowsProcessUsage {
  'timestamp'?: (number | string | Long);
  'process_count'?: (_runtime_v1_UInt64Value | null);
}

export interface WindowsProcessUsage__Output {
  'timestamp': (string);
  'process_count': (_runtime_v1_UInt64Value__Output | null);
}
