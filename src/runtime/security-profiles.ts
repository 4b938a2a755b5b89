// seccomp and AppArmor profiles as the kubelet sends them to the runtime: the container's own, else
// the pod's; Localhost seccomp profiles are files under the kubelet's seccomp directory; without any,
// Unconfined, or RuntimeDefault when the node's seccompDefault is on.
import type { V1AppArmorProfile, V1Container, V1Pod, V1SeccompProfile } from '@kubernetes/client-node';
import type { SecurityProfile } from '../../proto/gen/runtime/v1/SecurityProfile.js';
import { Reasons, SyncError } from './errors.js';

export interface SeccompSettings {
  /** Where Localhost profiles are read from (the kubelet's <root-dir>/seccomp). */
  profileRoot: string;
  /** The kubelet's seccompDefault: RuntimeDefault for pods that name no profile. */
  defaultToRuntimeDefault: boolean;
}

/** Without configuration: the kubelet's defaults. */
export const DEFAULT_SECCOMP: SeccompSettings = { profileRoot: '/var/lib/kubelet/seccomp', defaultToRuntimeDefault: false };

function seccompFrom(profile: V1SeccompProfile, settings: SeccompSettings): SecurityProfile {
  switch (profile.type) {
    case 'RuntimeDefault':
      return { profile_type: 'RuntimeDefault' };
    case 'Localhost':
      if (!profile.localhostProfile) throw new SyncError(Reasons.CreateContainerConfig, 'localhostProfile must be set if seccompProfile type is Localhost.');
      // Joined the way filepath.Join does: a profile name cannot climb out of the directory's root.
      return { profile_type: 'Localhost', localhost_ref: `${settings.profileRoot.replace(/\/+$/, '')}/${normalize(profile.localhostProfile)}` };
    default:
      return { profile_type: 'Unconfined' };
  }
}

/** Path segments resolved as filepath.Clean does, without leaving the root ("../x" is "x"). */
function normalize(rel: string): string {
  const out: string[] = [];
  for (const part of rel.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return out.join('/');
}

/** The seccomp profile of a container (or, without one, of the pod's sandbox). */
export function seccompProfile(pod: V1Pod, container: V1Container | undefined, settings: SeccompSettings): SecurityProfile {
  const chosen = container?.securityContext?.seccompProfile ?? pod.spec?.securityContext?.seccompProfile;
  if (chosen) return seccompFrom(chosen, settings);
  return { profile_type: settings.defaultToRuntimeDefault ? 'RuntimeDefault' : 'Unconfined' };
}

const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/**
 * A container's AppArmor profile as the kubelet picks it: its own field, else the deprecated
 * annotation (static pods may have only that), else the pod's field.
 */
export function getAppArmorProfile(pod: V1Pod, container: V1Container): V1AppArmorProfile | undefined {
  if (container.securityContext?.appArmorProfile) return container.securityContext.appArmorProfile;
  const annotation = pod.metadata?.annotations?.[APPARMOR_ANNOTATION_PREFIX + container.name];
  if (annotation === 'runtime/default') return { type: 'RuntimeDefault' };
  if (annotation === 'unconfined') return { type: 'Unconfined' };
  if (annotation?.startsWith('localhost/')) return { type: 'Localhost', localhostProfile: annotation.slice('localhost/'.length) };
  return pod.spec?.securityContext?.appArmorProfile;
}

/** The container's AppArmor profile for CRI, and its deprecated string form; undefined for none. */
export function appArmorProfile(pod: V1Pod, container: V1Container): { profile: SecurityProfile; deprecated: string } | undefined {
  const p = getAppArmorProfile(pod, container);
  if (!p) return undefined;
  switch (p.type) {
    case 'RuntimeDefault':
      return { profile: { profile_type: 'RuntimeDefault' }, deprecated: 'runtime/default' };
    case 'Unconfined':
      return { profile: { profile_type: 'Unconfined' }, deprecated: 'unconfined' };
    case 'Localhost':
      if (!p.localhostProfile) throw new SyncError(Reasons.CreateContainerConfig, 'missing localhost apparmor profile name');
      return { profile: { profile_type: 'Localhost', localhost_ref: p.localhostProfile }, deprecated: `localhost/${p.localhostProfile}` };
    default:
      throw new SyncError(Reasons.CreateContainerConfig, `unknown apparmor profile type: "${p.type}"`);
  }
}
