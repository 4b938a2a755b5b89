// One probe of a container, as the kubelet's prober runs it: the handler the probe names (exec,
// httpGet, tcpSocket, grpc), tried up to three times while it errors, and the Warning events
// users see in `kubectl describe pod` (Unhealthy, ProbeWarning) in the kubelet's words.
import type { V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import { containerRef, type EventRecorder } from '../kube/object-ref.js';
import type { ProbeResult } from './results.js';
import { execProbe, expandProbeCommand, type RunInContainer } from './exec.js';
import { grpcProbe } from './grpc.js';
import { httpGetRequest, httpProbe } from './http.js';
import { resolveContainerPort } from './port.js';
import { tcpProbe } from './tcp.js';
import type { Attempt, ProbeType } from './types.js';

const MAX_PROBE_RETRIES = 3;

export interface ProberDeps {
  runInContainer: RunInContainer;
  recorder: EventRecorder;
}

/** The API's defaults, for pods that did not come through the API server (static pods). */
export function probeTimeoutSeconds(spec: V1Probe): number {
  return spec.timeoutSeconds && spec.timeoutSeconds > 0 ? spec.timeoutSeconds : 1;
}

async function attempt(deps: ProberDeps, spec: V1Probe, pod: V1Pod, podIP: string, container: V1Container, containerID: string): Promise<Attempt> {
  const timeout = probeTimeoutSeconds(spec);
  try {
    if (spec.exec) return await execProbe(deps.runInContainer, containerID, expandProbeCommand(spec.exec.command ?? [], container), timeout);
    if (spec.httpGet) return await httpProbe(httpGetRequest(spec.httpGet, container, podIP), timeout * 1000);
    if (spec.tcpSocket) return await tcpProbe(spec.tcpSocket.host || podIP, resolveContainerPort(spec.tcpSocket.port, container), timeout * 1000);
    if (spec.grpc) return await grpcProbe(podIP, spec.grpc.port, spec.grpc.service ?? '', timeout);
  } catch (err) {
    // A port that is not there, a request that cannot be built: the probe could not run.
    return { result: 'unknown', output: '', error: err as Error };
  }
  const { name = '', namespace = '', uid = '' } = pod.metadata ?? {};
  return { result: 'unknown', output: '', error: new Error(`missing probe handler for ${name}_${namespace}(${uid}):${container.name}`) };
}

/**
 * Runs the probe and records its events. The result, and the error when the probe could not be
 * run (the worker then throws the result away, as the kubelet's does).
 */
export async function runProbe(deps: ProberDeps, type: ProbeType, spec: V1Probe, pod: V1Pod, podIP: string, container: V1Container, containerID: string): Promise<{ result: ProbeResult; error?: Error }> {
  let a: Attempt = { result: 'unknown', output: '' };
  for (let i = 0; i < MAX_PROBE_RETRIES; i++) {
    a = await attempt(deps, spec, pod, podIP, container, containerID);
    if (!a.error) break;
  }
  const ref = containerRef(pod, container.name);
  if (a.error) {
    deps.recorder.event(ref, 'Warning', 'Unhealthy', `${type} probe errored and resulted in ${a.result} state: ${a.error.message}`);
    return { result: 'Failure', error: a.error };
  }
  switch (a.result) {
    case 'success':
      return { result: 'Success' };
    case 'warning':
      deps.recorder.event(ref, 'Warning', 'ProbeWarning', `${type} probe warning: ${a.output}`);
      return { result: 'Success' };
    case 'failure':
      deps.recorder.event(ref, 'Warning', 'Unhealthy', `${type} probe failed: ${a.output}`);
      return { result: 'Failure' };
    default:
      return { result: 'Failure' };
  }
}
