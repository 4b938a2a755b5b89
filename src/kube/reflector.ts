// The pod source: list + watch of the Pods bound to this node, with our own reflector rather than
// an informer (client-node's stops for good on most errors). It resumes from the last
// resourceVersion, takes bookmarks, relists on 410 Gone, reconnects with capped jittered backoff,
// restarts a watch that has gone quiet, and replays its cache to the handler every resync period.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { Clock, Timer } from '../util/clock.js';
import { apiErrorMessage, httpCode, type PodApi } from './client.js';
import type { RestClient } from './rest.js';

export interface PodHandler {
  onAdd(pod: V1Pod): void;
  onUpdate(pod: V1Pod): void;
  onDelete(pod: V1Pod): void;
  /** Every resync period, each known pod again. */
  onResync(pod: V1Pod): void;
  /** After the first successful list: the agent now knows every pod bound to it. */
  onSynced?(): void;
}

export interface WatchStream {
  /** Opens a watch; `onEvent` gets every event; the returned promise settles when the stream ends. */
  watch(path: string, query: Record<string, string | number | boolean>, onEvent: (type: string, obj: unknown) => void): { done: Promise<void>; abort(): void };
}

/** WatchStream on our REST client (it only parses the stream; reconnecting is the reflector's). */
export function restWatch(rest: RestClient): WatchStream {
  return { watch: (path, query, onEvent) => rest.watch(path, query, onEvent) };
}

export interface ReflectorOptions {
  api: PodApi;
  stream: WatchStream;
  nodeName: string;
  handler: PodHandler;
  clock: Clock;
  logger: Logger;
  resyncPeriodMs?: number;
  /** A watch with no event or bookmark for this long is restarted (default: WATCH_STALL_TIMEOUT_MS). */
  stallTimeoutMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
}

/**
 * The API server sends a watch that asked for bookmarks one at least every minute, so a watch
 * quiet for longer than that is dead (a connection dropped somewhere without a reset); 10 s over
 * the minute allows for a busy server.
 */
export const WATCH_STALL_TIMEOUT_MS = 70_000;

class GoneError extends Error {}

export class PodReflector {
  private readonly store = new Map<string, V1Pod>();
  private resourceVersion = '';
  private running = false;
  private current?: { abort(): void };
  private resyncTimer?: Timer;
  private failures = 0;
  private synced = false;
  private loop?: Promise<void>;
  readonly fieldSelector: string;
  /** Counters for tests and metrics. */
  readonly stats = { lists: 0, watches: 0, stalls: 0, relistsOnGone: 0, errors: 0 };

  constructor(private readonly opts: ReflectorOptions) {
    this.fieldSelector = `spec.nodeName=${opts.nodeName}`;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
    this.scheduleResync();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.resyncTimer?.cancel();
    this.current?.abort();
    await this.loop?.catch(() => undefined);
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  list(): V1Pod[] {
    return [...this.store.values()];
  }

  private scheduleResync(): void {
    const period = this.opts.resyncPeriodMs ?? 60_000;
    if (period <= 0) return;
    this.resyncTimer = this.opts.clock.setTimer(period, () => {
      if (!this.running) return;
      for (const pod of this.store.values()) this.opts.handler.onResync(pod);
      this.scheduleResync();
    });
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        if (!this.resourceVersion) await this.relist();
        await this.watchOnce();
        this.failures = 0;
      } catch (err) {
        if (!this.running) break;
        if (err instanceof GoneError) {
          this.stats.relistsOnGone++;
          this.opts.logger.info('watch resourceVersion expired, relisting', { node: this.opts.nodeName });
          this.resourceVersion = '';
          continue;
        }
        this.stats.errors++;
        this.failures++;
        const base = Math.min(this.opts.backoffMaxMs ?? 30_000, (this.opts.backoffInitialMs ?? 500) * 2 ** (this.failures - 1));
        const delay = base / 2 + Math.random() * (base / 2);
        this.opts.logger.warn('pod list/watch failed, retrying', { error: apiErrorMessage(err), retryInMs: Math.round(delay) });
        if (httpCode(err) === 410) this.resourceVersion = '';
        await this.opts.clock.sleep(delay);
      }
    }
  }

  private async relist(): Promise<void> {
    this.stats.lists++;
    const list = await this.opts.api.listPods(this.fieldSelector);
    const seen = new Set<string>();
    // Oldest first, as the kubelet admits pods: after a restart, what already runs is admitted before newcomers.
    const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
    const items = [...list.items].sort((a, b) => created(a) - created(b));
    for (const pod of items) {
      const uid = pod.metadata?.uid ?? '';
      seen.add(uid);
      const old = this.store.get(uid);
      this.store.set(uid, pod);
      if (!old) this.opts.handler.onAdd(pod);
      else if (old.metadata?.resourceVersion !== pod.metadata?.resourceVersion) this.opts.handler.onUpdate(pod);
    }
    for (const [uid, pod] of this.store) {
      if (!seen.has(uid)) {
        this.store.delete(uid);
        this.opts.handler.onDelete(pod);
      }
    }
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    if (!this.synced) {
      this.synced = true;
      this.opts.handler.onSynced?.();
    }
  }

  private watchOnce(): Promise<void> {
    this.stats.watches++;
    const stallMs = this.opts.stallTimeoutMs ?? WATCH_STALL_TIMEOUT_MS;
    // The server ends the watch on its own after a random 5-10 min, as client-go asks it to.
    const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
    let stallTimer: Timer | undefined;
    let gone = false;
    let failure: Error | undefined;
    const handle = this.opts.stream.watch(
      '/api/v1/pods',
      { fieldSelector: this.fieldSelector, resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
      (type, obj) => {
        armStall();
        const pod = obj as V1Pod;
        switch (type) {
          case 'ADDED':
          case 'MODIFIED': {
            const uid = pod.metadata?.uid ?? '';
            const had = this.store.has(uid);
            this.store.set(uid, pod);
            if (had) this.opts.handler.onUpdate(pod);
            else this.opts.handler.onAdd(pod);
            break;
          }
          case 'DELETED':
            this.store.delete(pod.metadata?.uid ?? '');
            this.opts.handler.onDelete(pod);
            break;
          case 'BOOKMARK':
            break;
          case 'ERROR': {
            const status = obj as { code?: number; message?: string };
            if (status.code === 410) gone = true;
            else failure = new Error(`watch error ${status.code ?? ''}: ${status.message ?? ''}`);
            handle.abort();
            return;
          }
        }
        const rv = pod.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
      },
    );
    this.current = handle;
    const armStall = () => {
      stallTimer?.cancel();
      stallTimer = this.opts.clock.setTimer(stallMs, () => {
        this.stats.stalls++;
        this.opts.logger.warn('pod watch stalled, restarting it', { quietForMs: stallMs });
        handle.abort();
      });
    };
    armStall();
    return handle.done.then(
      () => {
        stallTimer?.cancel();
        if (gone) throw new GoneError('resourceVersion too old');
        if (failure) throw failure;
      },
      (err) => {
        stallTimer?.cancel();
        if (gone || httpCode(err) === 410) throw new GoneError('resourceVersion too old');
        throw err;
      },
    );
  }
}
