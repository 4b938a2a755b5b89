// Command-line flags of `nodelet run`: each one sets a field of the config file, and wins over it.
import { applyFields, ConfigError, defaultConfig, loadConfigFile, type NodeletConfig } from '../config/config.js';
import { finalizeConfig } from '../config/finalize.js';

export class UsageError extends Error {}

type FlagType = 'string' | 'int' | 'number' | 'bool' | 'duration';

/** flag -> [config file field, type, help] */
export const runFlags: Record<string, [string, FlagType, string]> = {
  'node-name': ['nodeName', 'string', 'the node this agent serves (pods with spec.nodeName=NAME)'],
  kubeconfig: ['kubeconfig', 'string', 'kubeconfig of the API server (default: in-cluster service account); with bootstrapping, written once the client certificate is issued'],
  'bootstrap-kubeconfig': ['bootstrapKubeconfig', 'string', "kubeconfig whose credentials ask for the node's client certificate (TLS bootstrapping)"],
  'bootstrap-in-cluster': ['bootstrapInCluster', 'bool', "TLS bootstrapping with the pod's service account as the bootstrap credentials"],
  'rotate-certificates': ['rotateCertificates', 'bool', 'renew the client certificate at 70-90% of its life (default false)'],
  'oom-score-adj': ['oomScoreAdj', 'int', "the agent's own OOM score adjustment, -1000..1000 (default -999)"],
  'runtime-endpoint': ['runtimeEndpoint', 'string', 'CRI endpoint, unix:///path/to/socket'],
  'pod-log-root': ['podLogRoot', 'string', 'root of container logs (default /var/log/pods)'],
  'container-logs-dir': ['containerLogsDir', 'string', "the legacy links to containers' logs, for logging agents (default /var/log/containers; '' none)"],
  'container-log-max-size': ['containerLogMaxSize', 'string', 'a container log is rotated at this size (default 10Mi)'],
  'container-log-max-files': ['containerLogMaxFiles', 'int', 'log files kept per container, the current one included (default 5)'],
  'container-log-monitor-interval': ['containerLogMonitorInterval', 'duration', 'how often container logs are checked for rotation (default 10s)'],
  'root-dir': ['rootDir', 'string', "the agent's state: pods' volumes and files (default /var/lib/nodelet)"],
  'cluster-domain': ['clusterDomain', 'string', "the cluster's DNS domain, e.g. cluster.local"],
  'cluster-dns': ['clusterDNS', 'string', 'cluster DNS server IPs for dnsPolicy ClusterFirst, comma-separated'],
  'allowed-unsafe-sysctls': ['allowedUnsafeSysctls', 'string', 'unsafe sysctls (or prefixes ending in *) pods may set, comma-separated'],
  'resolv-conf': ['resolvConf', 'string', "the node's resolv.conf, for dnsPolicy Default (default /etc/resolv.conf)"],
  'node-ip': ['nodeIP', 'string', "the node's IP (default: first non-loopback IPv4)"],
  address: ['address', 'string', 'address of the node API (default 127.0.0.1)'],
  port: ['port', 'int', 'port of the node API, HTTPS (default 10250; 0 picks one)'],
  'tls-cert-file': ['tlsCertFile', 'string', "the node API's serving certificate (PEM)"],
  'tls-private-key-file': ['tlsPrivateKeyFile', 'string', "the node API's serving key (PEM)"],
  'cert-dir': ['certDir', 'string', 'where made or issued certificates are kept (default <root-dir>/pki)'],
  'rotate-server-certificates': ['serverTLSBootstrap', 'bool', 'request the serving certificate through a CSR to kubernetes.io/kubelet-serving'],
  'client-ca-file': ['authentication.x509.clientCAFile', 'string', 'CA bundle that client certificates of node API callers are verified with'],
  'anonymous-auth': ['authentication.anonymous.enabled', 'bool', 'let anonymous callers reach the node API (default false)'],
  'authentication-token-webhook': ['authentication.webhook.enabled', 'bool', 'bearer tokens checked with a TokenReview (default true)'],
  'authorization-mode': ['authorization.mode', 'string', 'Webhook (SubjectAccessReview, default) or AlwaysAllow'],
  'healthz-port': ['healthzPort', 'int', 'plain-HTTP /healthz port on --healthz-bind-address (default 10248; 0 off)'],
  'healthz-bind-address': ['healthzBindAddress', 'string', 'address of the healthz port (default 127.0.0.1)'],
  'read-only-port': ['readOnlyPort', 'int', 'unauthenticated plain-HTTP /healthz, /pods, /metrics (default 0: off)'],
  'resync-interval': ['syncFrequency', 'duration', 'pod resync period (default 1m)'],
  'informer-resync': ['informerResync', 'duration', 'pod source resync period (default 1m)'],
  'pleg-relist': ['plegRelistPeriod', 'duration', 'PLEG relist period (default 1s)'],
  'evented-pleg-relist': ['eventedPlegRelistPeriod', 'duration', "PLEG relist period while the runtime streams container events (default 5m; 0: do not use them)"],
  'max-concurrent-syncs': ['maxConcurrentSyncs', 'int', 'syncs running at once (default 16)'],
  'max-pods': ['maxPods', 'int', 'pods admitted on the node (default 110)'],
  'cpu-cfs-quota': ['cpuCFSQuota', 'bool', 'enforce CPU limits with CFS quota (default true)'],
  'cgroups-per-qos': ['cgroupsPerQOS', 'bool', 'the QoS cgroup hierarchy: kubepods, burstable, besteffort, a cgroup per pod (default true)'],
  'cgroup-driver': ['cgroupDriver', 'string', 'how cgroups are written: cgroupfs (the one supported)'],
  'cgroup-root': ['cgroupRoot', 'string', 'the cgroup kubepods is made in; it must exist (default /)'],
  'enforce-node-allocatable': ['enforceNodeAllocatable', 'string', 'pods (default: kubepods limited to allocatable) or none, comma-separated'],
  'pod-max-pids': ['podPidsLimit', 'int', "each pod's pids limit (default -1: unbounded)"],
  'allow-privileged': ['allowPrivileged', 'bool', 'let securityContext.privileged take effect (default false)'],
  'seccomp-default': ['seccompDefault', 'bool', 'RuntimeDefault seccomp for containers that name no profile (default false)'],
  'node-status-update-frequency': ['nodeStatusUpdateFrequency', 'duration', 'how often node status is computed (default 10s)'],
  'static-pod-path': ['staticPodPath', 'string', 'a directory of static pod manifests, watched'],
  'pod-manifest-path': ['staticPodPath', 'string', "the kubelet's name of --static-pod-path"],
  'shutdown-grace-period': ['shutdownGracePeriod', 'duration', 'graceful node shutdown: the time pods get to end when the node goes down (default 0: off)'],
  'shutdown-grace-period-critical-pods': ['shutdownGracePeriodCriticalPods', 'duration', 'the last part of shutdownGracePeriod, for critical pods (default 0)'],
  'shutdown-on-sigterm': ['shutdownOnSIGTERM', 'bool', "the agent's SIGTERM is the node going down: pods end first (needs --shutdown-grace-period)"],
  'eviction-max-pod-grace-period': ['evictionMaxPodGracePeriod', 'int', 'the longest grace period (seconds) of a pod evicted for a soft threshold (default 0)'],
  'eviction-pressure-transition-period': ['evictionPressureTransitionPeriod', 'duration', 'a pressure condition stays True this long after it was last observed (default 5m)'],
  runtime: ['runtime', 'string', 'cri (a runtime at --runtime-endpoint) or process (nodelet\'s own)'],
  'log-level': ['logLevel', 'string', 'error|warn|info|debug (default info)'],
  'log-format': ['logFormat', 'string', 'json|text (default: text on a terminal, else json)'],
};

