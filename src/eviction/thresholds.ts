// Eviction thresholds as pkg/kubelet/eviction has them: the signals, the thresholds of the
// configuration (evictionHard, evictionSoft with its grace periods, evictionMinimumReclaim), which
// of them the observations meet, and the bookkeeping of one pass to the next (when a threshold was
// first met, when a node condition was last observed). Pure: the manager holds the state.
import { parseDuration } from '../util/duration.js';
import { parseQuantity } from '../util/quantity.js';

export const SIGNALS = [
  'memory.available',
  'allocatableMemory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'pid.available',
] as const;
export type Signal = (typeof SIGNALS)[number];

/** The kubelet's default evictionHard on Linux (no pid.available). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};

export type NodeConditionType = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';
/** What evicting a pod reclaims, named as the message names it. */
export type ReclaimResource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

const CONDITION: Record<Signal, NodeConditionType> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'containerfs.available': 'DiskPressure',
  'containerfs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

const RESOURCE: Record<Signal, ReclaimResource> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'containerfs.available': 'ephemeral-storage',
  'containerfs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

export const conditionOf = (s: Signal): NodeConditionType => CONDITION[s];
export const resourceOf = (s: Signal): ReclaimResource => RESOURCE[s];

/** An amount: absolute, or a fraction (0-1) of the signal's capacity. */
export type ThresholdValue = { quantity: number } | { percentage: number };

export interface Threshold {
  signal: Signal;
  value: ThresholdValue;
  /** 0: a hard threshold (acted on at once). */
  gracePeriodMs: number;
  minReclaim?: ThresholdValue;
}

export interface Observation {
  available: number;
  capacity: number;
}
export type Observations = Partial<Record<Signal, Observation>>;

export class EvictionConfigError extends Error {}

export interface ThresholdConfig {
  evictionHard: Record<string, string>;
  evictionSoft: Record<string, string>;
  evictionSoftGracePeriod: Record<string, string>;
  evictionMinimumReclaim: Record<string, string>;
  enforceNodeAllocatable: string[];
}

function signalOf(name: string): Signal {
  if (!(SIGNALS as readonly string[]).includes(name)) throw new EvictionConfigError(`unsupported eviction signal ${name}`);
  return name as Signal;
}

function percentage(text: string): number {
  const n = Number(text.slice(0, -1));
  if (!/^-?\d+(\.\d+)?%$/.test(text) || !Number.isFinite(n)) throw new EvictionConfigError(`invalid percentage ${JSON.stringify(text)}`);
  return n / 100;
}

