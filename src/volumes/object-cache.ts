// The ConfigMaps and Secrets this node's pods refer to, each watched while some pod refers to it
// (the kubelet's Watch strategy): a volume's content or an env var is read from memory, not by a
// GET per pod per sync, and an edit reaches the cache as soon as the API server sends it. Only
// objects named by a pod bound here are ever read.
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { apiErrorMessage, httpCode } from '../kube/client.js';
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

  /** List then watch one object by name, again from the top after any failure (with a capped back-off). */
  private watch(e: Entry, ns: string, name: string): void {
    const { resource, api, stream, clock, logger } = this.opts;
    const selector = `metadata.name=${name}`;
    let failures = 0;
    const loop = async (): Promise<void> => {
      while (!e.stopped) {
        try {
          const list = await api.list(resource, ns, selector);
          if (e.stopped) return;
          e.object = list.items[0];
          e.synced = true;
          e.markReady();
          let rv = list.metadata?.resourceVersion ?? '';
          // Resumes from the last version until the server sends an error (410 Gone): then relist.
          for (let failed = false; !failed; ) {
            const w = stream.watch(`/api/v1/namespaces/${encodeURIComponent(ns)}/${resource}`, { fieldSelector: selector, resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 300 }, (type, obj) => {
              const o = obj as Obj;
              if (type === 'ERROR') {
                failed = true;
                w.abort();
                return;
              }
              rv = o.metadata?.resourceVersion ?? rv;
              if (type === 'ADDED' || type === 'MODIFIED') e.object = o;
              else if (type === 'DELETED') e.object = undefined;
            });
            e.stop = w.abort;
            await w.done;
            if (e.stopped) return;
            failures = 0;
          }
        } catch (err) {
          if (e.stopped) return;
          if (httpCode(err) !== 410) logger.debug(`${resource} watch failed`, { object: `${ns}/${name}`, error: apiErrorMessage(err) });
          failures++;
          await clock.sleep(Math.min(30_000, 500 * 2 ** Math.min(failures, 6)));
        }
      }
    };
    void loop();
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
