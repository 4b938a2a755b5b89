// Original file: proto/api.proto

import type { UInt64Value as _runtime_v1_UInt64Value, UInt64Value__Output as _runtime_v1_UInt64Value__Output } from '../../runtime/v1/UInt64Value.js';

export interface WindowsNetworkInterfaceUsage {
  'name'?: (string);
  'rx_bytes'?: (_runtime_v1_UInt64Value | null);
  'rx_packets_dropped'?: (_runtime_v1_UInt64Value | null);
  'tx_bytes'?: (_runtime_v1_UInt64Value | null);
  'tx_packets_dropped'?: (_runtime_v1_UInt64Value | null);
}

export interface WindowsNetworkInterfaceUsage__Output {
  'name': (string);
  'rx_bytes': (_runtime_v1_UInt64Value__Output | null);
  'rx_packets_dropped': (_runtime_v1_UInt64Value__Output | null);
  'tx_bytes': (_runtime_v1_UInt64Value__Output | null);
  'tx_packets_dropped': (_runtime_v1_UInt64Value__Output | null);
}
