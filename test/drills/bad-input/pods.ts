// The bad-pod corpus (test/drills/bad-pods/*.yaml): pods the API server accepts that cannot run as
// written, each stating in its annotations what the agent must answer. This file loads the cases and
// judges a pod (with its Warning events) against them; the drill creates, waits and deletes.
//
// Annotations (drills.nodelet.io/...; a key with the suffix "-process" or "-containerd" wins on
// that runtime, because some runtimes word their errors differently):
//   reason          regex (whole string) for the container's waiting/terminated/last reason, or the
//                   pod's status.reason with level "pod"; "Running" means the container runs
//   status-message  regex for that state's message (the pod's status.message with level "pod")
//   last-reason     regex for lastState.terminated.reason
//   event, message  a Warning event of this reason whose message matches the regex (event-2, message-2: a second one;
//                   event-type: Normal where the kubelet records a Normal one)
//   phase           the pod's phase; ready: "false" when a running container must not be ready
//   min-restarts    the container's restartCount at least this
//   container       which container (default the first app container); level: "pod" for pod-level reasons
//   runtimes        comma-separated runtimes the case applies to (default all)
//   reduced         "true": part of the reduced run
//   after           the case (pod name) that must be running before this one is created
// ${PUBLIC_REGISTRY}, ${PRIVATE_REGISTRY}, ${TEST_IMAGE} and ${NAMESPACE} are filled in: as is in
// the spec, regex-escaped in the annotations.
import type { CoreV1Event, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { RuntimeName } from '../types.js';

const PREFIX = 'drills.nodelet.io/';

export interface Placeholders {
  PUBLIC_REGISTRY: string;
  PRIVATE_REGISTRY: string;
  TEST_IMAGE: string;
  NAMESPACE: string;
}

export interface Expectation {
  reason: RegExp;
  statusMessage?: RegExp;
  lastReason?: RegExp;
  events: Array<{ type: string; reason: string; message: RegExp }>;
  phase?: string;
  ready?: boolean;
  minRestarts: number;
  container?: string;
  podLevel: boolean;
}

export interface BadPodCase {
  file: string;
  name: string;
  /** The first comment line: why the pod cannot run as written. */
  why: string;
  reduced: boolean;
  after?: string;
  pod: V1Pod;
  expect: Expectation;
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function fill(text: string, values: Placeholders, escape: boolean): string {
  return text.replace(/\$\{(PUBLIC_REGISTRY|PRIVATE_REGISTRY|TEST_IMAGE|NAMESPACE)\}/g, (_m, k: keyof Placeholders) => (escape ? escapeRegex(values[k]) : values[k]));
}

/** Fills placeholders in every string of the spec (not the annotations, which get regex-escaped values). */
function fillDeep<T>(v: T, values: Placeholders): T {
  if (typeof v === 'string') return fill(v, values, false) as T;
  if (Array.isArray(v)) return v.map((x) => fillDeep(x, values)) as T;
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fillDeep(x, values)])) as T;
  return v;
}

/** Loads the cases that apply to `runtime` (only the reduced ones when `reduced`). */
export function loadBadPods(dir: string, runtime: RuntimeName, values: Placeholders, reduced: boolean): BadPodCase[] {
  const cases: BadPodCase[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()) {
    const text = readFileSync(join(dir, file), 'utf8');
    const doc = parseYaml(text) as V1Pod;
    const annotations = doc.metadata?.annotations ?? {};
    const get = (key: string): string | undefined => {
      const v = annotations[`${PREFIX}${key}-${runtime}`] ?? annotations[`${PREFIX}${key}`];
      return v === undefined ? undefined : fill(v, values, true);
    };
    const runtimes = get('runtimes')?.split(',').map((s) => s.trim());
    if (runtimes && !runtimes.includes(runtime)) continue;
    const isReduced = get('reduced') === 'true';
    if (reduced && !isReduced) continue;
    const whole = (re: string) => new RegExp(`^(?:${re})$`);
    const reason = get('reason');
    if (!reason) throw new Error(`${file}: no ${PREFIX}reason annotation`);
    const events: Expectation['events'] = [];
    for (const suffix of ['', '-2']) {
      const r = get(`event${suffix}`);
      if (r) events.push({ type: get(`event-type${suffix}`) ?? 'Warning', reason: r, message: new RegExp(get(`message${suffix}`) ?? '') });
    }
    const opt = (k: string) => {
      const v = get(k);
      return v === undefined ? undefined : new RegExp(v);
    };
    const name = doc.metadata!.name!;
    // The pod as created: its labels and the case's name, none of our annotations, the placeholders filled.
    const pod = fillDeep({ ...doc, metadata: { name, labels: { ...(doc.metadata?.labels ?? {}), 'drills.nodelet.io/case': name } } }, values) as V1Pod;
    cases.push({
      file,
      name,
      why: /^#\s*(.*)$/m.exec(text)?.[1] ?? '',
      reduced: isReduced,
      after: get('after'),
      pod,
      expect: {
        reason: whole(reason),
        statusMessage: opt('status-message'),
        lastReason: get('last-reason') ? whole(get('last-reason')!) : undefined,
        events,
        phase: get('phase'),
        ready: get('ready') === undefined ? undefined : get('ready') === 'true',
        minRestarts: Number(get('min-restarts') ?? 0),
        container: get('container'),
        podLevel: get('level') === 'pod',
      },
    });
  }
  return cases;
}

