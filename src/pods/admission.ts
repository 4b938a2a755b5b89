// Pod admission, as the kubelet's: a pod that does not fit the node is rejected before anything
// runs (phase Failed with PodOSNotSupported, OutOfpods, OutOfcpu, OutOfmemory, NodeAffinity, NodePorts
// or Taint; SysctlForbidden in sysctls.ts, AppArmor in apparmor.ts). Pure.
import type { V1Node, V1NodeSelectorRequirement, V1NodeSelectorTerm, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';
import { podRequest } from '../cm/pod-resources.js';
import { bytes, milliCPU } from '../util/quantity.js';
import { admitAppArmor, type AppArmorVerdict } from './apparmor.js';
import { admitUnderPressure, isCriticalPod, pressureConditions } from './pressure-admission.js';
import type { SysctlAllowlist } from './sysctls.js';

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

/** A pod's effective cpu and memory requests (podRequest). */
export function podRequests(pod: V1Pod): { milliCPU: number; memory: number } {
  return { milliCPU: podRequest(pod, 'cpu'), memory: podRequest(pod, 'memory') };
}

function requirementMatches(req: V1NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const v = labels[req.key];
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return v !== undefined && values.includes(v);
    case 'NotIn':
      return v === undefined || !values.includes(v);
    case 'Exists':
      return v !== undefined;
    case 'DoesNotExist':
      return v === undefined;
    case 'Gt':
      return v !== undefined && Number(v) > Number(values[0]);
    case 'Lt':
      return v !== undefined && Number(v) < Number(values[0]);
    default:
      return false;
  }
}

function termMatches(term: V1NodeSelectorTerm, node: V1Node): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  return exprs.every((r) => requirementMatches(r, node.metadata?.labels ?? {})) && fields.every((r) => requirementMatches(r, { 'metadata.name': node.metadata?.name ?? '' }));
}

export function matchesNodeSelectorAndAffinity(pod: V1Pod, node: V1Node): boolean {
  const labels = node.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && terms.length > 0 && !terms.some((t) => termMatches(t, node))) return false;
  return true;
}

/** The host ports a pod holds while it runs: its app containers' and its sidecars' (restartable init containers). */
function hostPorts(pod: V1Pod): Array<{ ip: string; protocol: string; port: number }> {
  const sidecars = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
  return [...sidecars, ...(pod.spec?.containers ?? [])]
    .flatMap((c) => c.ports ?? [])
    .filter((p) => (p.hostPort ?? 0) > 0)
    // Unset means every address, and TCP.
    .map((p) => ({ ip: p.hostIP || '0.0.0.0', protocol: p.protocol || 'TCP', port: p.hostPort! }));
}

/** Whether a host port the pod asks for is held by an admitted pod (the scheduler's NodePorts rule). */
export function hostPortConflict(pod: V1Pod, admitted: V1Pod[]): boolean {
  const used = admitted.flatMap(hostPorts);
  return hostPorts(pod).some((want) =>
    used.some((u) => u.protocol === want.protocol && u.port === want.port && (want.ip === '0.0.0.0' || u.ip === '0.0.0.0' || u.ip === want.ip)),
  );
}

export function tolerates(toleration: V1Toleration, taint: V1Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.operator === 'Exists') return !toleration.key || toleration.key === taint.key;
  return toleration.key === taint.key && (toleration.value ?? '') === (taint.value ?? '');
}

/**
 * Decides whether `pod` may run next to `admitted` (the pods already running or admitted here).
 * As the kubelet, only NoExecute taints are checked here: NoSchedule is the scheduler's business.
 */
export function admitPod(pod: V1Pod, node: V1Node, admitted: V1Pod[]): AdmitResult {
  // First what no eviction could help: the pod's OS (this node is linux).
  const osLabel = pod.metadata?.labels?.['kubernetes.io/os'];
  if (osLabel !== undefined && osLabel !== (node.metadata?.labels?.['kubernetes.io/os'] ?? 'linux')) {
    return { admit: false, reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" };
  }
  if (pod.spec?.os && pod.spec.os.name !== 'linux') {
    return { admit: false, reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  }
  const alloc = (node.status?.allocatable ?? {}) as Record<string, string>;
  const maxPods = Number(alloc.pods ?? 110);
  if (admitted.length + 1 > maxPods) {
    return { admit: false, reason: 'OutOfpods', message: `Node didn't have enough resource: pods, requested: 1, used: ${admitted.length}, capacity: ${maxPods}` };
  }
  const want = podRequests(pod);
  const used = admitted.reduce((acc, p) => {
    const r = podRequests(p);
    return { milliCPU: acc.milliCPU + r.milliCPU, memory: acc.memory + r.memory };
  }, { milliCPU: 0, memory: 0 });
  const cpuCap = alloc.cpu ? milliCPU(alloc.cpu) : Infinity;
  const memCap = alloc.memory ? bytes(alloc.memory) : Infinity;
  if (want.milliCPU > 0 && used.milliCPU + want.milliCPU > cpuCap) {
    return { admit: false, reason: 'OutOfcpu', message: `Node didn't have enough resource: cpu, requested: ${want.milliCPU}, used: ${used.milliCPU}, capacity: ${cpuCap}` };
  }
  if (want.memory > 0 && used.memory + want.memory > memCap) {
    return { admit: false, reason: 'OutOfmemory', message: `Node didn't have enough resource: memory, requested: ${want.memory}, used: ${used.memory}, capacity: ${memCap}` };
  }
  if (!matchesNodeSelectorAndAffinity(pod, node)) {
    return { admit: false, reason: 'NodeAffinity', message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" };
  }
  if (hostPortConflict(pod, admitted)) {
    return { admit: false, reason: 'NodePorts', message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" };
  }
  const untolerated = (node.spec?.taints ?? []).find((t) => t.effect === 'NoExecute' && !(pod.spec?.tolerations ?? []).some((tol) => tolerates(tol, t)));
  if (untolerated) {
    return { admit: false, reason: 'Taint', message: `Predicate TaintToleration failed: node(s) had untolerated taint {${untolerated.key}: ${untolerated.value ?? ''}}` };
  }
  return { admit: true };
}

/**
 * Every admit handler of the kubelet, in its order: node pressure (the eviction manager's), sysctls,
 * then the node's fit, then AppArmor.
 */
export function admitPodHere(pod: V1Pod, here: AdmissionContext): AdmitResult | AppArmorVerdict {
  try {
    return admitHere(pod, here);
  } catch (err) {
    // A spec admission cannot read (a static pod no API server validated) fails that pod, not the agent.
    return { admit: false, reason: 'UnexpectedAdmissionError', message: `Unexpected error while admitting the pod: ${(err as Error).message}` };
  }
}

export interface AdmissionContext {
  node?: V1Node;
  admitted: V1Pod[];
  sysctls: SysctlAllowlist;
  appArmorEnabled: boolean;
  staticOrMirror?: boolean;
}

function admitHere(pod: V1Pod, here: AdmissionContext): AdmitResult | AppArmorVerdict {
  const pressure = admitUnderPressure(pod, pressureConditions(here.node), isCriticalPod(pod, here.staticOrMirror ?? false));
  if (!pressure.admit) return pressure;
  const sysctls = here.sysctls.admit(pod);
  if (!sysctls.admit) return sysctls;
  const fits = here.node ? admitPod(pod, here.node, here.admitted) : ({ admit: true } as const);
  return fits.admit ? admitAppArmor(pod, here.appArmorEnabled) : fits;
}
