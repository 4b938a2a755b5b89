// Builders for pods and runtime statuses used by the runtime manager's unit tests.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { PodSandboxStatus } from '../../../src/cri/types.js';
import { hashContainer } from '../../../src/runtime/hash.js';
import type { ContainerState, ContainerStatus, PodStatus } from '../../../src/runtime/types.js';

export function makePod(opts: { restartPolicy?: string; containers?: string[]; initContainers?: string[]; hostNetwork?: boolean } = {}): V1Pod {
  const mk = (name: string): V1Container => ({ name, image: 'nodelet.test/busybox:1', command: ['sh', '-c', `echo ${name}`] });
  return {
    metadata: { name: 'foo', namespace: 'new', uid: '12345678' },
    spec: {
      restartPolicy: opts.restartPolicy ?? 'Always',
      hostNetwork: opts.hostNetwork,
      containers: (opts.containers ?? ['foo1', 'foo2', 'foo3']).map(mk),
      initContainers: opts.initContainers?.map(mk),
    },
  };
}

export function sandbox(opts: { id?: string; ready?: boolean; attempt?: number; ip?: string; network?: 'POD' | 'NODE'; createdAt?: number } = {}): PodSandboxStatus {
  return {
    id: opts.id ?? 'sandbox-0',
    metadata: { name: 'foo', uid: '12345678', namespace: 'new', attempt: opts.attempt ?? 0 },
    state: opts.ready === false ? 'SANDBOX_NOTREADY' : 'SANDBOX_READY',
    created_at: String((opts.createdAt ?? 1) * 1e9),
    network: { ip: opts.ip ?? '10.0.0.1', additional_ips: [] },
    linux: { namespaces: { options: { network: opts.network ?? 'POD', pid: 'CONTAINER', ipc: 'POD', target_id: '', userns_options: null } } },
    labels: {},
    annotations: {},
    runtime_handler: '',
  } as PodSandboxStatus;
}

let seq = 0;
export function containerStatus(
  container: V1Container,
  state: ContainerState,
  opts: { exitCode?: number; id?: string; hash?: string; restartCount?: number; reason?: string; finishedAt?: number } = {},
): ContainerStatus {
  return {
    id: { type: 'containerd', id: opts.id ?? `id-${container.name}-${seq++}` },
    name: container.name,
    state,
    createdAt: 1000, // as its sandbox, created at 1 s
    startedAt: state === 'created' ? 0 : 2,
    finishedAt: state === 'exited' ? (opts.finishedAt ?? 3) : 0,
    exitCode: opts.exitCode ?? 0,
    image: container.image ?? '',
    imageID: 'sha256:abc',
    imageRef: 'sha256:abc',
    hash: opts.hash ?? hashContainer(container),
    restartCount: opts.restartCount ?? 0,
    reason: opts.reason ?? '',
    message: '',
  };
}

/** A status where the pod has one ready sandbox and every app container runs. */
export function runningStatus(pod: V1Pod): PodStatus {
  return {
    uid: pod.metadata!.uid!,
    name: pod.metadata!.name!,
    namespace: pod.metadata!.namespace!,
    ips: ['10.0.0.1'],
    sandboxStatuses: [sandbox()],
    containerStatuses: pod.spec!.containers.map((c) => containerStatus(c, 'running')),
    timestamp: 0,
  };
}

/** A status where the pod's sandbox is ready and every init container completed, app containers not started. */
export function initializedStatus(pod: V1Pod): PodStatus {
  return {
    ...runningStatus(pod),
    containerStatuses: (pod.spec!.initContainers ?? []).map((c) => containerStatus(c, 'exited', { exitCode: 0 })),
  };
}
