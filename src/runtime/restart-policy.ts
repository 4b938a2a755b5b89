// Whether a container that exited is started again: its own restartPolicy and restartPolicyRules
// (matched on the exit code) when it has them, else the pod's restartPolicy (the kubelet's
// ContainerShouldRestart, with ContainerRestartRules on as in Kubernetes 1.37).
import type { V1Container, V1PodSpec } from '@kubernetes/client-node';

interface RestartRule {
  action?: string;
  exitCodes?: { operator?: string; values?: number[] };
}

type WithRules = V1Container & { restartPolicyRules?: RestartRule[] };

/** The first rule that matches the exit code, if any. */
export function matchingRestartRule(container: V1Container, exitCode: number): RestartRule | undefined {
  for (const rule of (container as WithRules).restartPolicyRules ?? []) {
    if (!rule.exitCodes) continue;
    const hit = (rule.exitCodes.values ?? []).includes(exitCode);
    if ((rule.exitCodes.operator === 'In' && hit) || (rule.exitCodes.operator === 'NotIn' && !hit)) return rule;
  }
  return undefined;
}

export function containerShouldRestart(container: V1Container, spec: V1PodSpec | undefined, exitCode: number): boolean {
  if (container.restartPolicy) {
    const rule = matchingRestartRule(container, exitCode);
    if (rule?.action === 'Restart') return true;
    switch (container.restartPolicy) {
      case 'Always':
        return true;
      case 'OnFailure':
        return exitCode !== 0;
      case 'Never':
        return false;
    }
  }
  switch (spec?.restartPolicy ?? 'Always') {
    case 'OnFailure':
      return exitCode !== 0;
    case 'Never':
      return false;
    default:
      return true;
  }
}