function statusOf(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  return [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find((s) => s.name === name);
}

/** What the pod's status shows now, for a failure report. */
export function describeState(c: BadPodCase, pod: V1Pod | undefined): string {
  if (!pod) return 'pod not found';
  const head = `phase ${pod.status?.phase}${pod.status?.reason ? ` reason ${pod.status.reason}: ${pod.status.message}` : ''}`;
  if (c.expect.podLevel) return head;
  const name = c.expect.container ?? c.pod.spec!.containers[0]!.name;
  const s = statusOf(pod, name);
  if (!s) return `${head}; no status of container ${name}`;
  const st = s.state?.waiting ? `waiting ${s.state.waiting.reason}: ${s.state.waiting.message ?? ''}` : s.state?.terminated ? `terminated ${s.state.terminated.reason}: ${s.state.terminated.message ?? ''}` : s.state?.running ? 'running' : 'no state';
  const last = s.lastState?.terminated ? `; last terminated ${s.lastState.terminated.reason} (exit ${s.lastState.terminated.exitCode})` : '';
  return `${head}; ${name} ${st}${last}; ready ${s.ready}; restarts ${s.restartCount}`;
}

/** Whether the pod's status is what the case asks for (judged on one snapshot). */
export function stateMatches(c: BadPodCase, pod: V1Pod): boolean {
  const e = c.expect;
  if (e.phase && pod.status?.phase !== e.phase) return false;
  if (e.podLevel) {
    if (!e.reason.test(pod.status?.reason ?? '')) return false;
    return !e.statusMessage || e.statusMessage.test(pod.status?.message ?? '');
  }
  const s = statusOf(pod, e.container ?? c.pod.spec!.containers[0]!.name);
  if (!s) return false;
  const candidates: Array<{ reason: string; message: string }> = [];
  if (s.state?.running) candidates.push({ reason: 'Running', message: '' });
  if (s.state?.waiting) candidates.push({ reason: s.state.waiting.reason ?? '', message: s.state.waiting.message ?? '' });
  if (s.state?.terminated) candidates.push({ reason: s.state.terminated.reason ?? '', message: s.state.terminated.message ?? '' });
  if (s.lastState?.terminated) candidates.push({ reason: s.lastState.terminated.reason ?? '', message: s.lastState.terminated.message ?? '' });
  if (!candidates.some((x) => e.reason.test(x.reason) && (!e.statusMessage || e.statusMessage.test(x.message)))) return false;
  if (e.lastReason && !e.lastReason.test(s.lastState?.terminated?.reason ?? '')) return false;
  if ((s.restartCount ?? 0) < e.minRestarts) return false;
  // A case that must run must also be ready, unless it says otherwise.
  const wantReady = e.ready ?? (e.reason.test('Running') && !e.minRestarts ? true : undefined);
  if (wantReady !== undefined && s.ready !== wantReady) return false;
  return true;
}

/** The expected events not (yet) among `events`, as text. */
export function missingEvents(c: BadPodCase, events: CoreV1Event[]): string[] {
  return c.expect.events
    .filter((want) => !events.some((ev) => ev.type === want.type && ev.reason === want.reason && want.message.test(ev.message ?? '')))
    .map((want) => `${want.type} ${want.reason} matching ${want.message}`);
}
