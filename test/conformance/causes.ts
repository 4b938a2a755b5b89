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
  /** Only for these agents' failures (all agents when absent). */
  agents?: string[];
}

export const RULES: CauseRule[] = [
  // --- what this machine lacks (the kubelet fails these too) ---
  { cause: 'the kernel here has no dummy network links (ip link add ... type dummy: Operation not supported)', seen: /dummy1[\s\S]*Operation not supported/ },
  { cause: 'the spec pulls an image from a registry on the Internet, which this machine cannot reach (an image not built offline, or pulled with Always)', seen: /dial tcp: lookup \S+ on \S+: no such host/ },
  { cause: 'the spec updates a container to an image it pulls with Always from a registry on the Internet, which this machine cannot reach', spec: /has its image updated should successfully restart/ },
  { cause: 'the spec reads a log under /var/log/pods; the test agents keep pod logs in the cluster\'s directory', spec: /should print log to correct cri log path/ },
  { cause: 'the harness: an earlier agent\'s run left the RuntimeClass test-handler (deleted before each agent since this was seen)', seen: /runtimeclasses\.node\.k8s\.io "test-handler" already exists/ },
  { cause: 'the harness: the agent had no read-only port 10255, where the suite reads /stats/summary and /metrics/cadvisor (it has since this was seen)', seen: /(127\.0\.0\.1:0|localhost:10255)\/(stats\/summary|metrics\/cadvisor)": dial tcp/ },

  // --- the node e2e suite: what nodelet does not do yet, by what was seen ---
  { cause: 'the summary API has no kubelet, runtime, pods and misc system containers yet', seen: /missing expected element (kubelet|runtime|pods|misc)/, agents: ['nodelet', 'process'] },
  { cause: 'no device plugin manager yet (the registration socket a device plugin dials; issue 37)', spec: /Device Plugin Failures/, agents: ['nodelet', 'process'] },
  { cause: '/metrics/cadvisor does not serve the container metrics cAdvisor does yet', spec: /when querying \/metrics\/cadvisor should report container metrics/, agents: ['nodelet', 'process'] },

  // --- what nodelet does not do yet, by what was seen ---
  { cause: 'privileged containers run unprivileged (allowPrivileged is off by default; the kubelet allows them)', seen: /RTNETLINK answers: Operation not permitted/ },
  { cause: 'an emptyDir on tmpfs lost its sticky bit (1777) to a chmod (fixed after the run at 766f172)', seen: /mode of file \\?"\/test-volume\\?": dgtrwxrwxrwx" in container output/ },
  { cause: 'sysctl names with slashes went to the runtime as written, which the process runtime refused (the agent sends them with dots, as the kubelet, since b0adb17)', spec: /sysctls with slashes as separator/, agents: ['process'] },
  // Under bubblewrap (before its launcher, 7f64d32) every container had no_new_privs: a setuid helper could not escalate, asked or not.
  { cause: 'the process runtime could not allow privilege escalation: bubblewrap set no_new_privs on every container (its launcher, since 7f64d32, sets it only when asked)', seen: /alpine-nnp-/, agents: ['process'] },
  {
    cause: 'the process runtime showed supplementary groups and their files\' group (or an owner it did not map) as 65534: under bubblewrap its user namespace mapped only the container\'s uid and gid (its launcher, since 7f64d32, makes none)',
    seen: /owner [GU]ID of "[^"]*": 65534/,
  },
];

/** The first matching rule's cause, or "unexplained: <message>". */
export function classify(o: Pick<SpecOutcome, 'spec' | 'message' | 'output' | 'outcome'>, rules: CauseRule[] = RULES, agent?: string): string {
  const evidence = `${o.message}\n${o.output}`;
  rules = rules.filter((r) => !r.agents || (agent !== undefined && r.agents.includes(agent)));
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
