// Pod sandboxes: their CRI config, creation, listing by pod, and the pod IPs they hold.
import type { V1Pod } from '@kubernetes/client-node';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { LinuxContainerResources, PodSandbox, PodSandboxConfig, PodSandboxStatus } from '../cri/types.js';
import { podLimit, podRequest } from '../cm/pod-resources.js';
import { bytes, milliCPU } from '../util/quantity.js';
import { linuxResourcesFrom } from './resources.js';
import { EventReasons, podRef } from '../kube/object-ref.js';
import type { RuntimeManagerDeps } from './deps.js';
import { DEFAULT_SECCOMP, seccompProfile } from './security-profiles.js';
import { normalizeSysctl } from '../pods/sysctls.js';
import { podDns } from './dns.js';
import { newPodAnnotations, newPodLabels, NodeNameLabel, PodUIDLabel } from './labels.js';
import { isHostNetworkPod, networkNamespaceForPod } from './pod-actions.js';

/** A pod's supplemental groups as the kubelet passes them: fsGroup first, then supplementalGroups. */
export function podSupplementalGroups(pod: V1Pod): string[] {
  const sc = pod.spec?.securityContext;
  return [...(sc?.fsGroup != null ? [sc.fsGroup] : []), ...(sc?.supplementalGroups ?? [])].map(String);
}

/** <podLogRoot>/<namespace>_<name>_<uid>: the pod's log directory, as the kubelet lays it out. */
export function podLogDirectory(root: string, namespace: string, name: string, uid: string): string {
  return join(root, `${namespace}_${name}_${uid}`);
}

/** The hostname the pod's containers see: spec.hostnameOverride, else spec.hostname, else the pod name cut to 63 characters. */
export function podHostname(pod: V1Pod): string {
  if (pod.spec?.hostnameOverride) return pod.spec.hostnameOverride;
  const h = pod.spec?.hostname || pod.metadata?.name || '';
  return h.slice(0, 63).replace(/[-.]+$/, '');
}

/** A sandbox configuration the pod's own spec makes impossible (the kubelet's generatePodSandboxConfig errors). */
export class SandboxConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxConfigError';
  }
}

// The kernel's nodename field: 64 bytes.
const MAX_KERNEL_HOSTNAME = 64;

/**
 * The hostname the kernel gets: the pod's FQDN (<hostname>.<subdomain>.<namespace>.svc.<cluster
 * domain>) when it sets setHostnameAsFQDN and has a subdomain, else its hostname. An FQDN longer
 * than the kernel's field leaves the pod without a sandbox, as on the kubelet.
 */
export function podKernelHostname(pod: V1Pod, clusterDomain: string): string {
  const hostname = podHostname(pod);
  const sub = pod.spec?.subdomain;
  if (!pod.spec?.setHostnameAsFQDN || !sub || pod.spec.hostnameOverride) return hostname;
  const fqdn = `${hostname}.${sub}.${pod.metadata?.namespace}.svc.${clusterDomain}`;
  if (fqdn.length > MAX_KERNEL_HOSTNAME) {
    throw new SandboxConfigError(`failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (${MAX_KERNEL_HOSTNAME} characters is the max, ${fqdn.length} characters requested)`);
  }
  return fqdn;
}

