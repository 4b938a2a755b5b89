// RuntimeClasses (node.k8s.io/v1), as the kubelet's runtimeclass manager: the CRI handler a pod runs
// with is its RuntimeClass's `handler`, read from a cache that lists and watches them all (a
// cluster has a handful). A name the API does not have fails the pod's sandbox with the API's own
// not-found message; until the first list, a lookup waits briefly.
import type { Logger } from '../observability/logger.js';
import type { Clock, Timer } from '../util/clock.js';
import { listAndWatch } from './list-watch.js';
import type { WatchStream } from './reflector.js';

export interface RuntimeClass {
  metadata?: { name?: string; resourceVersion?: string };
  handler: string;
}

export interface RuntimeClassLister {
  listRuntimeClasses(): Promise<{ items: RuntimeClass[]; metadata?: { resourceVersion?: string } }>;
}

/** What sandbox creation asks: the handler for a pod's runtimeClassName ('' for none). */
export interface RuntimeHandlerLookup {
  lookupRuntimeHandler(runtimeClassName: string | undefined): Promise<string>;
}

export class RuntimeClassNotFoundError extends Error {
  constructor(readonly className: string) {
    super(`runtimeclass.node.k8s.io "${className}" not found`);
  }
}

export class RuntimeClassManager implements RuntimeHandlerLookup {
  private readonly classes = new Map<string, RuntimeClass>();
  private synced = false;
  /** A first wait has run out: until the list succeeds, lookups fail at once (no sync slot held 5 s each). */
  private waitedOnce = false;
  private stopWatch?: () => void;
  private markSynced!: () => void;
  private readonly ready = new Promise<void>((r) => (this.markSynced = r));

  constructor(private readonly opts: { api: RuntimeClassLister; stream: WatchStream; clock: Clock; logger: Logger; syncWaitMs?: number }) {}

  async lookupRuntimeHandler(runtimeClassName: string | undefined): Promise<string> {
    if (!runtimeClassName) return '';
    // Watched from the first pod that names one: a node whose pods never do makes no request.
    this.stopWatch ??= this.start();
    if (!this.synced && !this.waitedOnce) {
      let timer: Timer | undefined;
      await Promise.race([this.ready, new Promise<void>((r) => (timer = this.opts.clock.setTimer(this.opts.syncWaitMs ?? 5000, r)))]);
      timer?.cancel();
      this.waitedOnce = true;
    }
    if (!this.synced) throw new Error(`failed to lookup RuntimeClass ${runtimeClassName}: RuntimeClasses not read from the API server yet`);
    const rc = this.classes.get(runtimeClassName);
    if (!rc) throw new RuntimeClassNotFoundError(runtimeClassName);
    return rc.handler;
  }

  stop(): void {
    this.stopWatch?.();
  }

  private start(): () => void {
    return listAndWatch<RuntimeClass>({
      list: () => this.opts.api.listRuntimeClasses(),
      stream: this.opts.stream,
      path: '/apis/node.k8s.io/v1/runtimeclasses',
      onList: (items) => {
        this.classes.clear();
        for (const rc of items) this.classes.set(rc.metadata?.name ?? '', rc);
        this.synced = true;
        this.markSynced();
      },
      onEvent: (type, rc) => {
        if (type === 'DELETED') this.classes.delete(rc.metadata?.name ?? '');
        else this.classes.set(rc.metadata?.name ?? '', rc);
      },
      clock: this.opts.clock,
      logger: this.opts.logger,
      what: 'runtimeclasses',
    });
  }
}
