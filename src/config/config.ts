// NodeletConfiguration: one YAML file holding every setting, flags overriding the file, and
// $(VAR) references filled from the environment. Anything wrong is refused with one line that
// names the field (ConfigError; the CLI turns it into exit code 2).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { parseQuantity } from '../util/quantity.js';
import { DEFAULT_EVICTION_HARD } from '../eviction/thresholds.js';
import { parseDuration } from '../util/duration.js';
export { parseDuration };

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

export interface ResourceList {
  cpu?: string;
  memory?: string;
  'ephemeral-storage'?: string;
  pods?: string;
}

/** Who may call the node API (the kubelet's KubeletAuthentication). */
export interface NodeAuthentication {
  anonymous: { enabled: boolean };
  webhook: { enabled: boolean; cacheTTLMs: number };
  x509: { clientCAFile: string };
}

export interface NodeAuthorization {
  mode: 'Webhook' | 'AlwaysAllow';
  webhook: { cacheAuthorizedTTLMs: number; cacheUnauthorizedTTLMs: number };
}

export interface BackoffConfig {
  initialMs: number;
  maxMs: number;
}

export interface NodeletConfig {
  nodeName: string;
  /**
   * Path of a kubeconfig; empty means the in-cluster service account. With TLS bootstrapping, the
   * node's own kubeconfig: used while its client certificate is valid, else written after the
   * bootstrap (pointing at <certDir>/nodelet-client-current.pem), as the kubelet's --kubeconfig.
   */
  kubeconfig: string;
  /** TLS bootstrapping: a kubeconfig whose credentials ask for the node's client certificate (the kubelet's --bootstrap-kubeconfig). */
  bootstrapKubeconfig: string;
  /** TLS bootstrapping with the pod's service account (in-cluster) as the bootstrap credentials. */
  bootstrapInCluster: boolean;
  /** Renew the client certificate at 70-90% of its life, with the node's own identity (the kubelet's rotateCertificates). */
  rotateCertificates: boolean;
  /** The agent's own OOM score adjustment (the kubelet's oomScoreAdj, -999: the kernel kills it after any pod). */
  oomScoreAdj: number;
  runtimeEndpoint: string;
  podLogRoot: string;
  /** Where the legacy links to containers' logs go, for logging agents (the kubelet's /var/log/containers); '' for none. */
  containerLogsDir: string;
  /** Container log rotation (the kubelet's containerLogMaxSize, containerLogMaxFiles, containerLogMonitorInterval). */
  containerLogMaxSizeBytes: number;
  containerLogMaxFiles: number;
  containerLogMonitorIntervalMs: number;
  /** The agent's own state: pods' volumes, /etc/hosts and termination-message files (the kubelet's --root-dir). */
  rootDir: string;
  /** The cluster's DNS domain: a pod's search path under ClusterFirst, its own name in /etc/hosts. */
  clusterDomain: string;
  /** The cluster DNS servers pods with dnsPolicy ClusterFirst use (none: they get the node's resolv.conf). */
  clusterDNS: string[];
  /** Unsafe sysctls (names, or prefixes ending in *) pods may set, beyond the safe ones. */
  allowedUnsafeSysctls: string[];
  /** The node's resolv.conf, the base of dnsPolicy Default ('' for none). */
  resolvConf: string;
  nodeIP: string;
  /** The node API (HTTPS, authenticated): the kubelet's address and port (10250). */
  address: string;
  port: number;
  /** The node API's serving certificate and key (PEM files); both or neither. */
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  /** Without files: request the serving certificate from the kubelet-serving signer (else one is self-signed). */
  serverTLSBootstrap: boolean;
  /** Where made or issued certificates (serving and client) are kept ('' for <rootDir>/pki, the kubelet's --cert-dir). */
  certDir: string;
  /** Plain-HTTP /healthz (0: off), on healthzBindAddress, as the kubelet's 10248. */
  healthzPort: number;
  healthzBindAddress: string;
  /** Unauthenticated plain-HTTP /healthz, /pods and /metrics on `address` (0: off, the kubelet's default). */
  readOnlyPort: number;
  authentication: NodeAuthentication;
  authorization: NodeAuthorization;
  /** The kubelet feature gates nodelet has (off as in the kubelet 1.37 unless said). */
  featureGates: { PodLogsQuerySplitStreams: boolean };
  syncFrequencyMs: number;
  informerResyncMs: number;
  plegRelistPeriodMs: number;
  /** The relist's period while the runtime streams container events (0: events not used, relist only). */
  eventedPlegRelistPeriodMs: number;
  maxConcurrentSyncs: number;
  /** Syncs kept per pod for /debug and `nodelet history` (0: no history). */
  syncHistoryLength: number;
  crashLoopBackOff: BackoffConfig;
  /** A failed sync is retried after this, plus up to half again (the kubelet's 10 s). */
  podWorkerBackOffPeriodMs: number;
  imagePullBackOff: BackoffConfig;
  imagePullQPS: number;
  imagePullBurst: number;
  serializeImagePulls: boolean;
  /** With serializeImagePulls off: pulls at once (0 = no limit, the kubelet's nil). */
  maxParallelImagePulls: number;
  /** The process runtime aborts a pull that receives nothing for this long (containerd has its own setting). */
  imagePullProgressDeadlineMs: number;
  /** Image GC: above this use of the image filesystem, images are removed down to the low threshold. */
  imageGCHighThresholdPercent: number;
  imageGCLowThresholdPercent: number;
  /** An unused image younger than this (since first seen) is not removed. */
  imageMinimumGCAgeMs: number;
  /** An image unused for this long is removed whatever the disk's use (0 = never). */
  imageMaximumGCAgeMs: number;
  maxPods: number;
  systemReserved: ResourceList;
  kubeReserved: ResourceList;
  /** Overrides of what is measured from the host. */
  capacity: ResourceList;
  /** Thresholds by signal (memory.available, nodefs.available, ...), as the kubelet's; given, they replace the defaults unless mergeDefaultEvictionSettings. */
  evictionHard: Record<string, string>;
  evictionSoft: Record<string, string>;
  /** A soft threshold's grace period, by signal (Go durations). */
  evictionSoftGracePeriod: Record<string, string>;
  evictionMinimumReclaim: Record<string, string>;
  /** The longest grace period (seconds) of a pod evicted for a soft threshold. */
  evictionMaxPodGracePeriod: number;
  mergeDefaultEvictionSettings: boolean;
  /** A pressure condition stays True this long after its threshold was last crossed. */
  evictionPressureTransitionPeriodMs: number;
  nodeLabels: Record<string, string>;
  registerWithTaints: Taint[];
  allowPrivileged: boolean;
  /** RuntimeDefault seccomp for containers that name no profile (the kubelet's seccompDefault, off by default). */
  seccompDefault: boolean;
  cpuCFSQuota: boolean;
  /** The kubelet's QoS cgroup hierarchy: kubepods, its QoS classes and a cgroup per pod (true by default). */
  cgroupsPerQOS: boolean;
  /** How cgroups are written: 'cgroupfs' (directly) is the one driver nodelet has. */
  cgroupDriver: 'cgroupfs';
  /** Where kubepods goes ('/': the hierarchy's root); it must exist. */
  cgroupRoot: string;
  /** 'pods': the pods' cgroup is limited to allocatable; [] ('none'): to capacity. */
  enforceNodeAllocatable: string[];
  /** cgroupfs paths of the cgroups the OS's daemons and the node's (runtime, agent) run in; held to systemReserved/kubeReserved when enforceNodeAllocatable says so. */
  systemReservedCgroup: string;
  kubeReservedCgroup: string;
  /** Each pod's pids.max (-1: unbounded). */
  podPidsLimit: number;
  /** cgroup v2: only the process the kernel picks is killed on an OOM, not the container (memory.oom.group 0). */
  singleProcessOOMKill: boolean;
  logLevel: 'error' | 'warn' | 'info' | 'debug';
  logFormat: 'json' | 'text' | '';
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
  nodeLeaseRenewIntervalMs: number;
  markUnschedulableOnShutdown: boolean;
  /** Graceful node shutdown: the time pods get to end when the node goes down (0: off), the last part of it for critical pods. */
  shutdownGracePeriodMs: number;
  shutdownGracePeriodCriticalPodsMs: number;
  /** The agent's SIGTERM is the node going down: pods end as in a graceful node shutdown before it exits. */
  shutdownOnSIGTERM: boolean;
  /** A directory of static pod manifests ('' for none). */
  staticPodPath: string;
  /** 'cri': a CRI runtime at runtimeEndpoint; 'process': nodelet's own process runtime, started by the agent. */
  runtime: 'cri' | 'process';
  /** The built-in process runtime: state, image archives, socket, and the CNI configuration its pods' networks come from. */
  processRuntime: { root: string; imagesDir: string; socket: string; cniConfDir: string; cniBinDir: string; registryCertsDir: string };
}