export function generatePodSandboxConfig(
  deps: Pick<RuntimeManagerDeps, 'podLogRoot' | 'nodeName' | 'allowPrivileged' | 'dns' | 'seccomp' | 'podCgroupParent' | 'cpuCFSQuota'>,
  pod: V1Pod,
  attempt: number,
): PodSandboxConfig {
  const meta = pod.metadata ?? {};
  const spec = pod.spec!;
  const hostNetwork = isHostNetworkPod(pod);
  const portMappings = spec.containers.flatMap((c) =>
    (c.ports ?? [])
      .filter((p) => p.hostPort)
      .map((p) => ({ protocol: (p.protocol ?? 'TCP').toUpperCase() as 'TCP' | 'UDP' | 'SCTP', container_port: p.containerPort, host_port: p.hostPort!, host_ip: p.hostIP ?? '' })),
  );
  const privileged =
    deps.allowPrivileged && [...(spec.initContainers ?? []), ...spec.containers].some((c) => c.securityContext?.privileged === true);
  const config: PodSandboxConfig = {
    metadata: { name: meta.name ?? '', namespace: meta.namespace ?? '', uid: meta.uid ?? '', attempt },
    log_directory: podLogDirectory(deps.podLogRoot, meta.namespace ?? '', meta.name ?? '', meta.uid ?? ''),
    labels: newPodLabels(pod, deps.nodeName),
    annotations: newPodAnnotations(pod),
    port_mappings: portMappings,
    linux: {
      security_context: {
        namespace_options: {
          network: networkNamespaceForPod(pod),
          pid: spec.hostPID ? 'NODE' : spec.shareProcessNamespace ? 'POD' : 'CONTAINER',
          ipc: spec.hostIPC ? 'NODE' : 'POD',
        },
        privileged,
        run_as_user: spec.securityContext?.runAsUser != null ? { value: String(spec.securityContext.runAsUser) } : null,
        run_as_group: spec.securityContext?.runAsGroup != null ? { value: String(spec.securityContext.runAsGroup) } : null,
        supplemental_groups: podSupplementalGroups(pod),
        // The pod's own profile (a container's is its own business).
        seccomp: seccompProfile(pod, undefined, deps.seccomp ?? DEFAULT_SECCOMP),
      },
      // As the kubelet: names with slashes (kernel/shm_rmid_forced) go to the runtime with dots.
      sysctls: Object.fromEntries((spec.securityContext?.sysctls ?? []).map((s) => [normalizeSysctl(s.name), s.value])),
    },
  };
  const cgroupParent = deps.podCgroupParent?.(pod);
  if (cgroupParent) config.linux!.cgroup_parent = cgroupParent;
  config.linux!.resources = sandboxResources(pod, deps.cpuCFSQuota);
  const overhead = sandboxOverhead(pod, deps.cpuCFSQuota);
  if (overhead) config.linux!.overhead = overhead;
  // runc cannot set a hostname without its own UTS namespace; the kubelet sends none for host-network pods.
  if (!hostNetwork) config.hostname = podKernelHostname(pod, deps.dns.clusterDomain);
  const dns = podDns(pod, deps.dns).config;
  if (dns) config.dns_config = dns;
  return config;
}

/** The sum of the containers' resources, overhead excluded (calculateSandboxResources). */
export function sandboxResources(pod: V1Pod, cpuCFSQuota: boolean): LinuxContainerResources {
  const x = { excludeOverhead: true };
  return linuxResourcesFrom(podRequest(pod, 'cpu', x), podLimit(pod, 'cpu', x), podLimit(pod, 'memory', x), cpuCFSQuota);
}

/** The pod's overhead, as requests equal to limits (convertOverheadToLinuxResources); none without. */
export function sandboxOverhead(pod: V1Pod, cpuCFSQuota: boolean): LinuxContainerResources | undefined {
  const o = pod.spec?.overhead as Record<string, string> | undefined;
  if (!o) return undefined;
  const cpu = o.cpu ? milliCPU(o.cpu) : 0;
  return linuxResourcesFrom(cpu, cpu, o.memory ? bytes(o.memory) : 0, cpuCFSQuota);
}

/** Creates the pod's sandbox (and its log directory) and returns its ID. */
export async function createPodSandbox(deps: RuntimeManagerDeps, pod: V1Pod, attempt: number): Promise<string> {
  const config = generatePodSandboxConfig(deps, pod, attempt);
  const missing = podDns(pod, deps.dns).missingClusterDNS;
  if (missing) deps.recorder.event(podRef(pod), 'Warning', EventReasons.MissingClusterDNS, missing);
  await mkdir(config.log_directory!, { recursive: true, mode: 0o755 });
  // The CRI handler is the RuntimeClass's `handler`, not its name; without an API server there are none.
  const handler = deps.runtimeClasses ? await deps.runtimeClasses.lookupRuntimeHandler(pod.spec?.runtimeClassName) : '';
  return deps.runtime.runPodSandbox(config, handler);
}

/** The pod's sandboxes, newest first. */
export async function getSandboxesByPodUID(deps: RuntimeManagerDeps, uid: string): Promise<PodSandbox[]> {
  const sandboxes = await deps.runtime.listPodSandbox({ label_selector: { [PodUIDLabel]: uid, [NodeNameLabel]: deps.nodeName } });
  return sandboxes.sort((a, b) => Number(BigInt(b.created_at) - BigInt(a.created_at)) || (b.metadata?.attempt ?? 0) - (a.metadata?.attempt ?? 0));
}

/** Every sandbox this agent owns; with `all` false, only ready ones. */
export async function getPodSandboxes(deps: RuntimeManagerDeps, all: boolean): Promise<PodSandbox[]> {
  const filter = all ? { label_selector: { [NodeNameLabel]: deps.nodeName } } : { label_selector: { [NodeNameLabel]: deps.nodeName }, state: { state: 'SANDBOX_READY' as const } };
  return deps.runtime.listPodSandbox(filter);
}

/** The pod IPs of a sandbox, primary first (determinePodSandboxIPs). */
export function determinePodSandboxIPs(status: PodSandboxStatus): string[] {
  const ips: string[] = [];
  if (status.network?.ip) ips.push(status.network.ip);
  for (const extra of status.network?.additional_ips ?? []) if (extra.ip) ips.push(extra.ip);
  return ips;
}
