// Original file: proto/api.proto

import type { UInt64Value as _runtime_v1_UInt64Value, UInt64Value__Output as _runtime_v1_UInt64Value__Output } from '../../runtime/v1/UInt64Value.js';
import type { Long } from '@grpc/proto-loader';

export interface WindowsCpuUsage {
  'timestamp'?: (number | string | Long);
  'usage_core_nano_seconds'?: (_runtime_v1_UInt64Value | null);
  'usage_nano_cores'?: (_runtime_v1_UInt64Value | null);
}

export interface WindowsCpuUsage__Output {
  'timestamp': (string);
  'usage_core_nano_seconds': (_runtime_v1_UInt64Value__Output | null);
  'usage_nano_cores': (_runtime_v1_UInt64Value__Output | null);
}
