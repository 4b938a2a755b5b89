// Lifecycle hooks (postStart, preStop) as the kubelet's handler runner runs them: exec through CRI
// ExecSync (no timeout of its own), httpGet to the pod (any HTTP answer will do: only a request
// that gets none fails), sleep. A failure is a message in the kubelet's words, which becomes the
// FailedPostStartHook / FailedPreStopHook event and, for postStart, the container's waiting message.
import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import { CriError } from '../cri/errors.js';
import type { RunInContainer } from '../prober/exec.js';
import { httpGetRequest, httpProbe } from '../prober/http.js';

/** The kubelet's User-Agent for hook requests. */
export const LIFECYCLE_USER_AGENT = 'kube-lifecycle/1.37';

export interface HookDeps {
  runInContainer: RunInContainer;
  /** The pod's IP, for an httpGet hook without a host. */
  podIP(): Promise<string | undefined>;
  sleep(ms: number): Promise<void>;
}

/** How the kubelet names a pod in messages (format.Pod). */
export function formatPod(pod: V1Pod): string {
  const { name = '', namespace = '', uid = '' } = pod.metadata ?? {};
  return `${name}_${namespace}(${uid})`;
}

/** Go's %v of a []string. */
const goList = (xs: string[]) => `[${xs.join(' ')}]`;

/**
 * Runs the hook; undefined when it succeeded, else the failure message. `signal` ends a sleep
 * early (the grace period ran out), which is then a failure, as the kubelet counts it.
 */
export async function runHandler(deps: HookDeps, pod: V1Pod, container: V1Container, containerID: string, handler: V1LifecycleHandler, signal?: AbortSignal): Promise<string | undefined> {
  const who = `for Container "${container.name}" in Pod "${formatPod(pod)}"`;
  if (handler.exec) {
    const cmd = handler.exec.command ?? [];
    try {
      const r = await deps.runInContainer(containerID, cmd, 0);
      if (r.exitCode === 0) return undefined;
      const output = Buffer.concat([Buffer.from(r.stdout), Buffer.from(r.stderr)]).toString('utf8');
      const err = `command '${cmd.join(' ')}' exited with ${r.exitCode}: ${Buffer.from(r.stderr).toString('utf8')}`;
      return `Exec lifecycle hook (${goList(cmd)}) ${who} failed - error: ${err}, message: ${JSON.stringify(output)}`;
    } catch (e) {
      const err = e instanceof CriError ? e.message : (e as Error).message;
      return `Exec lifecycle hook (${goList(cmd)}) ${who} failed - error: ${err}, message: ""`;
    }
  }
  if (handler.httpGet) {
    const fail = (err: string) => `HTTP lifecycle hook (${handler.httpGet!.path ?? ''}) ${who} failed - error: ${err}`;
    let host = handler.httpGet.host ?? '';
    if (!host) {
      const ip = await deps.podIP();
      if (!ip) return fail('failed to find networking container: the pod has no IP');
      host = ip;
    }
    let req;
    try {
      req = httpGetRequest({ ...handler.httpGet, host }, container, host, LIFECYCLE_USER_AGENT);
    } catch (e) {
      return fail((e as Error).message);
    }
    // No deadline of its own (the kubelet's client has none); a preStop's grace period bounds it.
    const a = await httpProbe(req, 24 * 3600_000, signal);
    // Any answer is a success: only a request that got none fails.
    return a.result === 'failure' && !a.output.startsWith('HTTP probe failed with statuscode') ? fail(a.output) : undefined;
  }
  if (handler.sleep) {
    const seconds = handler.sleep.seconds;
    const ended = await Promise.race([deps.sleep(seconds * 1000).then(() => 'done' as const), aborted(signal)]);
    return ended === 'done' ? undefined : `Sleep lifecycle hook (${seconds}) ${who} failed - error: container terminated before sleep hook finished`;
  }
  return `Cannot run handler: invalid handler: ${JSON.stringify(handler)}`;
}

function aborted(signal?: AbortSignal): Promise<'aborted'> {
  return new Promise((resolve) => {
    if (!signal) return;
    if (signal.aborted) return resolve('aborted');
    signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
}
