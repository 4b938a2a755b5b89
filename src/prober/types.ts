// What one probe attempt gives, in the kubelet's terms (pkg/probe): a result, the output shown in
// events, and an error when the probe could not be run at all (its result is then thrown away).
export type ProbeType = 'Liveness' | 'Readiness' | 'Startup';

export type AttemptResult = 'success' | 'warning' | 'failure' | 'unknown';

export interface Attempt {
  result: AttemptResult;
  output: string;
  error?: Error;
}

/** The kubelet reads at most this much of a probe's output or response body. */
export const MAX_OUTPUT_BYTES = 10 * 1024;

/** The kubelet's User-Agent for probes and hooks: kube-probe/<major>.<minor> of the version it follows. */
export const PROBE_USER_AGENT = 'kube-probe/1.37';

/** A network error as Go's net package words it, which is what users see from the kubelet. */
export function dialErrorText(err: NodeJS.ErrnoException, addr: string): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return `dial tcp ${addr}: connect: connection refused`;
    case 'EHOSTUNREACH':
      return `dial tcp ${addr}: connect: no route to host`;
    case 'ENETUNREACH':
      return `dial tcp ${addr}: connect: network is unreachable`;
    case 'ETIMEDOUT':
      return `dial tcp ${addr}: i/o timeout`;
    case 'ECONNRESET':
      return `read tcp ${addr}: read: connection reset by peer`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `dial tcp: lookup ${addr.replace(/:\d+$/, '')}: no such host`;
    default:
      return err.message;
  }
}

/** host:port, with an IPv6 host in brackets. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
