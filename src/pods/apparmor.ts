// AppArmor at admission, as the kubelet's: a pod that asks for a profile (anything but Unconfined,
// in its fields or the deprecated annotations) is refused on a host without AppArmor, rather than
// started without the confinement it asked for.
import { existsSync, readFileSync } from 'node:fs';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { getAppArmorProfile } from '../runtime/security-profiles.js';

const ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/** Whether the kernel has AppArmor on (securityfs mounted and the module enabled). */
export function appArmorEnabledOnHost(): boolean {
  if (!existsSync('/sys/kernel/security/apparmor')) return false;
  try {
    return readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').startsWith('Y');
  } catch {
    return false;
  }
}

function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...((pod.spec?.ephemeralContainers ?? []) as V1Container[])];
}

function requiresAppArmor(pod: V1Pod): boolean {
  const confined = (p?: { type: string }) => p !== undefined && p.type !== 'Unconfined';
  if (confined(pod.spec?.securityContext?.appArmorProfile)) return true;
  if (allContainers(pod).some((c) => confined(c.securityContext?.appArmorProfile))) return true;
  return Object.entries(pod.metadata?.annotations ?? {}).some(([k, v]) => k.startsWith(ANNOTATION_PREFIX) && v !== 'unconfined');
}

export type AppArmorVerdict = { admit: true } | { admit: false; reason: 'AppArmor'; message: string };

export function admitAppArmor(pod: V1Pod, hostEnabled: boolean): AppArmorVerdict {
  // Only a Pending pod is checked (one already running, or a static pod with no status, is not).
  if (pod.status?.phase !== 'Pending') return { admit: true };
  if (!requiresAppArmor(pod)) return { admit: true };
  if (!hostEnabled) return { admit: false, reason: 'AppArmor', message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host' };
  for (const c of allContainers(pod)) {
    const p = getAppArmorProfile(pod, c);
    if (p?.type === 'Localhost' && !p.localhostProfile?.trim()) {
      return { admit: false, reason: 'AppArmor', message: `Cannot enforce AppArmor: invalid empty AppArmor profile name: ${JSON.stringify(p)}` };
    }
  }
  return { admit: true };
}
