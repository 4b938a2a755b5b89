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
  // --- what this machine lacks (the kubelet fails these too) ---
  { cause: 'the kernel here has no dummy network links (ip link add ... type dummy: Operation not supported)', seen: /dummy1[\s\S]*Operation not supported/ },

  // --- what nodelet does not do yet, by what was seen ---
  { cause: 'volumes (issue 11)', seen: /volume mounts are not supported by nodelet/ },
  {
    cause: 'the node API did not answer (kubectl logs/exec)',
    seen: /an error on the server \("unknown"\) has prevented the request|server gave HTTP response to HTTPS client|error dialing backend|Failed to open websocket/i,
  },
  { cause: 'a completed init container is reported not ready (the kubelet reports it ready)', seen: /init container \S+ should be in Ready status/ },
  { cause: 'readiness gates: Ready ignores spec.readinessGates', seen: /Ready condition to be false initially/ },
  { cause: 'a hostNetwork pod\'s status.podIP env var was empty (fixed in 8b064d7, after the run at 380cee5)', seen: /POD_IP: parameter not set or null/ },
  { cause: 'a subPath made in an emptyDir lacked the volume\'s 0777 (fixed in 8b064d7, after the run at 380cee5)', seen: /perms of file \\?"\/test-volume\\?": -rwxrwxrwx" in container output/ },
  { cause: 'privileged containers run unprivileged (allowPrivileged is off by default; the kubelet allows them)', seen: /RTNETLINK answers: Operation not permitted/ },
  { cause: 'runAsNonRoot was not enforced (fixed in c2de555, after the run at 380cee5)', spec: /runAsNonRoot should not run/ },
  { cause: 'the process runtime ended output without a newline with a full record (fixed after the run at 380cee5)', spec: /FallbackToLogsOnError is set/ },
  { cause: 'no_new_privs (allowPrivilegeEscalation: false) not honoured by the process runtime (issue 15)', seen: /alpine-nnp-/ },
  { cause: 'the process runtime shows supplementary groups and their files\' group as 65534 (its user namespace maps only the container\'s uid and gid)', seen: /owner GID of "[^"]*": 65534/ },

  // --- and by what the spec tests, where its failure says no more than a timeout ---
  { cause: 'probes (issue 13)', spec: /\bProbing (restartable init )?container\b/ },
  { cause: 'lifecycle hooks (issue 13)', spec: /Lifecycle Hook|Lifecycle Sleep Hook|Lifecycle sleep action/ },
  { cause: 'sidecar containers (issue 13)', spec: /restartable init container|Restartable Init Container/i },
  { cause: 'activeDeadlineSeconds (issue 13)', spec: /activeDeadlineSeconds/ },
  { cause: 'ephemeral containers (not implemented)', spec: /Ephemeral Containers/ },
  { cause: 'container-level restartPolicy and restartPolicyRules (beta, not implemented)', spec: /Container Restart Rules/ },
  { cause: 'sysctls not applied by the process runtime (issue 15)', spec: /Sysctls \[LinuxOnly\] should support sysctls/ },
  { cause: 'sysctls not checked at admission (the kubelet rejects unsafe ones: SysctlForbidden)', spec: /unsafe, but not explicitly enabled sysctls/ },
  { cause: 'the pod\'s OS not checked at admission (the kubelet rejects it: PodOSNotSupported)', spec: /PodOSRejection/ },
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