export function defaultConfig(): NodeletConfig {
  return {
    nodeName: '',
    kubeconfig: '',
    bootstrapKubeconfig: '',
    bootstrapInCluster: false,
    rotateCertificates: false,
    oomScoreAdj: -999,
    runtimeEndpoint: 'unix:///run/containerd/containerd.sock',
    podLogRoot: '/var/log/pods',
    containerLogsDir: '/var/log/containers',
    containerLogMaxSizeBytes: 10 * 1024 * 1024,
    containerLogMaxFiles: 5,
    containerLogMonitorIntervalMs: 10_000,
    rootDir: '/var/lib/nodelet',
    clusterDomain: '',
    clusterDNS: [],
    allowedUnsafeSysctls: [],
    resolvConf: '/etc/resolv.conf',
    nodeIP: '',
    address: '127.0.0.1',
    port: 10250,
    tlsCertFile: '',
    tlsPrivateKeyFile: '',
    serverTLSBootstrap: false,
    certDir: '',
    healthzPort: 10248,
    healthzBindAddress: '127.0.0.1',
    readOnlyPort: 0,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true, cacheTTLMs: 120_000 }, x509: { clientCAFile: '' } },
    authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 } },
    featureGates: { PodLogsQuerySplitStreams: false },
    syncFrequencyMs: 60_000,
    syncHistoryLength: 20,
    informerResyncMs: 60_000,
    plegRelistPeriodMs: 1000,
    eventedPlegRelistPeriodMs: 300_000,
    maxConcurrentSyncs: 16,
    crashLoopBackOff: { initialMs: 10_000, maxMs: 300_000 },
    podWorkerBackOffPeriodMs: 10_000,
    imagePullBackOff: { initialMs: 10_000, maxMs: 300_000 },
    imagePullQPS: 5,
    imagePullBurst: 10,
    serializeImagePulls: true,
    maxParallelImagePulls: 0,
    imagePullProgressDeadlineMs: 60_000,
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    imageMinimumGCAgeMs: 120_000,
    imageMaximumGCAgeMs: 0,
    maxPods: 110,
    systemReserved: {},
    kubeReserved: {},
    capacity: {},
    evictionHard: { ...DEFAULT_EVICTION_HARD },
    evictionSoft: {},
    evictionSoftGracePeriod: {},
    evictionMinimumReclaim: {},
    evictionMaxPodGracePeriod: 0,
    mergeDefaultEvictionSettings: false,
    evictionPressureTransitionPeriodMs: 300_000,
    nodeLabels: {},
    registerWithTaints: [],
    allowPrivileged: false,
    seccompDefault: false,
    cpuCFSQuota: true,
    cgroupsPerQOS: true,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: '/',
    enforceNodeAllocatable: ['pods'],
    systemReservedCgroup: '',
    kubeReservedCgroup: '',
    podPidsLimit: -1,
    singleProcessOOMKill: false,
    logLevel: 'info',
    logFormat: '',
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    nodeLeaseDurationSeconds: 40,
    nodeLeaseRenewIntervalMs: 10_000,
    markUnschedulableOnShutdown: false,
    shutdownGracePeriodMs: 0,
    shutdownGracePeriodCriticalPodsMs: 0,
    shutdownOnSIGTERM: false,
    staticPodPath: '',
    runtime: 'cri',
    processRuntime: { root: '/var/lib/nodelet/process', imagesDir: '', socket: '', cniConfDir: '/etc/cni/net.d', cniBinDir: '/usr/lib/cni:/opt/cni/bin', registryCertsDir: '/etc/containerd/certs.d' },
  };
}

