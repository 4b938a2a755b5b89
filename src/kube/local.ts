// Stand-ins for the API server when nodelet runs standalone (no cluster): pod statuses kept in
// memory (served on /pods) and events written to the log.
import type { V1ObjectReference, V1Pod, V1PodList, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { PodApi } from './client.js';
import type { EventRecorder, EventType } from './object-ref.js';

export class LocalPodStatusStore implements PodApi {
  private readonly statuses = new Map<string, V1PodStatus>();

  async listPods(): Promise<V1PodList> {
    return { items: [] };
  }

  async patchPodStatus(_namespace: string, _name: string, uid: string, status: V1PodStatus): Promise<V1Pod> {
    this.statuses.set(uid, status);
    return { status };
  }

  async deletePod(_namespace: string, _name: string, uid: string): Promise<void> {
    this.forget(uid);
  }

  status(uid: string): V1PodStatus | undefined {
    return this.statuses.get(uid);
  }

  forget(uid: string): void {
    this.statuses.delete(uid);
  }
}

export class LogEventRecorder implements EventRecorder {
  constructor(private readonly logger: Logger) {}

  event(ref: V1ObjectReference, type: EventType, reason: string, message: string): void {
    const fields = { pod: `${ref.namespace}/${ref.name}`, uid: ref.uid, object: ref.fieldPath, reason, type };
    if (type === 'Warning') this.logger.warn(`event: ${message}`, fields);
    else this.logger.info(`event: ${message}`, fields);
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }
}
