// Where a single start's time goes, from nodelet's own /metrics scraped before and after the
// one-at-a-time starts: its steps (nodelet_pod_start_steps_seconds: queue, sync, status), the CRI
// calls of a start inside the sync (kubelet_runtime_operations_duration_seconds), and what is left
// of the latency the bench saw: the API server and the watches, before the agent saw the pod and
// after it patched the status. The kubelet's metrics say none of this, so its column has no path.

/** Histogram sums and counts of a scrape, by series (`name{labels}`). */
export type Scrape = Map<string, number>;

export function parseScrape(text: string): Scrape {
  const out: Scrape = new Map();
  for (const m of text.matchAll(/^((?:nodelet_pod_start_steps_seconds|kubelet_runtime_operations_duration_seconds)_(?:sum|count)(?:\{[^}]*\})?) (\S+)$/gm)) {
    out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** The CRI calls a start makes, in nodelet's operation names (the gRPC method in snake case). */
const START_CALLS = ['run_pod_sandbox', 'image_status', 'pull_image', 'create_container', 'start_container'] as const;
const STEPS = ['queue', 'sync', 'status'] as const;

export interface StartPath {
  /** Means per start, ms. */
  queue_ms: number;
  sync_ms: number;
  status_ms: number;
  /** Inside the sync: each CRI call of a start, its time per start (ms; a call made twice counts twice). */
  cri_ms: Record<(typeof START_CALLS)[number], number>;
  /** The rest of the sync: nodelet's own work between those calls and the runtime reads around them. */
  sync_other_ms: number;
  /** The bench's mean latency minus the three steps: the create call, the watch to the agent, the watch back. */
  api_and_watch_ms: number;
  starts: number;
}

const ms = (s: number) => Math.round(s * 10000) / 10;

/** `starts` pods started one at a time between the scrapes; `meanLatencyMs` is the bench's mean for them. */
export function startPath(before: Scrape, after: Scrape, starts: number, meanLatencyMs: number): StartPath | undefined {
  const delta = (series: string, what: 'sum' | 'count', labels: string) => (after.get(`${series}_${what}${labels}`) ?? 0) - (before.get(`${series}_${what}${labels}`) ?? 0);
  const step = (s: string) => delta('nodelet_pod_start_steps_seconds', 'sum', `{step="${s}"}`);
  const traced = delta('nodelet_pod_start_steps_seconds', 'count', '{step="status"}');
  if (starts <= 0 || traced < starts) return undefined; // not every start was traced: no honest mean
  const per = (s: number) => ms(s / starts);
  const cri = Object.fromEntries(START_CALLS.map((c) => [c, per(delta('kubelet_runtime_operations_duration_seconds', 'sum', `{operation_type="${c}"}`))])) as StartPath['cri_ms'];
  const [queue, sync, status] = STEPS.map((s) => per(step(s))) as [number, number, number];
  const criTotal = Object.values(cri).reduce((a, b) => a + b, 0);
  return {
    queue_ms: queue,
    sync_ms: sync,
    status_ms: status,
    cri_ms: cri,
    sync_other_ms: Math.round((sync - criTotal) * 10) / 10,
    api_and_watch_ms: Math.round((meanLatencyMs - queue - sync - status) * 10) / 10,
    starts,
  };
}