/** Replaces $(NAME) with the environment variable NAME; a missing variable is an error naming the field. */
export function expandEnv(value: string, field: string, env: NodeJS.ProcessEnv): string {
  return value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined || v === '') throw new ConfigError(`${field}: environment variable ${name} is not set (referenced as $(${name}))`);
    return v;
  });
}

type Kind = 'struct' | 'quantity' | 'string' | 'stringList' | 'int' | 'number' | 'bool' | 'duration' | 'endpoint' | 'quantityMap' | 'stringMap' | 'taints' | 'backoff' | 'enum' | 'processRuntime' | 'ip' | 'ipList';

interface FieldSpec {
  kind: Kind;
  /** The NodeletConfig property it fills (defaults to the same name). */
  prop?: keyof NodeletConfig;
  min?: number;
  max?: number;
  values?: string[];
  /** A 'struct''s fields, merged over its current value. */
  fields?: Record<string, FieldSpec>;
}

/** The file's fields, as written in YAML (durations as strings: `syncFrequency: 1m`). */
const fields: Record<string, FieldSpec> = {
  nodeName: { kind: 'string' },
  kubeconfig: { kind: 'string' },
  bootstrapKubeconfig: { kind: 'string' },
  bootstrapInCluster: { kind: 'bool' },
  rotateCertificates: { kind: 'bool' },
  oomScoreAdj: { kind: 'int', min: -1000, max: 1000 },
  runtimeEndpoint: { kind: 'endpoint' },
  podLogRoot: { kind: 'string' },
  containerLogsDir: { kind: 'string' },
  containerLogMaxSize: { kind: 'quantity', prop: 'containerLogMaxSizeBytes', min: 1 },
  containerLogMaxFiles: { kind: 'int', min: 2, max: 1000 },
  containerLogMonitorInterval: { kind: 'duration', prop: 'containerLogMonitorIntervalMs', min: 1000 },
  rootDir: { kind: 'string' },
  clusterDomain: { kind: 'string' },
  clusterDNS: { kind: 'ipList' },
  allowedUnsafeSysctls: { kind: 'stringList' },
  resolvConf: { kind: 'string' },
  nodeIP: { kind: 'ip' },
  address: { kind: 'ip' },
  port: { kind: 'int', min: 0, max: 65535 },
  tlsCertFile: { kind: 'string' },
  tlsPrivateKeyFile: { kind: 'string' },
  serverTLSBootstrap: { kind: 'bool' },
  certDir: { kind: 'string' },
  healthzPort: { kind: 'int', min: 0, max: 65535 },
  healthzBindAddress: { kind: 'ip' },
  readOnlyPort: { kind: 'int', min: 0, max: 65535 },
  authentication: {
    kind: 'struct',
    fields: {
      anonymous: { kind: 'struct', fields: { enabled: { kind: 'bool' } } },
      webhook: { kind: 'struct', fields: { enabled: { kind: 'bool' }, cacheTTL: { kind: 'duration', prop: 'cacheTTLMs' as keyof NodeletConfig, min: 0 } } },
      x509: { kind: 'struct', fields: { clientCAFile: { kind: 'string' } } },
    },
  },
  featureGates: { kind: 'struct', fields: { PodLogsQuerySplitStreams: { kind: 'bool' } } },
  authorization: {
    kind: 'struct',
    fields: {
      mode: { kind: 'enum', values: ['Webhook', 'AlwaysAllow'] },
      webhook: {
        kind: 'struct',
        fields: {
          cacheAuthorizedTTL: { kind: 'duration', prop: 'cacheAuthorizedTTLMs' as keyof NodeletConfig, min: 0 },
          cacheUnauthorizedTTL: { kind: 'duration', prop: 'cacheUnauthorizedTTLMs' as keyof NodeletConfig, min: 0 },
        },
      },
    },
  },
  syncFrequency: { kind: 'duration', prop: 'syncFrequencyMs', min: 1000 },
  informerResync: { kind: 'duration', prop: 'informerResyncMs', min: 0 },
  plegRelistPeriod: { kind: 'duration', prop: 'plegRelistPeriodMs', min: 100 },
  eventedPlegRelistPeriod: { kind: 'duration', prop: 'eventedPlegRelistPeriodMs', min: 0 },
  maxConcurrentSyncs: { kind: 'int', min: 1, max: 1000 },
  syncHistoryLength: { kind: 'int', min: 0, max: 1000 },
  crashLoopBackOff: { kind: 'backoff' },
  podWorkerBackOffPeriod: { kind: 'duration', prop: 'podWorkerBackOffPeriodMs', min: 100 },
  imagePullBackOff: { kind: 'backoff' },
  imagePullQPS: { kind: 'number', min: 0, max: 1000 },
  imagePullBurst: { kind: 'int', min: 1, max: 1000 },
  serializeImagePulls: { kind: 'bool' },
  maxParallelImagePulls: { kind: 'int', min: 0, max: 1000 },
  imagePullProgressDeadline: { kind: 'duration', prop: 'imagePullProgressDeadlineMs', min: 1000 },
  imageGCHighThresholdPercent: { kind: 'int', min: 0, max: 100 },
  imageGCLowThresholdPercent: { kind: 'int', min: 0, max: 100 },
  imageMinimumGCAge: { kind: 'duration', prop: 'imageMinimumGCAgeMs', min: 0 },
  imageMaximumGCAge: { kind: 'duration', prop: 'imageMaximumGCAgeMs', min: 0 },
  maxPods: { kind: 'int', min: 1, max: 10000 },
  systemReserved: { kind: 'quantityMap' },
  kubeReserved: { kind: 'quantityMap' },
  capacity: { kind: 'quantityMap' },
  evictionHard: { kind: 'stringMap' },
  evictionSoft: { kind: 'stringMap' },
  evictionSoftGracePeriod: { kind: 'stringMap' },
  evictionMinimumReclaim: { kind: 'stringMap' },
  evictionMaxPodGracePeriod: { kind: 'int', min: 0, max: 86400 * 365 },
  mergeDefaultEvictionSettings: { kind: 'bool' },
  evictionPressureTransitionPeriod: { kind: 'duration', prop: 'evictionPressureTransitionPeriodMs', min: 0 },
  nodeLabels: { kind: 'stringMap' },
  registerWithTaints: { kind: 'taints' },
  allowPrivileged: { kind: 'bool' },
  seccompDefault: { kind: 'bool' },
  cpuCFSQuota: { kind: 'bool' },
  cgroupsPerQOS: { kind: 'bool' },
  cgroupDriver: { kind: 'enum', values: ['cgroupfs'] },
  cgroupRoot: { kind: 'string' },
  enforceNodeAllocatable: { kind: 'stringList' },
  systemReservedCgroup: { kind: 'string' },
  kubeReservedCgroup: { kind: 'string' },
  podPidsLimit: { kind: 'int', min: -1, max: 4194304 },
  singleProcessOOMKill: { kind: 'bool' },
  logLevel: { kind: 'enum', values: ['error', 'warn', 'info', 'debug'] },
  logFormat: { kind: 'enum', values: ['json', 'text'] },
  nodeStatusUpdateFrequency: { kind: 'duration', prop: 'nodeStatusUpdateFrequencyMs', min: 1000 },
  nodeStatusReportFrequency: { kind: 'duration', prop: 'nodeStatusReportFrequencyMs', min: 1000 },
  nodeLeaseDurationSeconds: { kind: 'int', min: 1, max: 3600 },
  nodeLeaseRenewInterval: { kind: 'duration', prop: 'nodeLeaseRenewIntervalMs', min: 100 },
  markUnschedulableOnShutdown: { kind: 'bool' },
  shutdownGracePeriod: { kind: 'duration', prop: 'shutdownGracePeriodMs', min: 0 },
  shutdownGracePeriodCriticalPods: { kind: 'duration', prop: 'shutdownGracePeriodCriticalPodsMs', min: 0 },
  shutdownOnSIGTERM: { kind: 'bool' },
  staticPodPath: { kind: 'string' },
  runtime: { kind: 'enum', values: ['cri', 'process'] },
  processRuntime: { kind: 'processRuntime' },
};

