// Original file: proto/api.proto

import type { UInt64Value as _runtime_v1_UInt64Value, UInt64Value__Output as _runtime_v1_UInt64Value__Output } from '../../runtime/v1/UInt64Value.js';
import type { Long } from '@grpc/proto-loader';

export interface WindowsMemoryUsage {
  'timestamp'?: (number | string | Long);
  'working_set_bytes'?: (_runtime_v1_UInt64Value | null);
  'available_bytes'?: (_runtime_v1_UInt64Value | null);
  'page_faults'?: (_runtime_v1_UInt64Value | null);
  'commit_memory_bytes'?: (_runtime_v1_UInt64Value | null);
}

export interface WindowsMemoryUsage__Output {
  'timestamp': (string);
  'working_set_bytes': (_runtime_v1_UInt64Value__Output | null);
  'available_bytes': (_runtime_v1_UInt64Value__Output | null);
  'page_faults': (_runtime_v1_UInt64Value__Output | null);
  'commit_memory_bytes': (_runtime_v1_UInt64Value__Output | null);
}
