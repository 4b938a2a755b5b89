// Per-key exponential backoff (the kubelet's flowcontrol.Backoff): 10 s doubling to 300 s for
// crash loops, forgotten once a key has been quiet for twice the maximum (10 min of running).
import type { Clock } from '../util/clock.js';

interface Entry {
  backoffMs: number;
  lastUpdate: number;
}

export class Backoff {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    readonly initialMs: number,
    readonly maxMs: number,
  ) {}

  /** The current backoff of `key` in ms (0 when it has none). */
  get(key: string): number {
    return this.entries.get(key)?.backoffMs ?? 0;
  }

  /** Records a failure at `eventTime`: starts at the initial backoff or doubles it, up to the maximum. */
  next(key: string, eventTime: number): void {
    const e = this.entries.get(key);
    if (!e || this.expired(eventTime, e)) {
      this.entries.set(key, { backoffMs: this.initialMs, lastUpdate: this.clock.now() });
      return;
    }
    e.backoffMs = Math.min(e.backoffMs * 2, this.maxMs);
    e.lastUpdate = this.clock.now();
  }

  /** Whether `key` is still backing off from an event at `eventTime`. */
  isInBackOffSince(key: string, eventTime: number): boolean {
    const e = this.entries.get(key);
    if (!e || this.expired(eventTime, e)) return false;
    return this.clock.now() - eventTime < e.backoffMs;
  }

  /** Whether `key` is still backing off from its last recorded failure (how the kubelet asks for image pulls). */
  isInBackOffSinceUpdate(key: string, now: number): boolean {
    const e = this.entries.get(key);
    if (!e || this.expired(now, e)) return false;
    return now - e.lastUpdate < e.backoffMs;
  }

  /** Milliseconds left of the back-off since the last recorded failure (0 when none). */
  remainingSinceUpdate(key: string, now: number): number {
    const e = this.entries.get(key);
    return e && this.isInBackOffSinceUpdate(key, now) ? e.lastUpdate + e.backoffMs - now : 0;
  }

  /** Milliseconds left of the backoff from `eventTime` (0 when none). */
  remaining(key: string, eventTime: number): number {
    return this.isInBackOffSince(key, eventTime) ? this.get(key) - (this.clock.now() - eventTime) : 0;
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Drops entries quiet for longer than twice the maximum, so the map does not grow without bound. */
  gc(): void {
    const now = this.clock.now();
    for (const [k, e] of this.entries) if (now - e.lastUpdate > 2 * this.maxMs) this.entries.delete(k);
  }

  size(): number {
    return this.entries.size;
  }

  private expired(eventTime: number, e: Entry): boolean {
    return eventTime - e.lastUpdate > 2 * this.maxMs;
  }
}

export const CRASH_LOOP_INITIAL_MS = 10_000;
export const CRASH_LOOP_MAX_MS = 300_000;

/** The backoff key of a container: pod and container identity plus its spec hash, so a new spec starts afresh. */
export function containerBackoffKey(podName: string, podNamespace: string, podUID: string, containerName: string, hash: string): string {
  return `${podName}_${podNamespace}_${podUID}_${containerName}_${hash}`;
}

/** "5m0s", "40s": durations as Go prints them, because that is what kubelet messages show. */
export function formatGoDuration(ms: number): string {
  const totalSeconds = Math.round(ms / 1000);
  const h = Math.floor(totalSeconds / 3600);
  const m = Math.floor((totalSeconds % 3600) / 60);
  const s = totalSeconds % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
