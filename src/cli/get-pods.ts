// `nodelet get pods [-w]`: the agent's pods as `kubectl get pods` prints them, from its /pods endpoint.
import type { V1Pod } from '@kubernetes/client-node';
import type { DebugPod } from '../agent/debug-view.js';
import { formatGoDuration } from '../runtime/backoff.js';

/** The STATUS column, by kubectl's rules: terminating, init progress, container reasons, else the phase. */
export function podStatusText(pod: V1Pod): string {
  const st = pod.status ?? {};
  if (pod.metadata?.deletionTimestamp) return 'Terminating';
  let reason = st.reason || st.phase || 'Pending';
  const inits = st.initContainerStatuses ?? [];
  const total = pod.spec?.initContainers?.length ?? inits.length;
  for (const [i, c] of inits.entries()) {
    const t = c.state?.terminated;
    if (t && t.exitCode === 0) continue;
    if (t) return t.reason ? `Init:${t.reason}` : t.signal ? `Init:Signal:${t.signal}` : `Init:ExitCode:${t.exitCode}`;
    const w = c.state?.waiting?.reason;
    if (w && w !== 'PodInitializing') return `Init:${w}`;
    return `Init:${i}/${total}`;
  }
  let running = false;
  for (const c of [...(st.containerStatuses ?? [])].reverse()) {
    if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
    else if (c.state?.terminated) reason = c.state.terminated.reason || `ExitCode:${c.state.terminated.exitCode}`;
    else if (c.state?.running) running = true;
  }
  if (reason === 'Completed' && running) reason = 'Running';
  return reason;
}

function age(pod: V1Pod, now: number): string {
  const t = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : now;
  const s = Math.max(0, Math.floor((now - t) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : ''}`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/**
 * The NEXT column: what the agent's next sync of the pod will do and when, from its /debug summary
 * ("restart in 37s" for a crash loop's back-off, "retry in 8s" after a failed sync, "syncing" now);
 * '-' for a pod at rest, '' when the agent does not say.
 */
export function nextText(d: DebugPod | undefined, now: number): string {
  if (!d) return '';
  const w = d.worker;
  if (!w) return '-';
  if (w.busy) return w.phase === 'syncing' ? 'syncing' : w.phase;
  if (w.phase === 'terminated') return '-';
  const waits = d.pending.filter((s) => s.verb === 'wait' && s.until !== undefined);
  if (waits.length) {
    const first = waits.reduce((a, b) => (a.until! <= b.until! ? a : b));
    const who = d.containers.filter((c) => !c.init).length > 1 || first.kind !== 'regular' ? ` ${first.target}` : '';
    return `restart${who} in ${formatGoDuration(Math.max(0, first.until! - now))}`;
  }
  if (w.next?.trigger === 'retry') return `retry in ${formatGoDuration(Math.max(0, w.next.at - now))}`;
  return '-';
}

export function podRow(pod: V1Pod, now: number, debug?: DebugPod): string[] {
  const cs = pod.status?.containerStatuses ?? [];
  const total = pod.spec?.containers?.length ?? cs.length;
  const ready = cs.filter((c) => c.ready).length;
  const restarts = cs.reduce((n, c) => n + (c.restartCount ?? 0), 0);
  return [pod.metadata?.name ?? '', `${ready}/${total}`, podStatusText(pod), String(restarts), nextText(debug, now), age(pod, now)];
}

const HEADER = ['NAME', 'READY', 'STATUS', 'RESTARTS', 'NEXT', 'AGE'];

export function columnWidths(rows: string[][]): number[] {
  // STATUS and NEXT get room for their longest usual values, so watched lines stay aligned.
  const room = [0, 0, 'CrashLoopBackOff'.length, 0, 'restart in 4m59s'.length, 0];
  return HEADER.map((h, i) => Math.max(h.length, room[i]!, ...rows.map((r) => r[i]!.length)));
}

export function formatRows(rows: string[][], widths: number[]): string {
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]! + 3))).join('')).join('\n');
}

export function formatTable(rows: string[][]): string {
  return formatRows([HEADER, ...rows], columnWidths(rows));
}

async function fetchPods(server: string): Promise<V1Pod[]> {
  const res = await fetch(`${server}/pods`);
  if (!res.ok) throw new Error(`${server}/pods answered ${res.status}`);
  const body = (await res.json()) as { items: V1Pod[] };
  return body.items.sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
}

/** The agent's /debug summary by pod UID (empty when it has none to give: NEXT stays blank). */
async function fetchDebug(server: string): Promise<Map<string, DebugPod>> {
  try {
    const res = await fetch(`${server}/debug/pods`);
    if (!res.ok) return new Map();
    const body = (await res.json()) as { pods: DebugPod[] };
    return new Map(body.pods.map((p) => [p.uid, p]));
  } catch {
    return new Map();
  }
}

/** Prints the table once, or with `watch` a line each time a pod's row changes (as kubectl -w). */
export async function getPods(server: string, watch: boolean, out: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Promise<void> {
  let pods: V1Pod[];
  let debug: Map<string, DebugPod>;
  try {
    [pods, debug] = await Promise.all([fetchPods(server), fetchDebug(server)]);
  } catch (err) {
    throw new Error(`cannot reach the agent at ${server}: ${(err as Error).message}`);
  }
  const now = Date.now();
  const rows = pods.map((p) => podRow(p, now, debug.get(p.metadata?.uid ?? '')));
  const widths = columnWidths(rows);
  out(formatRows([HEADER, ...rows], widths));
  if (!watch) return;
  // What a watched line is compared on: the pod's columns and what NEXT says without its countdown.
  const key = (row: string[]) => [...row.slice(0, 4), row[4]!.replace(/ in \S+$/, '')].join('|');
  const last = new Map(pods.map((p, i) => [p.metadata?.uid ?? '', key(rows[i]!)]));
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    let current: V1Pod[];
    try {
      [current, debug] = await Promise.all([fetchPods(server), fetchDebug(server)]);
    } catch {
      continue; // the agent restarting: keep watching
    }
    const t = Date.now();
    for (const p of current) {
      const row = podRow(p, t, debug.get(p.metadata?.uid ?? ''));
      if (last.get(p.metadata?.uid ?? '') === key(row)) continue;
      last.set(p.metadata?.uid ?? '', key(row));
      out(formatRows([row], widths));
    }
  }
}
