// The sync history: per pod, the last syncs the agent ran (when, why, the plan, what each action
// did and how long it took), bounded in memory. Served at /debug/pods/{namespace}/{name} and shown
// by `nodelet history`. Syncs that found nothing to do fold into one entry with a count, so a quiet
// pod's resyncs do not push its crash loop out of view.
import type { WorkTrigger } from '../pods/pod-workers.js';
import type { PlanStep } from '../runtime/plan.js';

/** What woke the worker (a pod update from a source, a runtime event, the periodic resync, the end of a back-off, a retry after an error), or the pod's termination. */
export type SyncTrigger = WorkTrigger | 'terminate';

export interface ActionRecord {
  action: string;
  target: string;
  ok: boolean;
  reason?: string;
  message?: string;
  durationMs?: number;
}

export interface SyncRecord {
  /** When the sync began (ms since the epoch). */
  at: number;
  trigger: SyncTrigger;
  durationMs: number;
  /** The steps that act (keeps are left out: they are what did not happen). */
  plan: PlanStep[];
  results: ActionRecord[];
  error?: string;
  /** Further syncs with nothing to do folded into this one, and when the last of them began. */
  repeats?: number;
  lastAt?: number;
}

export const DEFAULT_HISTORY_LENGTH = 20;

/** A message longer than this is cut: a runtime's error can be long, and 20 of them are kept per pod. */
const MAX_MESSAGE = 300;

function idle(r: SyncRecord): boolean {
  return r.plan.length === 0 && r.results.every((a) => a.ok) && !r.error;
}

export class SyncHistory {
  private readonly pods = new Map<string, SyncRecord[]>();

  /** `limit` 0 keeps nothing (the history is off). */
  constructor(readonly limit = DEFAULT_HISTORY_LENGTH) {}

  record(uid: string, rec: SyncRecord): void {
    if (this.limit <= 0) return;
    const compact: SyncRecord = { ...rec, error: cut(rec.error), results: rec.results.map((a) => ({ ...a, message: cut(a.message) })) };
    let list = this.pods.get(uid);
    if (!list) this.pods.set(uid, (list = []));
    const last = list[list.length - 1];
    if (last && idle(last) && idle(compact) && last.trigger === compact.trigger) {
      last.repeats = (last.repeats ?? 0) + 1;
      last.lastAt = compact.at;
      return;
    }
    list.push(compact);
    if (list.length > this.limit) list.splice(0, list.length - this.limit);
  }

  /** Oldest first. */
  get(uid: string): readonly SyncRecord[] {
    return this.pods.get(uid) ?? [];
  }

  forget(uid: string): void {
    this.pods.delete(uid);
  }

  /** Pods with a history, and the records held (for /metrics-style accounting in tests and the bench). */
  size(): { pods: number; records: number } {
    let records = 0;
    for (const l of this.pods.values()) records += l.length;
    return { pods: this.pods.size, records };
  }
}

function cut(s: string | undefined): string | undefined {
  return s === undefined || s.length <= MAX_MESSAGE ? s : `${s.slice(0, MAX_MESSAGE)}…`;
}