function quantity(text: string): number {
  try {
    return parseQuantity(text);
  } catch {
    throw new EvictionConfigError(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': ${JSON.stringify(text)}`);
  }
}

/** One threshold statement; undefined for 0% and 100%, which the kubelet ignores. */
function statement(name: string, text: string): Omit<Threshold, 'gracePeriodMs'> | undefined {
  const signal = signalOf(name);
  if (text.endsWith('%')) {
    if (text === '0%' || text === '100%') return undefined;
    const p = percentage(text);
    if (p < 0) throw new EvictionConfigError(`eviction percentage threshold ${signal} must be >= 0%: ${text}`);
    if (p > 1) throw new EvictionConfigError(`eviction percentage threshold ${signal} must be <= 100%: ${text}`);
    return { signal, value: { percentage: p } };
  }
  const q = quantity(text);
  if (q <= 0) throw new EvictionConfigError(`eviction threshold ${signal} must be positive: ${text}`);
  return { signal, value: { quantity: q } };
}

function statements(map: Record<string, string>): Array<Omit<Threshold, 'gracePeriodMs'>> {
  return Object.entries(map).flatMap(([k, v]) => statement(k, v) ?? []);
}

function minimumReclaim(name: string, text: string): ThresholdValue {
  const signal = signalOf(name);
  if (text.endsWith('%')) {
    const p = percentage(text);
    if (p <= 0) throw new EvictionConfigError(`eviction percentage minimum reclaim ${signal} must be positive: ${text}`);
    return { percentage: p };
  }
  const q = quantity(text);
  if (q < 0) throw new EvictionConfigError(`negative eviction minimum reclaim specified for ${signal}`);
  return { quantity: q };
}

/**
 * The thresholds of a configuration, as the kubelet's ParseThresholdConfig: hard ones, soft ones
 * with their grace periods, minimum reclaims, and allocatableMemory.available beside a hard
 * memory.available when pods' allocatable is enforced. Throws EvictionConfigError in its words.
 */
export function parseThresholds(c: ThresholdConfig): Threshold[] {
  const out: Threshold[] = statements(c.evictionHard).map((t) => ({ ...t, gracePeriodMs: 0 }));
  const graces = new Map<Signal, number>();
  for (const [k, v] of Object.entries(c.evictionSoftGracePeriod)) {
    const signal = signalOf(k);
    const ms = parseDuration(v);
    if (ms === undefined) throw new EvictionConfigError(`time: invalid duration ${JSON.stringify(v)}`);
    graces.set(signal, ms);
  }
  for (const t of statements(c.evictionSoft)) {
    const grace = graces.get(t.signal);
    if (grace === undefined) throw new EvictionConfigError(`grace period must be specified for the soft eviction threshold ${t.signal}`);
    out.push({ ...t, gracePeriodMs: grace });
  }
  const reclaims = new Map(Object.entries(c.evictionMinimumReclaim).map(([k, v]) => [signalOf(k), minimumReclaim(k, v)] as const));
  for (const t of out) {
    const r = reclaims.get(t.signal);
    if (r) t.minReclaim = r;
  }
  if (c.enforceNodeAllocatable.includes('pods')) {
    for (const t of [...out]) {
      if (t.signal === 'memory.available' && isHard(t)) out.push({ signal: 'allocatableMemory.available', value: t.value, gracePeriodMs: 0, ...(t.minReclaim ? { minReclaim: t.minReclaim } : {}) });
    }
  }
  // nodelet's runtimes keep containers' writable layers with the images: containerfs is imagefs
  // (or nodefs), whose thresholds already stand for it.
  return out.filter((t) => t.signal !== 'containerfs.available' && t.signal !== 'containerfs.inodesFree');
}

export const isHard = (t: Threshold): boolean => t.gracePeriodMs === 0;

/** The threshold's amount against a capacity. */
export function thresholdQuantity(v: ThresholdValue, capacity: number): number {
  return 'quantity' in v ? v.quantity : Math.floor(v.percentage * capacity);
}

/** The thresholds the observations meet; with enforceMinReclaim, until the minimum reclaim above each is also available. */
export function thresholdsMet(thresholds: Threshold[], observations: Observations, enforceMinReclaim: boolean): Threshold[] {
  return thresholds.filter((t) => {
    const o = observations[t.signal];
    if (!o) return false;
    let q = thresholdQuantity(t.value, o.capacity);
    if (enforceMinReclaim && t.minReclaim) q += thresholdQuantity(t.minReclaim, o.capacity);
    return q > o.available;
  });
}

/** Identity of a threshold across passes. */
export const thresholdKey = (t: Threshold): string => `${t.signal}|${JSON.stringify(t.value)}|${t.gracePeriodMs}`;

export function mergeThresholds(a: Threshold[], b: Threshold[]): Threshold[] {
  const keys = new Set(a.map(thresholdKey));
  return [...a, ...b.filter((t) => !keys.has(thresholdKey(t)))];
}

/** What one pass leaves for the next. */
export interface EvictionState {
  /** When each threshold now met was first met (by thresholdKey). */
  firstObservedAt: Map<string, { threshold: Threshold; at: number }>;
  /** When each node condition was last observed. */
  conditionLastObservedAt: Map<NodeConditionType, number>;
  /** The thresholds acted on in the last pass: they stay met until their minimum reclaim is. */
  met: Threshold[];
}

export const emptyEvictionState = (): EvictionState => ({ firstObservedAt: new Map(), conditionLastObservedAt: new Map(), met: [] });

export interface Evaluation {
  state: EvictionState;
  /** The node conditions to report (observed within the transition period). */
  conditions: Set<NodeConditionType>;
  /** The thresholds whose grace periods have passed: the ones to act on, memory first. */
  actionable: Threshold[];
}

/** One pass of the kubelet's synchronize up to its choice of what to reclaim. */
export function evaluate(thresholds: Threshold[], observations: Observations, previous: EvictionState, now: number, transitionPeriodMs: number): Evaluation {
  let met = thresholdsMet(thresholds, observations, false);
  if (previous.met.length) met = mergeThresholds(met, thresholdsMet(previous.met, observations, true));
  const firstObservedAt = new Map<string, { threshold: Threshold; at: number }>();
  for (const t of met) firstObservedAt.set(thresholdKey(t), { threshold: t, at: previous.firstObservedAt.get(thresholdKey(t))?.at ?? now });
  const conditionLastObservedAt = new Map(previous.conditionLastObservedAt);
  for (const t of met) conditionLastObservedAt.set(conditionOf(t.signal), now);
  const conditions = new Set([...conditionLastObservedAt].filter(([, at]) => now - at < transitionPeriodMs).map(([c]) => c));
  const actionable = [...firstObservedAt.values()].filter((x) => now - x.at >= x.threshold.gracePeriodMs).map((x) => x.threshold);
  // As byEvictionPriority: memory before anything else.
  const memoryFirst = (t: Threshold) => (resourceOf(t.signal) === 'memory' ? 0 : 1);
  actionable.sort((a, b) => memoryFirst(a) - memoryFirst(b));
  return { state: { firstObservedAt, conditionLastObservedAt, met: actionable }, conditions, actionable };
}

/** The hard thresholds' reservation out of a capacity (memory.available, nodefs.available), for allocatable. */
export function hardEvictionReservation(thresholds: Threshold[], signal: 'memory.available' | 'nodefs.available', capacity: number): number {
  const t = thresholds.find((x) => x.signal === signal && isHard(x));
  return t ? thresholdQuantity(t.value, capacity) : 0;
}
