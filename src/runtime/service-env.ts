// The environment variables of Services a container gets (the kubelet's service links, and the
// Docker-link variables it keeps for compatibility): the kubernetes Service of the default
// namespace always, and, unless enableServiceLinks is false, every Service of the pod's namespace
// that has a cluster IP (a same-named one there wins over the default namespace's).
import type { V1Pod, V1Service } from '@kubernetes/client-node';

const envName = (s: string) => s.toUpperCase().replace(/-/g, '_');

function hasClusterIP(s: V1Service): boolean {
  const ip = s.spec?.clusterIP;
  return ip !== undefined && ip !== '' && ip !== 'None';
}

/** Which Services a pod's environment is made of, by name. */
export function servicesForPod(pod: V1Pod, inNamespace: V1Service[], inDefault: V1Service[]): V1Service[] {
  const byName = new Map<string, V1Service>();
  if (pod.spec?.enableServiceLinks !== false) for (const s of inNamespace) if (hasClusterIP(s)) byName.set(s.metadata?.name ?? '', s);
  // The API server's Service (the one in-cluster clients find it by), whatever enableServiceLinks says.
  const master = inDefault.find((s) => s.metadata?.name === 'kubernetes');
  if (master && hasClusterIP(master) && !byName.has('kubernetes')) byName.set('kubernetes', master);
  return [...byName.values()];
}

/** FOO_SERVICE_HOST, FOO_SERVICE_PORT(_NAME), FOO_PORT, FOO_PORT_<n>_<PROTO>(_PROTO|_PORT|_ADDR). */
export function serviceEnvVars(services: V1Service[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of services) {
    const name = envName(s.metadata?.name ?? '');
    const ip = s.spec?.clusterIP ?? '';
    const ports = s.spec?.ports ?? [];
    out.set(`${name}_SERVICE_HOST`, ip);
    if (ports.length === 0) continue;
    out.set(`${name}_SERVICE_PORT`, String(ports[0]!.port));
    for (const p of ports) if (p.name) out.set(`${name}_SERVICE_PORT_${envName(p.name)}`, String(p.port));
    const proto = (p: (typeof ports)[number]) => (p.protocol ?? 'TCP').toLowerCase();
    // An IPv6 cluster IP goes in brackets in a URL.
    const host = ip.includes(':') ? `[${ip}]` : ip;
    out.set(`${name}_PORT`, `${proto(ports[0]!)}://${host}:${ports[0]!.port}`);
    for (const p of ports) {
      const prefix = `${name}_PORT_${p.port}_${(p.protocol ?? 'TCP').toUpperCase()}`;
      out.set(prefix, `${proto(p)}://${host}:${p.port}`);
      out.set(`${prefix}_PROTO`, proto(p));
      out.set(`${prefix}_PORT`, String(p.port));
      out.set(`${prefix}_ADDR`, ip);
    }
  }
  return out;
}
