// Original file: proto/api.proto

import type { CgroupDriver as _runtime_v1_CgroupDriver, CgroupDriver__Output as _runtime_v1_CgroupDriver__Output } from '../../runtime/v1/CgroupDriver.js';

export interface LinuxRuntimeConfiguration {
  'cgroup_driver'?: (_runtime_v1_CgroupDriver);
}

export interface LinuxRuntimeConfiguration__Output {
  'cgroup_driver': (_runtime_v1_CgroupDriver__Output);
}
