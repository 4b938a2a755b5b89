// Why a conformance spec failed, in a few words: the first rule whose pattern is found in the
// spec's evidence wins. Evidence is what the run left: the failure's message and the spec's output
// (its steps, and the pod statuses and events the framework prints when a spec fails), so a rule
// names what was seen (a reason, an event, an error) before it falls back on what a spec tests.
// A failure no rule explains is reported as "unexplained" with its message, to be looked at.
import type { SpecOutcome } from './report.js';

export interface CauseRule {
  cause: string;
  /** Looked for in the failure message and the spec's output. */
  seen?: RegExp;
  /** Looked for in the spec's text. */
  spec?: RegExp;
}

export const RULES: CauseRule[] = [
  // --- what the environment lacks (the kubelet fails these too) ---
  { cause: 'the kernel here has no dummy network links (ip link add ... type dummy)', seen: /dummy1[\s\S]*(Operation not supported|Unknown device type|not supported)|privileged container should be able to create dummy device/ },

  // --- what nodelet does not do yet ---
  { cause: 'volumes (issue 11)', seen: /volume mounts are not supported by nodelet/ },
  { cause: 'no node API: kubectl logs/exec/attach (issue 12)', seen: /an error on the server \("unknown"\) has prevented the request from succeeding|server gave HTTP response to HTTPS client|error dialing backend|Unable to (retrieve|get) (container )?logs|failed to get logs/i },
  { cause: 'probes (issue 13)', spec: /\bProbing container\b|\bprobe\b/i },
  { cause: 'lifecycle hooks (issue 13)', spec: /Lifecycle Hook|lifecycle hook|PreStop|PostStart/i },
  { cause: 'sidecar containers (issue 13)', spec: /restartable init container|sidecar/i },
  { cause: 'activeDeadlineSeconds (issue 13)', spec: /activeDeadlineSeconds/ },
  { cause: '/etc/hosts and hostAliases (issue 11)', spec: /etc.hosts|hostAliases|host aliases/i },
  { cause: 'termination messages (issue 11)', spec: /termination message/i },
];

/** The first matching rule's cause, or "unexplained: <message>". */
export function classify(o: Pick<SpecOutcome, 'spec' | 'message' | 'output' | 'outcome'>, rules: CauseRule[] = RULES): string {
  const evidence = `${o.message}\n${o.output}`;
  for (const r of rules) {
    if (r.seen && r.seen.test(evidence)) return r.cause;
  }
  for (const r of rules) {
    if (r.spec && r.spec.test(o.spec)) return r.cause;
  }
  if (o.outcome === 'not run') return 'not run (the suite timed out or ended first)';
  if (o.outcome === 'interrupted') return `interrupted: ${o.message.slice(0, 120)}`;
  return `unexplained: ${o.message.slice(0, 120)}`;
}
