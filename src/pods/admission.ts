// Pod admission, as the kubelet's: a pod that does not fit the node is rejected before anything
// runs (phase Failed with PodOSNotSupported, OutOfpods, OutOfcpu, OutOfmemory, NodeAffinity, NodePorts
// or Taint; SysctlForbidden in sysctls.ts, AppArmor in apparmor.ts). Pure.
import type { V1Node, V1NodeSelectorRequirement, V1NodeSelectorTerm, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';
import { podRequest } from '../cm/pod-resources.js';
import { bytes, milliCPU } from '../util/quantity.js';
import { admitAppArmor, type AppArmorVerdict } from './apparmor.js';
import { admitUnderPressure, isCriticalPod, pressureConditions } from './pressure-admission.js';
import type { SysctlAllowlist } from './sysctls.js';
import { podsToPreempt, PreemptionError, requirementsOf } from '../preemption/preemption.js';

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
/** The kubelet's InsufficientResourceError: a resource the node has too little left of for the pod. */
export interface InsufficientResource {
  resourceName: string;
  requested: number;
  used: number;
  capacity: number;
}

/** A failed predicate: its reason and message, and for a resource what is short. */
export type FitFailure = { reason: string; message: string; insufficient?: InsufficientResource };

const REASON_OF: Record<string, string> = { cpu: 'OutOfcpu', memory: 'OutOfmemory', 'ephemeral-storage': 'OutOfephemeral-storage', pods: 'OutOfpods' };

function insufficient(r: InsufficientResource): FitFailure {
  return { reason: REASON_OF[r.resourceName] ?? `OutOf${r.resourceName}`, message: `Node didn't have enough resource: ${r.resourceName}, requested: ${r.requested}, used: ${r.used}, capacity: ${r.capacity}`, insufficient: r };
}

/** The resources a pod requests beyond cpu, memory and ephemeral-storage (extended resources, hugepages). */
function otherResources(pod: V1Pod): string[] {
  const names = new Set<string>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const k of [...Object.keys(c.resources?.requests ?? {}), ...Object.keys(c.resources?.limits ?? {})]) names.add(k);
  }
  return [...names].filter((n) => !['cpu', 'memory', 'ephemeral-storage'].includes(n)).sort();
}

/**
 * What the node's resources lack for the pod, as the scheduler's Fits checks it in the kubelet's
 * admission: pods, then each resource the pod requests (cpu, memory, ephemeral-storage, then the
 * others), against allocatable less what the admitted pods request. An extended resource the node
 * does not advertise is left out, as the kubelet leaves it (a cluster-level one); hugepages count 0.
 */
export function insufficientResources(pod: V1Pod, node: V1Node, admitted: V1Pod[]): InsufficientResource[] {
  const alloc = (node.status?.allocatable ?? {}) as Record<string, string>;
  const out: InsufficientResource[] = [];
  const maxPods = Number(alloc.pods ?? 110);
  if (admitted.length + 1 > maxPods) out.push({ resourceName: 'pods', requested: 1, used: admitted.length, capacity: maxPods });
  for (const name of ['cpu', 'memory', 'ephemeral-storage', ...otherResources(pod)]) {
    const want = podRequest(pod, name);
    if (want <= 0) continue;
    const text = alloc[name];
    if (text === undefined && !name.startsWith('hugepages-')) continue;
    const capacity = text === undefined ? 0 : name === 'cpu' ? milliCPU(text) : bytes(text);
    const used = admitted.reduce((n, p) => n + podRequest(p, name), 0);
    if (used + want > capacity) out.push({ resourceName: name, requested: want, used, capacity });
  }
  return out;
}

/** Every predicate the pod fails on this node, in the kubelet's order (its first is the one reported). */
export function fitFailures(pod: V1Pod, node: V1Node, admitted: V1Pod[]): FitFailure[] {
  const out: FitFailure[] = insufficientResources(pod, node, admitted).map(insufficient);
  if (!matchesNodeSelectorAndAffinity(pod, node)) {
    out.push({ reason: 'NodeAffinity', message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" });
  }
  if (hostPortConflict(pod, admitted)) {
    out.push({ reason: 'NodePorts', message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" });
  }
  const untolerated = (node.spec?.taints ?? []).find((t) => t.effect === 'NoExecute' && !(pod.spec?.tolerations ?? []).some((tol) => tolerates(tol, t)));
  if (untolerated) {
    out.push({ reason: 'Taint', message: `Predicate TaintToleration failed: node(s) had untolerated taint {${untolerated.key}: ${untolerated.value ?? ''}}` });
  }
  return out;
}

/** What no eviction could help: the pod's OS (this node is linux). */
function osMismatch(pod: V1Pod, node: V1Node): AdmitResult | undefined {
  const osLabel = pod.metadata?.labels?.['kubernetes.io/os'];
  if (osLabel !== undefined && osLabel !== (node.metadata?.labels?.['kubernetes.io/os'] ?? 'linux')) {
    return { admit: false, reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" };
  }
  if (pod.spec?.os && pod.spec.os.name !== 'linux') {
    return { admit: false, reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  }
  return undefined;
}

export function admitPod(pod: V1Pod, node: V1Node, admitted: V1Pod[]): AdmitResult {
  const os = osMismatch(pod, node);
  if (os) return os;
  const [first] = fitFailures(pod, node, admitted);
  return first ? { admit: false, reason: first.reason, message: first.message } : { admit: true };
}

/**
 * Every admit handler of the kubelet, in its order: node pressure (the eviction manager's), sysctls,
 * then the node's fit, then AppArmor.
 */
export function admitPodHere(pod: V1Pod, here: AdmissionContext): AdmitResult | AppArmorVerdict | Preempting {
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

/** Admitted, once these pods are ended (critical pod preemption). */
export type Preempting = { admit: true; preempt: V1Pod[] };

function admitHere(pod: V1Pod, here: AdmissionContext): AdmitResult | AppArmorVerdict | Preempting {
  const critical = isCriticalPod(pod, here.staticOrMirror ?? false);
  const pressure = admitUnderPressure(pod, pressureConditions(here.node), critical);
  if (!pressure.admit) return pressure;
  const sysctls = here.sysctls.admit(pod);
  if (!sysctls.admit) return sysctls;
  let preempt: V1Pod[] = [];
  if (here.node) {
    const os = osMismatch(pod, here.node);
    if (os) return os;
    let failures = fitFailures(pod, here.node, here.admitted);
    // A critical pod short only of resources gets them from pods it may preempt; else what is not
    // about resources is the answer.
    if (failures.length && critical) {
      const other = failures.filter((f) => !f.insufficient);
      if (other.length) failures = other;
      else {
        try {
          preempt = podsToPreempt(pod, here.admitted, requirementsOf(failures.map((f) => f.insufficient!)));
          failures = [];
        } catch (err) {
          if (!(err instanceof PreemptionError)) throw err;
          return { admit: false, reason: 'UnexpectedAdmissionError', message: `Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: ${err.message}` };
        }
      }
    }
    if (failures.length) return { admit: false, reason: failures[0]!.reason, message: failures[0]!.message };
  }
  const apparmor = admitAppArmor(pod, here.appArmorEnabled);
  return apparmor.admit && preempt.length ? { admit: true, preempt } : apparmor;
}
