// Admission under node pressure, as the kubelet's eviction manager admits pods (it is the first
// of its admit handlers): while the node reports DiskPressure or PIDPressure no pod starts here
// but a critical one; under MemoryPressure alone, only BestEffort pods are refused (unless they
// tolerate the memory-pressure taint). A refused pod ends Failed with reason Evicted. Pure.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { podQOSClass } from '../runtime/resources.js';
import type { AdmitResult } from './admission.js';
import { tolerates } from './admission.js';
import { isMirrorPod } from './mirror-pods.js';
import { isStaticPod } from './static-pods.js';

/** scheduling.SystemCriticalPriority: system-cluster-critical and system-node-critical are at or above it. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

const PRESSURES = ['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const;

/** The kubelet's IsCriticalPod: static and mirror pods, and pods of a system-critical priority. */
export function isCriticalPod(pod: V1Pod, staticOrMirror: boolean): boolean {
  return staticOrMirror || (pod.spec?.priority ?? -Infinity) >= SYSTEM_CRITICAL_PRIORITY;
}

/** The pressure conditions the node reports True, in the kubelet's order of signals. */
export function pressureConditions(node: V1Node | undefined): string[] {
  const conds = node?.status?.conditions ?? [];
  return PRESSURES.filter((t) => conds.some((c) => c.type === t && c.status === 'True'));
}

/** IsCriticalPod of any pod, static and mirror ones known by their annotations. */
export function podIsCritical(pod: V1Pod): boolean {
  return isCriticalPod(pod, isStaticPod(pod) || isMirrorPod(pod));
}

export function admitUnderPressure(pod: V1Pod, pressures: string[], critical: boolean): AdmitResult {
  if (pressures.length === 0 || critical) return { admit: true };
  if (pressures.length === 1 && pressures[0] === 'MemoryPressure') {
    if (podQOSClass(pod) !== 'BestEffort') return { admit: true };
    const taint = { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' };
    if ((pod.spec?.tolerations ?? []).some((t) => tolerates(t, taint))) return { admit: true };
  }
  // Go's %v of a slice of condition types: "[DiskPressure PIDPressure]".
  return { admit: false, reason: 'Evicted', message: `The node had condition: [${pressures.join(' ')}]. ` };
}
