// A container's mounts, as the kubelet's makeMounts builds them: each volumeMount from the set-up
// volume (a subPath pinned by a bind mount, so that a link inside the volume can never lead it
// out), the pod's /etc/hosts, and the file behind terminationMessagePath.
import type { V1Container, V1Pod, V1VolumeMount, V1VolumeMountStatus } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, posix, relative, sep } from 'node:path';
import type { Mount } from '../cri/types.js';
import type { Mounter } from './mounter.js';
import type { PodPaths } from './paths.js';
import type { MountedVolume } from './types.js';

export class MountConfigError extends Error {
  override name = 'MountConfigError';
}

const PROPAGATION = {
  None: 'PROPAGATION_PRIVATE',
  HostToContainer: 'PROPAGATION_HOST_TO_CONTAINER',
  Bidirectional: 'PROPAGATION_BIDIRECTIONAL',
} as const;

function propagation(mode: string | undefined): Mount['propagation'] {
  if (!mode) return PROPAGATION.None;
  const p = PROPAGATION[mode as keyof typeof PROPAGATION];
  if (!p) throw new MountConfigError(`invalid MountPropagation mode: "${mode}"`);
  return p;
}

/** $(VAR) in subPathExpr from the container's environment; a variable unset or empty is an error. */
export function expandSubPathExpr(expr: string, env: Map<string, string>): string {
  const missing = new Set<string>();
  const out = expr.replace(/\$\(([^)]*)\)/g, (_m, name: string) => {
    const v = env.get(name);
    if (!v) missing.add(name);
    return v ?? '';
  });
  if (missing.size) throw new MountConfigError(`missing value for ${[...missing].sort().join(', ')}`);
  return out;
}

/** Rejects what the kubelet rejects in a subPath. */
export function checkSubPath(p: string): void {
  if (posix.isAbsolute(p)) throw new MountConfigError(`error SubPath \`${p}\` must not be an absolute path`);
  if (p.split('/').includes('..')) throw new MountConfigError(`unable to provision SubPath \`${p}\`: must not contain '..'`);
}

const inside = (root: string, p: string) => {
  const r = relative(root, p);
  return r === '' || (!r.startsWith(`..${sep}`) && r !== '..' && !isAbsolute(r));
};

/**
 * The subPath of a volume pinned by a bind mount at `pin`, which the container gets: resolved
 * beneath the volume and bound by descriptor (Mounter.bindSubPath), so that no link in the volume,
 * there before or swapped in while this runs, leads it out (CVE-2021-25741).
 */
async function prepareSubPath(volumeRoot: string, subPath: string, pin: string, mounter: Mounter, what: string): Promise<string> {
  if (await mounter.isMountPoint(pin)) return pin;
  // As the kubelet: a subPath that is not there is made, with the volume's own mode (an emptyDir's 0777).
  const exists = await stat(join(volumeRoot, subPath)).then(() => true, () => false);
  const mode = exists ? undefined : (await stat(volumeRoot)).mode & 0o7777;
  await mkdir(dirname(pin), { recursive: true, mode: 0o750 });
  try {
    await mounter.bindSubPath(volumeRoot, subPath, pin, mode);
  } catch {
    throw new MountConfigError(exists ? `failed to prepare subPath for volumeMount ${what}` : `failed to create subPath directory for volumeMount ${what}`);
  }
  return pin;
}

export interface MountInputs {
  pod: V1Pod;
  container: V1Container;
  volumes: Map<string, MountedVolume>;
  paths: PodPaths;
  mounter: Mounter;
  /** The container's environment (for subPathExpr). */
  env: Map<string, string>;
  podIPs: string[];
  hostname: string;
  clusterDomain: string;
}

/**
 * Whether a mount is made recursively read-only (the kubelet's resolveRecursiveReadOnly). No
 * runtime here offers it yet (neither containerd 1.x nor the process runtime reports the CRI
 * feature): IfPossible is then plain read-only, and Enabled is refused, never run with less.
 */
export function resolveRecursiveReadOnly(m: V1VolumeMount, runtimeSupportsRRO: boolean): boolean {
  const rro = m.recursiveReadOnly;
  if (!rro || rro === 'Disabled') return false;
  if (!m.readOnly) throw new MountConfigError(`volume "${m.name}" requested recursive read-only mode, but it is not read-only`);
  if (m.mountPropagation && m.mountPropagation !== 'None') {
    throw new MountConfigError(`volume "${m.name}" requested recursive read-only mode, but it is not compatible with propagation "${m.mountPropagation}"`);
  }
  if (rro === 'IfPossible') return runtimeSupportsRRO;
  if (rro === 'Enabled') {
    if (!runtimeSupportsRRO) throw new MountConfigError(`volume "${m.name}" requested recursive read-only mode, but it is not supported by the runtime`);
    return true;
  }
  throw new MountConfigError(`unknown recursive read-only mode "${rro}"`);
}