export function flagsHelp(): string {
  const line = (flag: string, arg: string, help: string) => `  --${`${flag} ${arg}`.padEnd(38)} ${help}`;
  return [
    line('config', 'FILE', 'the NodeletConfiguration file (flags override it)'),
    ...Object.entries(runFlags).map(([flag, [, type, help]]) => line(flag, type.toUpperCase(), help)),
  ].join('\n');
}

function typed(flag: string, type: FlagType, value: string): unknown {
  switch (type) {
    case 'int':
    case 'number':
      if (!/^-?\d+(\.\d+)?$/.test(value)) throw new UsageError(`--${flag}: expected a number, got ${JSON.stringify(value)}`);
      return Number(value);
    case 'bool':
      if (value !== 'true' && value !== 'false') throw new UsageError(`--${flag}: expected true or false, got ${JSON.stringify(value)}`);
      return value === 'true';
    default:
      return value;
  }
}

/** Parses `run`'s arguments: --config FILE, then flags over it. Throws UsageError or ConfigError. */
export function parseRunArgs(args: string[], env: NodeJS.ProcessEnv = process.env): NodeletConfig {
  const values: Array<[string, string]> = [];
  let configFile: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument ${JSON.stringify(a)} (see nodelet --help)`);
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    const value = eq > 0 ? a.slice(eq + 1) : args[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    if (name === 'config') configFile = value;
    else if (runFlags[name]) values.push([name, value]);
    else throw new UsageError(`unknown flag --${name} (see nodelet --help)`);
  }
  let config = configFile ? loadConfigFile(configFile, env) : defaultConfig();
  for (const [flag, value] of values) {
    const [field, type] = runFlags[flag]!;
    try {
      // A dotted field ("authentication.x509.clientCAFile") is a nested map in the file.
      const doc = field.split('.').reduceRight<unknown>((inner, key) => ({ [key]: inner }), typed(flag, type, value)) as Record<string, unknown>;
      config = applyFields(config, doc, env);
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(`--${flag}: ${err.message.replace(/^[\w.[\]]+: /, '')}`);
      throw err;
    }
  }
  return finalizeConfig(config);
}
