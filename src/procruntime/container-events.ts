// CRI's GetContainerEvents for the process runtime: each change of a container or sandbox
// (created, started, stopped, deleted) goes to every open stream with the pod's sandbox status and
// its containers' statuses, as CRI's ContainerEventResponse carries them. A sandbox's own changes
// go out under its ID, as containerd sends them. Nothing is built while nobody listens.
import type { Clock } from '../util/clock.js';

export type ContainerEventType = 'CONTAINER_CREATED_EVENT' | 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';

/** The pod's state when the event happened. */
export interface EventSnapshot {
  /** runtime.v1 PodSandboxStatus (null when the sandbox is gone). */
  sandbox: object | null;
  /** runtime.v1 ContainerStatus of each of the pod's containers. */
  containers: object[];
}

/** runtime.v1 ContainerEventResponse, in proto-loader's shape (snake_case, enums as names, int64 as a string). */
export interface ContainerEventMessage {
  container_id: string;
  container_event_type: ContainerEventType;
  created_at: string;
  pod_sandbox_status: object | null;
  containers_statuses: object[];
}

export type EventListener = (e: ContainerEventMessage) => void;

export class ContainerEventHub {
  private readonly listeners = new Set<EventListener>();
  /** Events go out in the order they happened, though their snapshots are promises. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly clock: Clock) {}

  /** A new stream; returns how to end it. */
  subscribe(fn: EventListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  get listening(): boolean {
    return this.listeners.size > 0;
  }

  /**
   * Sends one event. `snapshot` is taken by the caller at the moment of the change (a deleted
   * sandbox's status must be read before it goes); a snapshot that fails sends no status.
   */
  emit(type: ContainerEventType, id: string, snapshot: Promise<EventSnapshot>): void {
    const createdAt = String(BigInt(this.clock.now()) * 1_000_000n);
    const taken = snapshot.catch((): EventSnapshot => ({ sandbox: null, containers: [] }));
    this.chain = this.chain.then(async () => {
      const s = await taken;
      const msg: ContainerEventMessage = { container_id: id, container_event_type: type, created_at: createdAt, pod_sandbox_status: s.sandbox, containers_statuses: s.containers };
      for (const fn of [...this.listeners]) {
        try {
          fn(msg);
        } catch {
          /* one broken stream does not stop the others */
        }
      }
    });
  }

  /** Resolves once every event emitted so far has gone out (for tests and an orderly stop). */
  flushed(): Promise<void> {
    return this.chain;
  }
}
