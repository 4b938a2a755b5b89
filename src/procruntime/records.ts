// What the process runtime keeps of each sandbox and container, in memory and as JSON on disk
// (<root>/sandboxes/<id>/sandbox.json, <root>/containers/<id>/container.json), so that a
// restarted runtime finds its containers again.
import type { ContainerConfig, PodSandboxConfig } from '../cri/types.js';
import type { Isolation, LaunchSpec } from './isolation.js';

/** Now, in nanoseconds since the epoch as CRI timestamps are (a decimal string). */
export const nowNs = (): string => String(BigInt(Date.now()) * 1_000_000n);
import type { StreamState } from './log-forwarder.js';
import type { ResolvedUser } from './users.js';
import type { SandboxNamespaces } from './sandbox-namespaces.js';

export type SandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type CState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

export interface SandboxRecord {
  id: string;
  config: PodSandboxConfig;
  state: SandboxState;
  createdAt: string;
  ip: string;
  /** Its namespaces and network (src/procruntime/sandbox-namespaces.ts); absent for a sandbox of an older runtime. */
  namespaces?: SandboxNamespaces;
}

export interface ContainerRecord {
  id: string;
  sandboxId: string;
  config: ContainerConfig;
  imageId: string;
  imageRef: string;
  state: CState;
  createdAt: string;
  startedAt: string;
  finishedAt: string;
  exitCode: number;
  reason: string;
  message: string;
  /** Host PID of the container's init, and its start time (field 22 of /proc/PID/stat). */
  pid?: number;
  pidStart?: string;
  /** Its process group, when its end does not end a PID namespace (it shares the pod's or the node's). */
  pgid?: number;
  logPath: string;
  stdout: StreamState;
  stderr: StreamState;
  rootfsMounted?: boolean;
  isolation?: Isolation;
  /** Who the process runs as (resolved at create, from the security context and the image). */
  user?: ResolvedUser;
  /** Its sandbox's cgroup_parent (the pod's cgroup), which its cgroups go under; absent: the runtime's own. */
  cgroupParent?: string;
  /** How it was started: what an exec into it repeats (root, mounts, env, user, capabilities). */
  launch?: LaunchSpec;
}

/** By full ID, or by a unique-enough prefix of one (crictl shortens IDs). */
export function byIdOrPrefix<T extends { id: string }>(records: Map<string, T>, id: string): T | undefined {
  return records.get(id) ?? [...records.values()].find((x) => id.length >= 6 && x.id.startsWith(id));
}

/** Whether labels hold every key and value of a CRI label selector. */
export function matchLabels(labels: Record<string, string> | undefined, selector: Record<string, string> | undefined): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
}
