// The checks a configuration gets once its file and flags are combined, each in the kubelet's
// words where the kubelet has the same one: node labels, image GC, pulls, node allocatable
// enforcement, eviction thresholds, graceful shutdown periods, unsafe sysctls.
import { DEFAULT_EVICTION_HARD, EvictionConfigError, parseThresholds, type ThresholdConfig } from '../eviction/thresholds.js';
import { SysctlAllowlist } from '../pods/sysctls.js';
import { goDuration } from '../util/duration.js';
import { ConfigError, type NodeletConfig } from './config.js';

// The labels of kubernetes.io and k8s.io a node may set on itself (the NodeRestriction admission
// plugin refuses any other): the kubelet's well-known ones, and those of its two namespaces.
const KUBELET_LABELS = [
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
];
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** What is wrong with a label key (a qualified name, as the API checks it), or undefined. */
function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return 'its prefix must be a lower-case DNS subdomain';
  if (name.length > 63 || !LABEL_NAME.test(name)) return 'its name must be 63 characters or less, alphanumeric, "-", "_" or ".", and begin and end with an alphanumeric character';
  return undefined;
}

/** As the kubelet checks --node-labels: valid keys and values (the API server would refuse the Node), and none of kubernetes.io or k8s.io but those a node may set. */
function checkNodeLabels(labels: Record<string, string>): void {
  for (const [k, v] of Object.entries(labels)) {
    const keyProblem = labelKeyProblem(k);
    if (keyProblem) throw new ConfigError(`nodeLabels: invalid label key ${JSON.stringify(k)}: ${keyProblem}`);
    if (v !== '' && (v.length > 63 || !LABEL_NAME.test(v))) {
      throw new ConfigError(`nodeLabels: invalid value ${JSON.stringify(v)} of label ${k}: 63 characters or less, empty or alphanumeric, "-", "_" or ".", beginning and ending with an alphanumeric character`);
    }
  }
  const under = (ns: string, domain: string) => ns === domain || ns.endsWith(`.${domain}`);
  const unknown = Object.keys(labels)
    .filter((k) => {
      const ns = k.includes('/') ? k.slice(0, k.indexOf('/')) : '';
      if (!under(ns, 'kubernetes.io') && !under(ns, 'k8s.io')) return false;
      return !KUBELET_LABELS.includes(k) && !KUBELET_LABEL_NAMESPACES.some((allowed) => under(ns, allowed));
    })
    .sort();
  if (unknown.length) {
    throw new ConfigError(
      `nodeLabels: unknown 'kubernetes.io' or 'k8s.io' labels: ${unknown.join(', ')} (a node may set only those beginning with ${KUBELET_LABEL_NAMESPACES.join(', ')} or these: ${KUBELET_LABELS.join(', ')})`,
    );
  }
}

/** The kubelet's checks of enforceNodeAllocatable, in its words; 'none' leaves nothing enforced. */
function checkNodeAllocatable(c: NodeletConfig): void {
  const opts = c.enforceNodeAllocatable;
  const valid = ['pods', 'system-reserved', 'system-reserved-compressible', 'kube-reserved', 'kube-reserved-compressible', 'none'];
  const field = 'enforceNodeAllocatable (--enforce-node-allocatable)';
  for (const k of ['system-reserved', 'kube-reserved']) {
    if (opts.includes(k) && opts.includes(`${k}-compressible`)) throw new ConfigError(`invalid configuration: both "${k}" and "${k}-compressible" cannot be specified together in ${field}`);
  }
  const seen = new Set<string>();
  for (const o of opts) {
    if (seen.has(o)) throw new ConfigError(`invalid configuration: duplicated enforcements "${o}" in ${field}`);
    seen.add(o);
    if (!valid.includes(o)) throw new ConfigError(`invalid configuration: option "${o}" specified for ${field}. Valid options are ${valid.slice(0, -1).map((v) => `"${v}"`).join(', ')} or "none"`);
    if (o === 'none') {
      if (opts.length > 1) throw new ConfigError(`invalid configuration: ${field} may not contain additional enforcements when "none" is specified`);
      continue;
    }
    if (o.startsWith('system-reserved') && !c.systemReservedCgroup) {
      throw new ConfigError(`invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" or "system-reserved-compressible" included in ${field}`);
    }
    if (o.startsWith('kube-reserved') && !c.kubeReservedCgroup) {
      throw new ConfigError(`invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when "kube-reserved" or "kube-reserved-compressible" included in ${field}`);
    }
    if (!c.cgroupsPerQOS) throw new ConfigError(`invalid configuration: ${field} is not supported unless cgroupsPerQOS (--cgroups-per-qos) feature is turned on`);
  }
  if (opts.includes('none')) c.enforceNodeAllocatable = [];
  for (const [name, path] of [['cgroupRoot', c.cgroupRoot], ['systemReservedCgroup', c.systemReservedCgroup], ['kubeReservedCgroup', c.kubeReservedCgroup]] as const) {
    if (name !== 'cgroupRoot' && path === '') continue;
    if (!path.startsWith('/') || path.split('/').some((p) => p === '..' || p === '.')) throw new ConfigError(`${name}: ${JSON.stringify(path)} must be an absolute cgroupfs path (/ or /a/b)`);
  }
}

