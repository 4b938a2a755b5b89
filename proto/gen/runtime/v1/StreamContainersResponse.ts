// Original file: proto/api.proto

import type { Container as _runtime_v1_Container, Container__Output as _runtime_v1_Container__Output } from '../../runtime/v1/Container.js';

export interface StreamContainersResponse {
  'containers'?: (_runtime_v1_Container)[];
}

export interface StreamContainersResponse__Output {
  'containers': (_runtime_v1_Container__Output)[];
}