export const configFieldNames = Object.keys(fields);

const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'a map' : `${typeof v} ${JSON.stringify(v)}`);

function convert(field: string, spec: FieldSpec, raw: unknown, env: NodeJS.ProcessEnv, current?: unknown): unknown {
  const fail = (want: string): never => {
    throw new ConfigError(`${field}: expected ${want}, got ${typeName(raw)}`);
  };
  const range = (n: number, unit = '') => {
    if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) {
      throw new ConfigError(`${field}: ${n}${unit} is out of range (${spec.min ?? '-inf'}${unit} to ${spec.max ?? 'inf'}${unit})`);
    }
    return n;
  };
  switch (spec.kind) {
    case 'struct': {
      if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail('a map');
      const out = { ...(current as Record<string, unknown>) };
      const known = Object.keys(spec.fields!);
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        const sub = spec.fields![k];
        if (!sub) throw new ConfigError(`${field}.${k}: unknown field (${known.join(', ')})`);
        const prop = (sub.prop as string | undefined) ?? k;
        out[prop] = convert(`${field}.${k}`, sub, v, env, out[prop]);
      }
      return out;
    }
    case 'quantity': {
      const text = typeof raw === 'number' ? String(raw) : raw;
      if (typeof text !== 'string') return fail('a quantity such as 10Mi');
      let q: number;
      try {
        q = parseQuantity(text);
      } catch {
        throw new ConfigError(`${field}: invalid quantity ${JSON.stringify(text)}`);
      }
      return range(Math.floor(q), ' bytes');
    }
    case 'string':
      return typeof raw === 'string' ? expandEnv(raw, field, env) : fail('a string');
    case 'stringList': {
      // A list in the file; a flag gives it comma-separated.
      const items = typeof raw === 'string' ? raw.split(',').map((x) => x.trim()).filter(Boolean) : raw;
      if (!Array.isArray(items) || items.some((x) => typeof x !== 'string')) return fail('a list of strings');
      return (items as string[]).map((x, i) => expandEnv(x, `${field}[${i}]`, env));
    }
    case 'ip': {
      if (typeof raw !== 'string') return fail('an IP address');
      const v = expandEnv(raw, field, env);
      if (!isIP(v)) throw new ConfigError(`${field}: ${JSON.stringify(v)} is not an IP address`);
      return v;
    }
    case 'ipList': {
      // A list in the file; a flag (or a string in the file) gives it comma-separated.
      const items = typeof raw === 'string' ? raw.split(',').map((x) => x.trim()).filter(Boolean) : raw;
      if (!Array.isArray(items) || items.some((x) => typeof x !== 'string')) return fail('a list of IP addresses');
      const ips = (items as string[]).map((x, i) => expandEnv(x, `${field}[${i}]`, env));
      const bad = ips.find((ip) => !isIP(ip));
      if (bad !== undefined) throw new ConfigError(`${field}: ${JSON.stringify(bad)} is not an IP address`);
      return ips;
    }
    case 'endpoint': {
      if (typeof raw !== 'string') return fail('a string');
      const v = expandEnv(raw, field, env);
      if (!/^unix:\/\/\/./.test(v)) throw new ConfigError(`${field}: expected unix:///path/to/socket, got ${JSON.stringify(v)}`);
      return v;
    }
    case 'int':
      return typeof raw === 'number' && Number.isInteger(raw) ? range(raw) : fail('an integer');
    case 'number':
      return typeof raw === 'number' && Number.isFinite(raw) ? range(raw) : fail('a number');
    case 'bool':
      return typeof raw === 'boolean' ? raw : fail('true or false');
    case 'enum':
      return typeof raw === 'string' && spec.values!.includes(raw) ? raw : fail(`one of ${spec.values!.join(', ')}`);
    case 'duration': {
      if (typeof raw !== 'string') return fail('a duration such as 10s or 1m');
      const ms = parseDuration(raw);
      if (ms === undefined) return fail('a duration such as 10s or 1m');
      if (spec.min !== undefined && ms < spec.min) throw new ConfigError(`${field}: ${raw} is too short (minimum ${spec.min} ms)`);
      return ms;
    }
    case 'backoff': {
      if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail('a map with initial and max');
      const o = raw as Record<string, unknown>;
      for (const k of Object.keys(o)) if (k !== 'initial' && k !== 'max') throw new ConfigError(`${field}.${k}: unknown field`);
      const initialMs = convert(`${field}.initial`, { kind: 'duration', min: 1 }, o.initial ?? '10s', env) as number;
      const maxMs = convert(`${field}.max`, { kind: 'duration', min: 1 }, o.max ?? '5m', env) as number;
      if (maxMs < initialMs) throw new ConfigError(`${field}.max: must not be below ${field}.initial`);
      return { initialMs, maxMs };
    }
    case 'quantityMap': {
      if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail('a map of resource quantities');
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (!['cpu', 'memory', 'ephemeral-storage', 'pods'].includes(k)) throw new ConfigError(`${field}.${k}: unknown resource (cpu, memory, ephemeral-storage, pods)`);
        // A string may name environment variables: the DaemonSet's capacity is its own pod's limits (downward API).
        const text = typeof v === 'number' ? String(v) : typeof v === 'string' ? expandEnv(v, `${field}.${k}`, env) : v;
        if (typeof text !== 'string') throw new ConfigError(`${field}.${k}: expected a quantity, got ${typeName(v)}`);
        let q: number;
        try {
          q = parseQuantity(text);
        } catch {
          throw new ConfigError(`${field}.${k}: invalid quantity ${JSON.stringify(text)}`);
        }
        if (q < 0) throw new ConfigError(`${field}.${k}: must not be negative`);
        out[k] = text;
      }
      return out;
    }
    case 'stringMap': {
      if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail('a map of strings');
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof v !== 'string') throw new ConfigError(`${field}.${k}: expected a string, got ${typeName(v)}`);
        out[k] = expandEnv(v, `${field}.${k}`, env);
      }
      return out;
    }
    case 'taints': {
      if (!Array.isArray(raw)) return fail('a list of taints');
      return raw.map((t, i) => {
        const f = `${field}[${i}]`;
        if (!t || typeof t !== 'object') throw new ConfigError(`${f}: expected a taint {key, value, effect}`);
        const o = t as Record<string, unknown>;
        for (const k of Object.keys(o)) if (!['key', 'value', 'effect'].includes(k)) throw new ConfigError(`${f}.${k}: unknown field`);
        if (typeof o.key !== 'string' || !o.key) throw new ConfigError(`${f}.key: expected a non-empty string`);
        if (o.value !== undefined && typeof o.value !== 'string') throw new ConfigError(`${f}.value: expected a string`);
        if (!['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(o.effect as string)) throw new ConfigError(`${f}.effect: expected NoSchedule, PreferNoSchedule or NoExecute`);
        return { key: o.key, value: o.value as string | undefined, effect: o.effect as Taint['effect'] };
      });
    }
    case 'processRuntime': {
      const known = Object.keys(defaultConfig().processRuntime);
      if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail(`a map with ${known.join(', ')}`);
      const out = { ...defaultConfig().processRuntime };
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (!(k in out)) throw new ConfigError(`${field}.${k}: unknown field (${known.join(', ')})`);
        if (typeof v !== 'string') throw new ConfigError(`${field}.${k}: expected a string, got ${typeName(v)}`);
        out[k as keyof typeof out] = expandEnv(v, `${field}.${k}`, env);
      }
      return out;
    }
  }
}

