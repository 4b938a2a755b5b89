// The ConfigMaps and Secrets this node's pods refer to, each watched while some pod refers to it
// (the kubelet's Watch strategy): a volume's content or an env var is read from memory, not by a
// GET per pod per sync, and an edit reaches the cache as soon as the API server sends it. Only
// objects named by a pod bound here are ever read.
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { httpCode } from '../kube/client.js';
import { listAndWatch } from '../kube/list-watch.js';
import type { WatchStream } from '../kube/reflector.js';
import type { Logger } from '../observability/logger.js';
import type { Clock, Timer } from '../util/clock.js';

type Obj = V1ConfigMap | V1Secret;

export interface ObjectGetter {
  /** GET of one object; undefined when it does not exist. */
  get(resource: 'configmaps' | 'secrets', namespace: string, name: string): Promise<Obj | undefined>;
  list(resource: 'configmaps' | 'secrets', namespace: string, fieldSelector: string): Promise<{ items: Obj[]; metadata?: { resourceVersion?: string } }>;
}

interface Entry {
  pods: Set<string>;
  synced: boolean;
  object?: Obj;
  /** Resolves once the first list has answered. */
  ready: Promise<void>;
  markReady: () => void;
  stop?: () => void;
  stopped: boolean;
}

const key = (ns: string, name: string) => `${ns}/${name}`;

export interface ObjectCacheOptions {
  resource: 'configmaps' | 'secrets';
  api: ObjectGetter;
  stream: WatchStream;
  clock: Clock;
  logger: Logger;
  /** How long a read waits for an object's first list before asking the API server directly. */
  syncWaitMs?: number;
}

export class ObjectCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byPod = new Map<string, Set<string>>();

  constructor(private readonly opts: ObjectCacheOptions) {}

  /** Objects watched, and pods referring to any (for /metrics). */
  sizes(): { objects: number; pods: number } {
    return { objects: this.entries.size, pods: this.byPod.size };
  }

  /** The objects `uid` refers to now; watches start for new ones and stop for ones nobody refers to. */
  setReferences(uid: string, refs: Array<{ namespace: string; name: string }>): void {
    const next = new Set(refs.map((r) => key(r.namespace, r.name)));
    const prev = this.byPod.get(uid) ?? new Set<string>();
    for (const k of next) {
      if (prev.has(k)) continue;
      let e = this.entries.get(k);
      if (!e) {
        e = this.newEntry();
        this.entries.set(k, e);
        const [ns, name] = k.split('/') as [string, string];
        this.watch(e, ns, name);
      }
      e.pods.add(uid);
    }
    for (const k of prev) if (!next.has(k)) this.release(uid, k);
    if (next.size) this.byPod.set(uid, next);
    else this.byPod.delete(uid);
  }

  forget(uid: string): void {
    this.setReferences(uid, []);
  }

  /** The object as last seen; an object no pod registered is read from the API server. */
  async get(namespace: string, name: string): Promise<Obj | undefined> {
    const e = this.entries.get(key(namespace, name));
    if (e) {
      if (!e.synced) {
        let timer: Timer | undefined;
        await Promise.race([e.ready, new Promise<void>((r) => (timer = this.opts.clock.setTimer(this.opts.syncWaitMs ?? 1000, r)))]);
        timer?.cancel();
      }
      if (e.synced) return e.object;
    }
    return this.opts.api.get(this.opts.resource, namespace, name);
  }

  stop(): void {
    for (const e of this.entries.values()) {
      e.stopped = true;
      e.stop?.();
    }
    this.entries.clear();
    this.byPod.clear();
  }

  private newEntry(): Entry {
    let markReady!: () => void;
    const ready = new Promise<void>((r) => (markReady = r));
    return { pods: new Set(), synced: false, ready, markReady, stopped: false };
  }

  private release(uid: string, k: string): void {
    const e = this.entries.get(k);
    if (!e) return;
    e.pods.delete(uid);
    if (e.pods.size > 0) return;
    e.stopped = true;
    e.stop?.();
    this.entries.delete(k);
  }

  /** List then watch one object by name (src/kube/list-watch.ts). */
  private watch(e: Entry, ns: string, name: string): void {
    const { resource, api, stream, clock, logger } = this.opts;
    const fieldSelector = `metadata.name=${name}`;
    e.stop = listAndWatch<Obj>({
      list: () => api.list(resource, ns, fieldSelector),
      stream,
      path: `/api/v1/namespaces/${encodeURIComponent(ns)}/${resource}`,
      query: { fieldSelector },
      onList: (items) => {
        e.object = items[0];
        e.synced = true;
        e.markReady();
      },
      onEvent: (type, o) => {
        e.object = type === 'DELETED' ? undefined : o;
      },
      clock,
      logger,
      what: `${resource} ${ns}/${name}`,
    });
  }
}

/** A getter on the agent's REST client (only the two calls the cache makes). */
export function restObjectGetter(request: <T>(method: string, path: string, opts?: { query?: Record<string, string> }) => Promise<T>): ObjectGetter {
  return {
    async get(resource, namespace, name) {
      try {
        return await request<Obj>('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/${resource}/${encodeURIComponent(name)}`);
      } catch (err) {
        if (httpCode(err) === 404) return undefined;
        throw err;
      }
    },
    list: (resource, namespace, fieldSelector) => request('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/${resource}`, { query: { fieldSelector } }),
  };
}
