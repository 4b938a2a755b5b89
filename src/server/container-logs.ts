// /containerLogs/{namespace}/{pod}/{container}: the query read as the kubelet reads PodLogOptions,
// the container instance chosen from the pod's status as the kubelet chooses it, and the answers
// (400/404/422 with the kubelet's words) for everything that is not a log to show.
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { LogReadOptions, LogStream } from '../logs/reader.js';
import { parseRfc3339Ms } from '../logs/reader.js';

export class HttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface ContainerLogRequest extends LogReadOptions {
  previous: boolean;
}

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw new HttpError(400, '{"message": "Unable to decode query."}');
  return Number(v);
}

function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null || v === '') return false;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new HttpError(400, '{"message": "Unable to decode query."}');
}

/** The kubelet's PodLogOptions from a query (tail=N|all is the old name of tailLines), validated as it validates them. */
export function parseLogQuery(q: URLSearchParams, nowMs: number): ContainerLogRequest {
  const query = new URLSearchParams(q);
  const tail = query.get('tail');
  if (tail) {
    if (tail === 'all') query.delete('tailLines');
    else query.set('tailLines', tail);
  }
  const tailLines = intParam(query, 'tailLines');
  const sinceSeconds = intParam(query, 'sinceSeconds');
  const limitBytes = intParam(query, 'limitBytes');
  const sinceTime = query.get('sinceTime');
  let sinceTimeMs: number | undefined;
  if (sinceTime) {
    sinceTimeMs = parseRfc3339Ms(sinceTime);
    if (sinceTimeMs === undefined) throw new HttpError(400, '{"message": "Unable to decode query."}');
  }
  const invalid = () => new HttpError(422, '{"message": "Invalid request."}');
  if (tailLines !== undefined && tailLines < 0) throw invalid();
  if (limitBytes !== undefined && limitBytes < 1) throw invalid();
  if (sinceSeconds !== undefined && sinceSeconds < 1) throw invalid();
  if (sinceSeconds !== undefined && sinceTimeMs !== undefined) throw invalid();
  const streamText = query.get('stream') || 'All';
  if (streamText !== 'All' && streamText !== 'Stdout' && streamText !== 'Stderr') throw invalid();
  // The kubelet refuses a tail together with a single stream: a tail counts lines of both.
  if (streamText !== 'All' && tailLines !== undefined) throw invalid();
  return {
    tailLines,
    sinceMs: sinceSeconds !== undefined ? nowMs - sinceSeconds * 1000 : sinceTimeMs,
    follow: boolParam(query, 'follow'),
    limitBytes,
    timestamps: boolParam(query, 'timestamps'),
    previous: boolParam(query, 'previous'),
    stream: streamText as LogStream,
  };
}

/** One stream alone (stream=Stdout|Stderr) only with the PodLogsQuerySplitStreams gate, as in the kubelet. */
export function checkStreamGate(opts: ContainerLogRequest, splitStreams: boolean): void {
  if (opts.stream !== 'All' && !splitStreams) throw new HttpError(400, `unable to return the given log stream: "${opts.stream}". Please enable PodLogsQuerySplitStreams feature gate in kubelet`);
}

/** The pod's container of that name, regular, init or ephemeral (as the kubelet's GetContainerSpec). */
export function podContainerSpec(pod: V1Pod, name: string): { name: string; tty?: boolean } | undefined {
  const spec = pod.spec;
  return [...(spec?.containers ?? []), ...(spec?.initContainers ?? []), ...(spec?.ephemeralContainers ?? [])].find((c) => c.name === name);
}

/** The container ID ("containerd://abc") whose log is shown, as the kubelet picks it from the status. */
export function logContainerID(podName: string, status: V1PodStatus | undefined, containerName: string, previous: boolean): string {
  const all: V1ContainerStatus[] = [...(status?.containerStatuses ?? []), ...(status?.initContainerStatuses ?? []), ...(status?.ephemeralContainerStatuses ?? [])];
  const cs = all.find((c) => c.name === containerName);
  const fail = (msg: string) => new HttpError(400, msg);
  if (!cs) throw fail(`container "${containerName}" in pod "${podName}" is not available`);
  const last = cs.lastState?.terminated;
  const { waiting, running, terminated } = cs.state ?? {};
  if (previous) {
    if (!last?.containerID) throw fail(`previous terminated container "${containerName}" in pod "${podName}" not found`);
    return last.containerID;
  }
  if (running) return cs.containerID ?? '';
  if (terminated) {
    if (terminated.containerID) return terminated.containerID;
    if (last?.containerID) return last.containerID;
    throw fail(`container "${containerName}" in pod "${podName}" is terminated`);
  }
  if (last) {
    if (!last.containerID) throw fail(`container "${containerName}" in pod "${podName}" is terminated`);
    return last.containerID;
  }
  if (waiting) {
    if (waiting.reason === 'ErrImagePull') throw fail(`container "${containerName}" in pod "${podName}" is waiting to start: image can't be pulled`);
    if (waiting.reason === 'ImagePullBackOff') throw fail(`container "${containerName}" in pod "${podName}" is waiting to start: trying and failing to pull image`);
    throw fail(`container "${containerName}" in pod "${podName}" is waiting to start: ${waiting.reason ?? ''}`);
  }
  throw fail(`container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`);
}
