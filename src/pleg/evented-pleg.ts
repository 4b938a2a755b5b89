// The evented PLEG: where the runtime streams CRI container events (GetContainerEvents), each one
// wakes its pod's worker at once, and the generic relist drops to a long period as a safety net
// (the kubelet's evented PLEG does the same). When the stream breaks, the relist goes back to its
// normal period until the stream is open again; a runtime without events (containerd 1.6 answers
// Unimplemented) keeps the normal relist and is asked again only now and then.
import { CriError } from '../cri/errors.js';
import { offersContainerEvents, type ContainerEventSource } from '../cri/services.js';
import type { ContainerEventResponse } from '../cri/types.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { NodeNameLabel } from '../runtime/labels.js';
import type { Clock, Timer } from '../util/clock.js';
import { GenericPLEG, type PlegOptions, type PodLifecycleEvent } from './generic-pleg.js';
import type { RuntimeService } from '../cri/services.js';

/** The relist while events flow, and how stale it may be (the kubelet's evented values: 300 s, 10 min). */
export const EVENTED_RELIST_PERIOD_MS = 300_000;
export const EVENTED_RELIST_THRESHOLD_MS = 10 * 60_000;
/** The generic relist's staleness limit, restored when the stream stops. */
const GENERIC_RELIST_THRESHOLD_MS = 3 * 60_000;
/** A broken stream is opened again after 1 s, doubling to 30 s; a runtime that lacks events is asked every 5 min. */
const RETRY_INITIAL_MS = 1000;
const RETRY_MAX_MS = 30_000;
const UNIMPLEMENTED_RETRY_MS = 5 * 60_000;

export interface EventedPlegOptions {
  source: ContainerEventSource;
  generic: GenericPLEG;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  onEvent: (e: PodLifecycleEvent) => void;
  /** The generic relist's period when there are no events (the configured plegRelistPeriod). */
  normalPeriodMs: number;
  /** Its period while events flow (default 300 s). */
  eventedPeriodMs?: number;
}

const CONTAINER_STATE: Record<string, string | undefined> = {
  CONTAINER_CREATED_EVENT: 'CONTAINER_CREATED',
  CONTAINER_STARTED_EVENT: 'CONTAINER_RUNNING',
  CONTAINER_STOPPED_EVENT: 'CONTAINER_EXITED',
  CONTAINER_DELETED_EVENT: undefined,
};

/**
 * The object's state as a relist would record it, from an event (pure, for tests). A sandbox's
 * own events come under its ID; its state is the one its status carries, none once deleted.
 */
export function stateAfter(e: ContainerEventResponse): string | undefined {
  const type = String(e.container_event_type);
  if (e.pod_sandbox_status?.id === e.container_id) return type === 'CONTAINER_DELETED_EVENT' ? undefined : String(e.pod_sandbox_status.state);
  return CONTAINER_STATE[type];
}

export class EventedPLEG {
  private stream?: { cancel(): void };
  private retry?: Timer;
  private running = false;
  private open = false;
  private retryMs = RETRY_INITIAL_MS;
  private saidUnimplemented = false;

  constructor(private readonly opts: EventedPlegOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.connect();
  }

  stop(): void {
    this.running = false;
    this.retry?.cancel();
    this.stream?.cancel();
    this.stream = undefined;
  }

  /** Whether events flow now (the relist is only the safety net). */
  get streaming(): boolean {
    return this.open;
  }

  private connect(): void {
    if (!this.running) return;
    try {
      this.stream = this.opts.source.watchContainerEvents({
        onOpen: () => this.opened(),
        onEvent: (e) => this.handle(e),
        onEnd: (err) => this.ended(err),
      });
    } catch (err) {
      this.ended(err as Error);
    }
  }

  private opened(): void {
    this.open = true;
    this.retryMs = RETRY_INITIAL_MS;
    this.opts.metrics?.eventedPlegConnections.inc();
    this.opts.logger.info('PLEG: the runtime streams container events; relisting only as a safety net', { relistPeriodMs: this.opts.eventedPeriodMs ?? EVENTED_RELIST_PERIOD_MS });
    this.opts.generic.setRelistPeriod(this.opts.eventedPeriodMs ?? EVENTED_RELIST_PERIOD_MS, EVENTED_RELIST_THRESHOLD_MS);
    // What changed before the stream opened was announced to nobody: one relist sees it.
    this.opts.generic.relistSoon();
  }

  private ended(err: Error): void {
    const wasOpen = this.open;
    this.open = false;
    this.stream = undefined;
    if (!this.running) return;
    this.opts.metrics?.eventedPlegConnectionErrors.inc();
    this.opts.generic.setRelistPeriod(this.opts.normalPeriodMs, GENERIC_RELIST_THRESHOLD_MS);
    // Whatever the stream missed while it broke is seen by the relist, now.
    if (wasOpen) this.opts.generic.relistSoon();
    const unimplemented = err instanceof CriError && err.code === 'Unimplemented';
    let wait: number;
    if (unimplemented) {
      wait = UNIMPLEMENTED_RETRY_MS;
      if (!this.saidUnimplemented) this.opts.logger.info('PLEG: the runtime has no container events; relisting', { relistPeriodMs: this.opts.normalPeriodMs });
      this.saidUnimplemented = true;
    } else {
      wait = this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
      this.opts.logger.warn('PLEG: the container event stream broke; relisting until it is open again', { error: err.message, retryInMs: wait });
    }
    this.retry = this.opts.clock.setTimer(wait, () => this.connect());
  }

  private handle(e: ContainerEventResponse): void {
    const sandbox = e.pod_sandbox_status;
    const uid = sandbox?.metadata?.uid;
    // As the kubelet: an event without its pod (the sandbox already gone) is left to the relist.
    if (!sandbox || !uid) return;
    // Only this node's pods (a runtime may be shared, as the relist's label selector assumes).
    const node = sandbox.labels?.[NodeNameLabel];
    if (node !== undefined && node !== this.opts.nodeName) return;
    const createdNs = Number(e.created_at);
    if (createdNs > 0) this.opts.metrics?.eventedPlegLatency.observe(Math.max(0, this.opts.clock.now() - createdNs / 1e6) / 1000);
    const event = this.opts.generic.observe(uid, e.container_id, stateAfter(e));
    // A container just created is the worker's own doing, mid-sync: as the kubelet, no wake for it.
    if (event && event.type !== 'ContainerChanged') this.opts.onEvent(event);
  }
}

/**
 * The node's PLEGs: the generic relist always, and the evented one beside it for a runtime client
 * that can stream events, unless turned off (evented period 0).
 */
export function newPlegs(
  runtime: RuntimeService & object,
  opts: Omit<PlegOptions, 'runtime' | 'relistPeriodMs'> & { normalPeriodMs: number; eventedPeriodMs?: number },
): { generic: GenericPLEG; evented?: EventedPLEG } {
  const generic = new GenericPLEG({ ...opts, runtime, relistPeriodMs: opts.normalPeriodMs });
  if (opts.eventedPeriodMs === 0 || !offersContainerEvents(runtime)) return { generic };
  return { generic, evented: new EventedPLEG({ ...opts, generic, source: runtime }) };
}