/** The eviction settings as the kubelet reads them: the default hard thresholds merged in when asked, each map checked in its words. */
function checkEviction(c: NodeletConfig): void {
  if (c.mergeDefaultEvictionSettings) c.evictionHard = { ...DEFAULT_EVICTION_HARD, ...c.evictionHard };
  const none = { evictionHard: {}, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, enforceNodeAllocatable: [] };
  const check = (field: string, part: Partial<ThresholdConfig>) => {
    try {
      parseThresholds({ ...none, ...part });
    } catch (err) {
      if (err instanceof EvictionConfigError) throw new ConfigError(`${field}: ${err.message}`);
      throw err;
    }
  };
  check('evictionHard', { evictionHard: c.evictionHard });
  check('evictionSoftGracePeriod', { evictionSoftGracePeriod: c.evictionSoftGracePeriod });
  check('evictionSoft', { evictionSoft: c.evictionSoft, evictionSoftGracePeriod: c.evictionSoftGracePeriod });
  check('evictionMinimumReclaim', { evictionMinimumReclaim: c.evictionMinimumReclaim });
}

/** The kubelet's checks of the graceful shutdown periods, in its words; and what shutdownOnSIGTERM needs. */
function checkShutdown(c: NodeletConfig): void {
  const period = goDuration(c.shutdownGracePeriodMs);
  const critical = goDuration(c.shutdownGracePeriodCriticalPodsMs);
  if (c.shutdownGracePeriodCriticalPodsMs > c.shutdownGracePeriodMs) throw new ConfigError(`invalid configuration: shutdownGracePeriodCriticalPods ${critical} must be <= shutdownGracePeriod ${period}`);
  if (c.shutdownGracePeriodMs > 0 && c.shutdownGracePeriodMs < 1000) throw new ConfigError(`invalid configuration: shutdownGracePeriod ${period} must be either zero or otherwise >= 1 sec`);
  if (c.shutdownGracePeriodCriticalPodsMs > 0 && c.shutdownGracePeriodCriticalPodsMs < 1000) throw new ConfigError(`invalid configuration: shutdownGracePeriodCriticalPods ${critical} must be either zero or otherwise >= 1 sec`);
  if (c.shutdownOnSIGTERM && c.shutdownGracePeriodMs === 0) throw new ConfigError('shutdownOnSIGTERM: needs shutdownGracePeriod (the time the pods get to end), which is 0');
}

/** Checks what must hold once file and flags are combined. */
export function finalizeConfig(c: NodeletConfig): NodeletConfig {
  if (!c.nodeName) throw new ConfigError('nodeName: required (in the config file or --node-name)');
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(c.nodeName) || c.nodeName.length > 253) {
    throw new ConfigError(`nodeName: ${JSON.stringify(c.nodeName)} is not a valid node name (lower-case DNS subdomain)`);
  }
  if (!c.tlsCertFile !== !c.tlsPrivateKeyFile) throw new ConfigError('tlsCertFile and tlsPrivateKeyFile: give both or neither');
  if (c.bootstrapKubeconfig && c.bootstrapInCluster) throw new ConfigError('bootstrapKubeconfig and bootstrapInCluster: give one or neither');
  checkNodeLabels(c.nodeLabels);
  // The kubelet's own checks of these two pairs, in its words.
  if (c.imageGCLowThresholdPercent >= c.imageGCHighThresholdPercent) {
    throw new ConfigError(`imageGCLowThresholdPercent ${c.imageGCLowThresholdPercent} must be less than imageGCHighThresholdPercent ${c.imageGCHighThresholdPercent}`);
  }
  if (c.imageMaximumGCAgeMs > 0 && c.imageMaximumGCAgeMs <= c.imageMinimumGCAgeMs) {
    throw new ConfigError(`imageMaximumGCAge ${goDuration(c.imageMaximumGCAgeMs)} must be greater than imageMinimumGCAge ${goDuration(c.imageMinimumGCAgeMs)}`);
  }
  if (c.serializeImagePulls && c.maxParallelImagePulls > 1) {
    throw new ConfigError('maxParallelImagePulls cannot be larger than 1 unless serializeImagePulls is set to false');
  }
  checkNodeAllocatable(c);
  checkEviction(c);
  checkShutdown(c);
  try {
    new SysctlAllowlist(c.allowedUnsafeSysctls);
  } catch (err) {
    throw new ConfigError(`allowedUnsafeSysctls: ${(err as Error).message}`);
  }
  return c;
}
