// The pod's DNS, as the kubelet's DNS configurer chooses it from dnsPolicy: the cluster's DNS
// (ClusterFirst: the cluster's servers, the namespace's search path, ndots:5), the node's own
// resolv.conf (Default, and ClusterFirst on the host network), or nothing but the pod's dnsConfig
// (None); the pod's dnsConfig is merged in, within the resolver's limits.
import type { V1Pod } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';

export interface DnsConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export interface DnsSettings {
  /** The cluster DNS servers (the kubelet's clusterDNS); none: ClusterFirst falls back to Default. */
  clusterDNS: string[];
  clusterDomain: string;
  /** The node's resolv.conf ('' for none). */
  resolvConf: string;
}

const MAX_NAMESERVERS = 3;
const MAX_SEARCHES = 32;
const MAX_SEARCH_LINE = 2048;

/** nameserver, search (the last line wins) and options (merged by name) of a resolv.conf. */
export function parseResolvConf(text: string): DnsConfig {
  const out: DnsConfig = { servers: [], searches: [], options: [] };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const [key, ...rest] = line.split(/\s+/);
    if (key === 'nameserver' && rest[0]) out.servers.push(rest[0]);
    else if (key === 'search') out.searches = rest.map((s) => s.replace(/\.$/, '')).filter((s) => s && s !== '.');
    else if (key === 'options') out.options = mergeOptions(out.options, rest);
  }
  return out;
}

function mergeOptions(base: string[], more: string[]): string[] {
  const byName = new Map<string, string>();
  for (const o of [...base, ...more]) byName.set(o.split(':')[0]!, o);
  return [...byName.values()];
}

const unique = (xs: string[]) => [...new Set(xs)];

export interface PodDns {
  /** What the runtime is given (undefined: the runtime's own default, which is the node's file). */
  config?: DnsConfig;
  /** The kubelet's MissingClusterDNS warning, when ClusterFirst had no cluster DNS to use. */
  missingClusterDNS?: string;
}

function hostConfig(s: DnsSettings): DnsConfig {
  if (!s.resolvConf) return { servers: [], searches: [], options: [] };
  try {
    return parseResolvConf(readFileSync(s.resolvConf, 'utf8'));
  } catch {
    return { servers: [], searches: [], options: [] };
  }
}

export function podDns(pod: V1Pod, s: DnsSettings, host: () => DnsConfig = () => hostConfig(s)): PodDns {
  const spec = pod.spec ?? { containers: [] };
  const policy = spec.dnsPolicy ?? 'ClusterFirst';
  let base: DnsConfig;
  let missingClusterDNS: string | undefined;
  const cluster = policy === 'ClusterFirstWithHostNet' || (policy === 'ClusterFirst' && !spec.hostNetwork);
  if (policy === 'None') base = { servers: [], searches: [], options: [] };
  else if (cluster && s.clusterDNS.length > 0) {
    const ns = pod.metadata?.namespace ?? '';
    const d = s.clusterDomain;
    const searches = d ? [`${ns}.svc.${d}`, `svc.${d}`, d, ...host().searches] : host().searches;
    base = { servers: [...s.clusterDNS], searches: unique(searches), options: ['ndots:5'] };
  } else {
    if (cluster) {
      missingClusterDNS = `pod: "${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`;
    }
    // The node's file as it is: the runtime's own default, unless the pod adds to it.
    if (!spec.dnsConfig) return { missingClusterDNS };
    base = host();
  }
  const extra = spec.dnsConfig;
  const merged: DnsConfig = {
    servers: unique([...base.servers, ...(extra?.nameservers ?? [])]).slice(0, MAX_NAMESERVERS),
    searches: unique([...base.searches, ...(extra?.searches ?? [])]).filter((x) => x.length <= 253).slice(0, MAX_SEARCHES),
    options: mergeOptions(base.options, (extra?.options ?? []).map((o) => (o.value ? `${o.name}:${o.value}` : (o.name ?? '')))),
  };
  while (merged.searches.join(' ').length > MAX_SEARCH_LINE) merged.searches.pop();
  return { config: merged, missingClusterDNS };
}
