// The event recorder: core/v1 Events on pods, as the kubelet's (client-go's event correlator) sends
// them. Repeats of an event are one object (count and lastTimestamp); ten different messages of one
// reason within 10 min become one "(combined from similar events)" event; every event, repeats
// included, passes a per-object spam filter; recording only queues: a sync never waits for the API.
import type { CoreV1Event, V1ObjectReference } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../util/clock.js';
import { apiErrorMessage, httpCode, type EventApi } from './client.js';
import type { EventRecorder, EventType } from './object-ref.js';

export interface EventRecorderOptions {
  api: EventApi;
  component: string;
  host: string;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  /** Events queued before new ones are dropped. */
  maxQueue?: number;
  /** Token bucket per involved object (client-go's spam filter: 25, refilled one per 5 min). */
  burst?: number;
  refillEveryMs?: number;
  /** How many distinct events are remembered for aggregation. */
  cacheSize?: number;
}

/** client-go's aggregation: this many different messages of one reason within the interval are combined. */
const AGGREGATE_MAX_EVENTS = 10;
const AGGREGATE_INTERVAL_MS = 600_000;

/**
 * client-go's recorder: an event the API server could not be reached for is tried again, 12 times
 * in all, 10 s apart (the first retry after a random part of that), holding the queue meanwhile, so
 * that the events of a two-minute outage arrive after it.
 */
const MAX_TRIES = 12;
const RETRY_INTERVAL_MS = 10_000;

/** No answer, or one that says the server cannot serve now (rather than that the event is wrong). */
function unreachable(err: unknown): boolean {
  const code = httpCode(err) ?? 0;
  return code === 0 || code === 429 || code >= 500;
}

interface Pending {
  ref: V1ObjectReference;
  type: EventType;
  reason: string;
  message: string;
  at: number;
}

interface Known {
  namespace: string;
  name: string;
  count: number;
}

export class ApiEventRecorder implements EventRecorder {
  private readonly queue: Pending[] = [];
  private readonly known = new Map<string, Known>();
  private readonly buckets = new Map<string, { tokens: number; updated: number }>();
  /** Per object and reason: the different messages seen lately. */
  private readonly similar = new Map<string, { messages: Set<string>; last: number }>();
  private draining = false;
  private idleWaiters: Array<() => void> = [];
  private readonly maxQueue: number;
  private readonly burst: number;
  private readonly refillEveryMs: number;
  private readonly cacheSize: number;

  constructor(private readonly opts: EventRecorderOptions) {
    this.maxQueue = opts.maxQueue ?? 1000;
    this.burst = opts.burst ?? 25;
    this.refillEveryMs = opts.refillEveryMs ?? 300_000;
    this.cacheSize = opts.cacheSize ?? 4096;
  }

  event(ref: V1ObjectReference, type: EventType, reason: string, message: string): void {
    if (this.queue.length >= this.maxQueue) {
      this.opts.metrics?.eventsDropped.inc({ why: 'queue_full' });
      return;
    }
    this.queue.push({ ref, type, reason, message, at: this.opts.clock.now() });
    if (!this.draining) void this.drain();
  }

  /** Resolves once every queued event has been sent (for tests and shutdown). */
  flush(): Promise<void> {
    if (!this.draining && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private allow(objectKey: string, now: number): boolean {
    const b = this.buckets.get(objectKey) ?? { tokens: this.burst, updated: now };
    const refill = Math.floor((now - b.updated) / this.refillEveryMs);
    if (refill > 0) {
      b.tokens = Math.min(this.burst, b.tokens + refill);
      b.updated += refill * this.refillEveryMs;
    }
    // Least recently used last: the oldest bucket goes once there are too many (client-go's LRU).
    this.buckets.delete(objectKey);
    this.buckets.set(objectKey, b);
    if (this.buckets.size > this.cacheSize) this.buckets.delete(this.buckets.keys().next().value!);
    if (b.tokens <= 0) return false;
    b.tokens--;
    return true;
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const e = this.queue.shift()!;
        for (let tries = 1; ; tries++) {
          try {
            await this.send(e);
            break;
          } catch (err) {
            if (unreachable(err) && tries < MAX_TRIES) {
              await this.opts.clock.sleep(tries === 1 ? Math.random() * RETRY_INTERVAL_MS : RETRY_INTERVAL_MS);
              continue;
            }
            this.opts.metrics?.eventsDropped.inc({ why: 'api_error' });
            this.opts.logger.warn('event not recorded', { reason: e.reason, object: `${e.ref.namespace}/${e.ref.name}`, tries, error: apiErrorMessage(err) });
            break;
          }
        }
      }
    } finally {
      this.draining = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      waiters.forEach((w) => w());
    }
  }

  /** The event as sent: its own, or once too many similar ones came, the combined one (and its key). */
  private aggregate(e: Pending): { message: string; key: string } {
    const exact = [e.ref.uid, e.ref.fieldPath ?? '', e.type, e.reason, e.message].join('\u0000');
    const group = [e.ref.uid, e.type, e.reason].join('\u0000');
    let record = this.similar.get(group);
    if (!record || e.at - record.last > AGGREGATE_INTERVAL_MS) record = { messages: new Set(), last: e.at };
    record.messages.add(e.message);
    record.last = e.at;
    this.similar.delete(group);
    this.similar.set(group, record);
    if (this.similar.size > this.cacheSize) this.similar.delete(this.similar.keys().next().value!);
    if (record.messages.size < AGGREGATE_MAX_EVENTS) return { message: e.message, key: exact };
    // Keep the set from growing: one message fewer, so the next different one is combined too.
    record.messages.delete(record.messages.values().next().value!);
    return { message: `(combined from similar events): ${e.message}`, key: group };
  }

  private async send(e: Pending): Promise<void> {
    const ns = e.ref.namespace || 'default';
    // As client-go's correlator: aggregated and counted first, then filtered, so a repeat the
    // filter holds back still counts in the next one sent.
    const { message, key } = this.aggregate(e);
    const at = new Date(e.at);
    const known = this.known.get(key);
    if (known) {
      known.count++;
      this.known.delete(key);
      this.known.set(key, known);
    }
    // Every event, a repeat too, spends a token of its object's (and type's) bucket.
    if (!this.allow(`${e.ref.uid ?? `${ns}/${e.ref.name}`}\u0000${e.type}`, e.at)) {
      this.opts.metrics?.eventsDropped.inc({ why: 'rate_limited' });
      return;
    }
    if (known) {
      // The same event again: one object, its count, lastTimestamp and (for a combined one) message moved on.
      try {
        await this.opts.api.patchEvent(known.namespace, known.name, { count: known.count, lastTimestamp: at.toISOString(), message });
        return;
      } catch (err) {
        if (httpCode(err) !== 404) throw err;
        this.known.delete(key); // the event expired on the server: create it anew
      }
    }
    const name = `${e.ref.name}.${(BigInt(e.at) * 1_000_000n + BigInt(this.known.size % 1_000_000)).toString(16)}`;
    const event: CoreV1Event = {
      metadata: { name, namespace: ns },
      involvedObject: e.ref,
      reason: e.reason,
      message,
      type: e.type,
      count: 1,
      firstTimestamp: at,
      lastTimestamp: at,
      source: { component: this.opts.component, host: this.opts.host },
      reportingComponent: this.opts.component,
      reportingInstance: this.opts.host,
    };
    const created = await this.opts.api.createEvent(ns, event);
    this.known.set(key, { namespace: ns, name: created.metadata?.name ?? name, count: 1 });
    if (this.known.size > this.cacheSize) this.known.delete(this.known.keys().next().value!);
  }
}
