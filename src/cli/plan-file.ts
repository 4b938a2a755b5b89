// `nodelet plan --file POD.yaml`: the plan of a pod read from a file, against what a runtime holds
// of it (by its UID; a pod without one has nothing there yet). No agent is asked: probe results and
// crash-loop back-offs are an agent's memory, so a plan made here knows of none.
import type { V1Pod } from '@kubernetes/client-node';
import { CriClient, KUBE_RUNTIME_API_VERSION } from '../cri/client.js';
import type { PodPlan } from '../agent/debug-view.js';
import { Backoff, CRASH_LOOP_INITIAL_MS, CRASH_LOOP_MAX_MS } from '../runtime/backoff.js';
import type { RuntimeManagerDeps } from '../runtime/deps.js';
import { computePodActions, noProbeResults } from '../runtime/pod-actions.js';
import { explainPodActions } from '../runtime/plan.js';
import { getPodStatus } from '../runtime/pod-status.js';
import type { PodStatus } from '../runtime/types.js';
import { realClock } from '../util/clock.js';

export async function planFromRuntime(pod: V1Pod, endpoint: string, nodeName: string): Promise<PodPlan> {
  const { namespace = 'default', name = '', uid = '' } = pod.metadata ?? {};
  const cri = new CriClient(endpoint);
  try {
    const version = await cri.version(KUBE_RUNTIME_API_VERSION);
    // getPodStatus reads only the runtime, the node's name and the clock.
    const deps = { runtime: cri, runtimeName: version.runtime_name, nodeName, clock: realClock } as unknown as RuntimeManagerDeps;
    const status: PodStatus = uid ? await getPodStatus(deps, uid, name, namespace) : { uid, name, namespace, ips: [], sandboxStatuses: [], containerStatuses: [], timestamp: Date.now() };
    const probes = { liveness: noProbeResults, startup: noProbeResults };
    const actions = computePodActions(pod, status, probes);
    const backoff = new Backoff(realClock, CRASH_LOOP_INITIAL_MS, CRASH_LOOP_MAX_MS);
    const note = uid ? undefined : 'the pod has no UID: nothing of it is in the runtime yet';
    return { namespace, name, uid, at: Date.now(), note, steps: explainPodActions({ pod, status, actions, probes, backoff }) };
  } finally {
    cri.close();
  }
}
