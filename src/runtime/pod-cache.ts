// The runtime's view of each pod as last read, kept between syncs (the kubelet's pod cache): a
// periodic resync of a pod nothing has happened to reads it from here rather than making four CRI
// calls again. Anything that may have changed the pod's containers (a PLEG event, a sync that acted)
// drops its entry, so a cached status is never older than the last change the agent could know of.
import type { PodStatus } from './types.js';

/** The evented PLEG's relist period: the longest a change may go unseen when events are lost. */
export const POD_CACHE_MAX_AGE_MS = 5 * 60_000;

interface Entry {
  status?: PodStatus;
  /** When `status` was read. */
  at: number;
  /** Bumped by every change; a read begun before one is not kept. */
  version: number;
}

export interface PodCacheOptions {
  now: () => number;
  /** A cached status older than this is read again anyway (a bound on what a missed event costs). */
  maxAgeMs: number;
  /** Whether changes are being seen (the PLEG healthy): while not, nothing is served from the cache. */
  watching: () => boolean;
}

export class PodCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly opts: PodCacheOptions) {}

  /** The pod's status if it is known to be current, else undefined (read it from the runtime). */
  get(uid: string): PodStatus | undefined {
    const e = this.entries.get(uid);
    if (!e?.status || this.opts.now() - e.at > this.opts.maxAgeMs || !this.opts.watching()) return undefined;
    return e.status;
  }

  /** Call before reading the pod from the runtime; pass what it returns to `set` with the result. */
  beginRead(uid: string): number {
    let e = this.entries.get(uid);
    if (!e) this.entries.set(uid, (e = { at: 0, version: 0 }));
    return e.version;
  }

  /**
   * Keeps a status read since `beginRead` returned `version`, for the next sync. Not kept when the
   * pod changed meanwhile, nor when the pod was forgotten.
   */
  set(uid: string, status: PodStatus, version: number): void {
    const e = this.entries.get(uid);
    if (!e || e.version !== version) return;
    e.status = status;
    e.at = status.timestamp;
  }

  /** Something about the pod's sandboxes or containers changed (or may have). */
  changed(uid: string): void {
    const e = this.entries.get(uid);
    if (!e) return;
    e.version++;
    e.status = undefined;
  }

  forget(uid: string): void {
    this.entries.delete(uid);
  }

  get size(): number {
    return this.entries.size;
  }
}