/** The container status's volumeMounts, from its spec (CRI knows no volume names), as the kubelet reports them. */
export function volumeMountStatuses(container: V1Container, runtimeSupportsRRO: boolean): V1VolumeMountStatus[] | undefined {
  const mounts = container.volumeMounts ?? [];
  if (mounts.length === 0) return undefined;
  return mounts.map((m) => {
    const st: V1VolumeMountStatus = { name: m.name, mountPath: m.mountPath, readOnly: m.readOnly };
    if (m.readOnly) {
      let enabled = false;
      try {
        enabled = resolveRecursiveReadOnly(m, runtimeSupportsRRO);
      } catch {
        // The container is refused for it; its status says Disabled, as the kubelet's.
      }
      st.recursiveReadOnly = enabled ? 'Enabled' : 'Disabled';
    }
    return st;
  });
}

async function volumeMount(inp: MountInputs, m: V1VolumeMount, index: number): Promise<Mount> {
  const { pod, container } = inp;
  const vol = inp.volumes.get(m.name);
  if (!vol) throw new MountConfigError(`cannot find volume "${m.name}" to mount into container "${container.name}"`);
  try {
    resolveRecursiveReadOnly(m, false);
  } catch (err) {
    throw new MountConfigError(`failed to resolve recursive read-only mode: ${(err as Error).message}`);
  }
  let hostPath = vol.path;
  const subPath = m.subPathExpr ? expandSubPathExpr(m.subPathExpr, inp.env) : (m.subPath ?? '');
  if (subPath) {
    checkSubPath(subPath);
    const pin = inp.paths.subPathDir(pod.metadata?.uid ?? '', m.name, container.name, index);
    hostPath = await prepareSubPath(vol.path, subPath, pin, inp.mounter, `"${m.name}" of container "${container.name}"`);
  }
  return {
    container_path: posix.isAbsolute(m.mountPath) ? m.mountPath : `/${m.mountPath}`,
    host_path: hostPath,
    readonly: m.readOnly === true || vol.readOnly,
    propagation: propagation(m.mountPropagation),
  };
}

/** The kubelet's /etc/hosts for a pod: its header, the loopback entries, the pod's IPs and name, hostAliases. */
export function etcHostsContent(pod: V1Pod, podIPs: string[], hostname: string, clusterDomain: string, nodeHosts?: string): string {
  let out: string;
  if (pod.spec?.hostNetwork) {
    out = `# Kubernetes-managed hosts file (host network).\n${nodeHosts ?? ''}`;
  } else {
    const lines = ['# Kubernetes-managed hosts file.', '127.0.0.1\tlocalhost', '::1\tlocalhost ip6-localhost ip6-loopback', 'fe00::0\tip6-localnet', 'fe00::0\tip6-mcastprefix', 'fe00::1\tip6-allnodes', 'fe00::2\tip6-allrouters'];
    const sub = pod.spec?.subdomain;
    const override = pod.spec?.hostnameOverride;
    for (const ip of podIPs) {
      if (sub && !override) lines.push(`${ip}\t${hostname}.${sub}.${pod.metadata?.namespace}.svc.${clusterDomain}\t${hostname}`);
      else lines.push(`${ip}\t${hostname}`);
    }
    out = `${lines.join('\n')}\n`;
  }
  const aliases = pod.spec?.hostAliases ?? [];
  if (aliases.length) {
    out += '\n# Entries added by HostAliases.\n';
    for (const a of aliases) out += `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`;
  }
  return out;
}

/** Every mount of the container, in the kubelet's order: its volumeMounts, /etc/hosts, the termination log. */
export async function makeMounts(inp: MountInputs): Promise<Mount[]> {
  const { pod, container, paths } = inp;
  const uid = pod.metadata?.uid ?? '';
  const mounts: Mount[] = [];
  const list = container.volumeMounts ?? [];
  for (let i = 0; i < list.length; i++) mounts.push(await volumeMount(inp, list[i]!, i));

  const ownHosts = list.some((m) => posix.normalize(m.mountPath) === '/etc/hosts');
  if (!ownHosts && (inp.podIPs.length > 0 || pod.spec?.hostNetwork)) {
    const file = paths.etcHosts(uid);
    const nodeHosts = pod.spec?.hostNetwork ? await readFile('/etc/hosts', 'utf8').catch(() => '') : undefined;
    await writeFile(file, etcHostsContent(pod, inp.podIPs, inp.hostname, inp.clusterDomain, nodeHosts));
    await chmod(file, 0o644);
    mounts.push({ container_path: '/etc/hosts', host_path: file, readonly: false, propagation: PROPAGATION.None });
  }

  if (container.terminationMessagePath) {
    const dir = paths.containerDir(uid, container.name);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const file = join(dir, randomBytes(4).toString('hex'));
    await writeFile(file, '');
    await chmod(file, 0o666); // any user of the container may write its message
    const p = container.terminationMessagePath;
    mounts.push({ container_path: posix.isAbsolute(p) ? p : `/${p}`, host_path: file, readonly: false, propagation: PROPAGATION.None });
  }
  return mounts;
}