/** Applies a map of file-style fields (as in the YAML) over `base`. */
export function applyFields(base: NodeletConfig, doc: Record<string, unknown>, env: NodeJS.ProcessEnv): NodeletConfig {
  const out = { ...base } as Record<string, unknown>;
  for (const [key, raw] of Object.entries(doc)) {
    const spec = fields[key];
    if (!spec) throw new ConfigError(`unknown field "${key}"`);
    out[spec.prop ?? key] = convert(key, spec, raw, env, out[spec.prop ?? key]);
  }
  return out as unknown as NodeletConfig;
}

/** Reads and validates a NodeletConfiguration file. */
export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): NodeletConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${path}: invalid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`${path}: expected a NodeletConfiguration document`);
  const { apiVersion, kind, ...rest } = doc as Record<string, unknown>;
  if (apiVersion !== 'nodelet.io/v1alpha1') throw new ConfigError(`${path}: apiVersion: expected nodelet.io/v1alpha1, got ${typeName(apiVersion)}`);
  if (kind !== 'NodeletConfiguration') throw new ConfigError(`${path}: kind: expected NodeletConfiguration, got ${typeName(kind)}`);
  try {
    return applyFields(defaultConfig(), rest, env);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${path}: ${err.message}`);
    throw err;
  }
}
