// The Services that pods' environments are made from (the kubelet's service links): those of
// each namespace this node has pods in, and the default namespace's (for the kubernetes Service
// every pod gets). Each such namespace is listed and watched while a pod of it is here.
import type { V1Service } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { Clock, Timer } from '../util/clock.js';
import { listAndWatch } from './list-watch.js';
import type { WatchStream } from './reflector.js';

export interface ServiceLister {
  listServices(namespace: string): Promise<{ items: V1Service[]; metadata?: { resourceVersion?: string } }>;
}

interface Namespace {
  services: Map<string, V1Service>;
  synced: boolean;
  ready: Promise<void>;
  markReady: () => void;
  stop: () => void;
}

export class ServiceCache {
  private readonly namespaces = new Map<string, Namespace>();

  constructor(
    private readonly opts: { api: ServiceLister; stream: WatchStream; clock: Clock; logger: Logger; syncWaitMs?: number },
  ) {}

  /**
   * The Services of a namespace; undefined when they have not been read yet (within a short wait),
   * which the kubelet turns into an error of the container's config.
   */
  async services(namespace: string): Promise<V1Service[] | undefined> {
    const n = this.namespaces.get(namespace) ?? this.start(namespace);
    if (!n.synced) {
      let timer: Timer | undefined;
      await Promise.race([n.ready, new Promise<void>((r) => (timer = this.opts.clock.setTimer(this.opts.syncWaitMs ?? 5000, r)))]);
      timer?.cancel();
    }
    return n.synced ? [...n.services.values()] : undefined;
  }

  /** Namespaces watched (for /metrics). */
  get size(): number {
    return this.namespaces.size;
  }

  /** Keeps watching only these namespaces (the default one always). */
  retain(namespaces: Iterable<string>): void {
    const keep = new Set(namespaces);
    keep.add('default');
    for (const [ns, n] of this.namespaces) {
      if (keep.has(ns)) continue;
      n.stop();
      this.namespaces.delete(ns);
    }
  }

  stop(): void {
    this.retain([]);
    for (const n of this.namespaces.values()) n.stop();
    this.namespaces.clear();
  }

  private start(namespace: string): Namespace {
    let markReady!: () => void;
    const ready = new Promise<void>((r) => (markReady = r));
    const n: Namespace = { services: new Map(), synced: false, ready, markReady, stop: () => undefined };
    this.namespaces.set(namespace, n);
    n.stop = listAndWatch<V1Service>({
      list: () => this.opts.api.listServices(namespace),
      stream: this.opts.stream,
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/services`,
      onList: (items) => {
        n.services = new Map(items.map((s) => [s.metadata?.name ?? '', s]));
        n.synced = true;
        n.markReady();
      },
      onEvent: (type, s) => {
        if (type === 'DELETED') n.services.delete(s.metadata?.name ?? '');
        else n.services.set(s.metadata?.name ?? '', s);
      },
      clock: this.opts.clock,
      logger: this.opts.logger,
      what: `services of ${namespace}`,
    });
    return n;
  }
}
