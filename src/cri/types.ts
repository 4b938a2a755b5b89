// The CRI v1 message types nodelet uses, re-exported under short names from the generated code.
// Requests take the generated input types; responses are the `__Output` types (defaults filled in).
export type { AuthConfig } from '../../proto/gen/runtime/v1/AuthConfig.js';
export type { ContainerConfig } from '../../proto/gen/runtime/v1/ContainerConfig.js';
export type { ContainerFilter } from '../../proto/gen/runtime/v1/ContainerFilter.js';
export type { Container__Output as Container } from '../../proto/gen/runtime/v1/Container.js';
export type { ContainerStatus__Output as ContainerStatus } from '../../proto/gen/runtime/v1/ContainerStatus.js';
export type { ContainerState__Output as ContainerState } from '../../proto/gen/runtime/v1/ContainerState.js';
export type { ContainerStatusResponse__Output as ContainerStatusResponse } from '../../proto/gen/runtime/v1/ContainerStatusResponse.js';
export type { ExecSyncResponse__Output as ExecSyncResponse } from '../../proto/gen/runtime/v1/ExecSyncResponse.js';
export type { FilesystemUsage__Output as FilesystemUsage } from '../../proto/gen/runtime/v1/FilesystemUsage.js';
export type { Image__Output as Image } from '../../proto/gen/runtime/v1/Image.js';
export type { ImageFilter } from '../../proto/gen/runtime/v1/ImageFilter.js';
export type { ImageSpec } from '../../proto/gen/runtime/v1/ImageSpec.js';
export type { ImageFsInfoResponse__Output as ImageFsInfoResponse } from '../../proto/gen/runtime/v1/ImageFsInfoResponse.js';
export type { ImageStatusResponse__Output as ImageStatusResponse } from '../../proto/gen/runtime/v1/ImageStatusResponse.js';
export type { LinuxContainerResources } from '../../proto/gen/runtime/v1/LinuxContainerResources.js';
export type { Mount } from '../../proto/gen/runtime/v1/Mount.js';
export type { PodSandbox__Output as PodSandbox } from '../../proto/gen/runtime/v1/PodSandbox.js';
export type { PodSandboxConfig } from '../../proto/gen/runtime/v1/PodSandboxConfig.js';
export type { PodSandboxFilter } from '../../proto/gen/runtime/v1/PodSandboxFilter.js';
export type { PodSandboxStatus__Output as PodSandboxStatus } from '../../proto/gen/runtime/v1/PodSandboxStatus.js';
export type { PodSandboxStatusResponse__Output as PodSandboxStatusResponse } from '../../proto/gen/runtime/v1/PodSandboxStatusResponse.js';
export type { RuntimeStatus__Output as RuntimeStatus } from '../../proto/gen/runtime/v1/RuntimeStatus.js';
export type { StatusResponse__Output as StatusResponse } from '../../proto/gen/runtime/v1/StatusResponse.js';
export type { VersionResponse__Output as VersionResponse } from '../../proto/gen/runtime/v1/VersionResponse.js';
export type { ContainerState as ContainerStateName } from '../../proto/gen/runtime/v1/ContainerState.js';
export type { PodSandboxState__Output as PodSandboxStateName } from '../../proto/gen/runtime/v1/PodSandboxState.js';

/** Container states as CRI names them on the wire (enums are loaded as strings). */
export const ContainerStates = {
  created: 'CONTAINER_CREATED',
  running: 'CONTAINER_RUNNING',
  exited: 'CONTAINER_EXITED',
  unknown: 'CONTAINER_UNKNOWN',
} as const;

export const SandboxStates = {
  ready: 'SANDBOX_READY',
  notReady: 'SANDBOX_NOTREADY',
} as const;
export type { ContainerEventResponse__Output as ContainerEventResponse } from '../../proto/gen/runtime/v1/ContainerEventResponse.js';
export type { ContainerStats } from '../../proto/gen/runtime/v1/ContainerStats.js';
export type { ContainerStatsFilter } from '../../proto/gen/runtime/v1/ContainerStatsFilter.js';
export type { PodSandboxStats } from '../../proto/gen/runtime/v1/PodSandboxStats.js';
export type { PodSandboxStatsFilter } from '../../proto/gen/runtime/v1/PodSandboxStatsFilter.js';
