// The runtime manager's side of lifecycle hooks: postStart right after a container starts (a
// failure kills it, and its waiting reason is PostStartHookError), and preStop before the stop
// signal, within the grace period, which it uses up (the kubelet's executePreStopHook).
import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import { containerRef, EventReasons } from '../kube/object-ref.js';
import { podFields } from '../observability/logger.js';
import { runHandler, type HookDeps } from '../lifecycle/handlers.js';
import type { RuntimeService } from '../cri/services.js';
import { onAbort, raceAbort } from '../util/abort.js';
import type { RuntimeManagerDeps } from './deps.js';

/** A command run in a container through CRI ExecSync, as hooks and exec probes run theirs. */
export function execInContainer(runtime: Pick<RuntimeService, 'execSync'>): HookDeps['runInContainer'] {
  return async (id, cmd, timeout) => {
    const r = await runtime.execSync(id, cmd, timeout);
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exit_code };
  };
}

function hookDeps(deps: RuntimeManagerDeps, podIP: () => Promise<string | undefined>): HookDeps {
  return {
    runInContainer: execInContainer(deps.runtime),
    podIP,
    sleep: (ms) => deps.clock.sleep(ms),
  };
}

/** The pod's IP for a hook: the API status's, else its ready sandbox's. */
async function podIPOf(deps: RuntimeManagerDeps, pod: V1Pod): Promise<string | undefined> {
  if (pod.status?.podIP) return pod.status.podIP;
  const [sb] = await deps.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': pod.metadata?.uid ?? '' }, state: { state: 'SANDBOX_READY' } });
  if (!sb) return undefined;
  return (await deps.runtime.podSandboxStatus(sb.id)).status?.network?.ip || undefined;
}

/** Runs the postStart hook; the failure message (the container's waiting message) if it failed. */
export async function runPostStartHook(deps: RuntimeManagerDeps, pod: V1Pod, container: V1Container, containerID: string, podIPs: string[]): Promise<string | undefined> {
  const handler = container.lifecycle?.postStart;
  if (!handler) return undefined;
  const msg = await runHandler(hookDeps(deps, async () => podIPs[0] ?? (await podIPOf(deps, pod))), pod, container, containerID, handler);
  if (msg === undefined) return undefined;
  deps.logger.warn('postStart hook failed', { ...podFields(pod), container: container.name, error: msg });
  // As the kubelet: the event does not carry the hook's output (it may hold secrets); the status does.
  deps.recorder.event(containerRef(pod, container.name), 'Warning', EventReasons.FailedPostStartHook, 'PostStartHook failed');
  return msg;
}

/**
 * Runs the preStop hook for at most `graceSeconds`; the whole seconds it took (what is left of
 * the grace period goes to the stop signal).
 */
export async function runPreStopHook(
  deps: RuntimeManagerDeps,
  pod: V1Pod,
  container: V1Container,
  handler: V1LifecycleHandler,
  containerID: string,
  graceSeconds: number,
  cutShort?: AbortSignal,
): Promise<number> {
  const start = deps.clock.now();
  if (cutShort?.aborted) return 0;
  const abort = new AbortController();
  // A shorter grace period ends the hook as the end of this one would.
  const stopListening = onAbort(cutShort, () => abort.abort());
  const hook = runHandler(hookDeps(deps, () => podIPOf(deps, pod)), pod, container, containerID, handler, abort.signal).then((msg) => {
    if (msg === undefined) return;
    deps.logger.warn('preStop hook failed', { ...podFields(pod), container: container.name, error: msg });
    deps.recorder.event(containerRef(pod, container.name), 'Warning', EventReasons.FailedPreStopHook, 'PreStopHook failed');
  });
  let timer: { cancel(): void } | undefined;
  const outOfTime = new Promise<void>((resolve) => {
    timer = deps.clock.setTimer(graceSeconds * 1000, () => {
      deps.logger.info('preStop hook not completed in grace period', { ...podFields(pod), container: container.name, gracePeriod: graceSeconds });
      abort.abort();
      resolve();
    });
  });
  await raceAbort(Promise.race([hook, outOfTime]), cutShort);
  timer?.cancel();
  stopListening();
  return Math.floor((deps.clock.now() - start) / 1000);
}
