// Drill 5, churn: pods created and deleted at 5 a second on one node (10 min; 45 s reduced), each
// short-lived. nodelet's /metrics is sampled all along; after a warm-up each figure's slope per
// minute is fitted and printed (the goal is flat), API requests per pod are compared between the
// two halves, and once churn stops every per-pod size must come back to the standing workload's.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterEnv } from '../../support/cluster.js';
import { core } from '../../support/kube.js';
import { parseProm, type Scrape } from '../prom-text.js';
import { mean, slopePerMinute, type Point } from '../slope.js';
import type { Drill, DrillContext, Figures } from '../types.js';

const RATE_PER_SECOND = 5;
/** A churn pod is deleted this long after it was created (it has started by then, mostly). */
const LIFETIME_MS = 4000;
/**
 * Never more churn pods than this in the API at once (the node's max-pods is 110; ~20 stand
 * there). A pod lives ~8-10 s in all (start, 4 s, kill, sandbox teardown, final status, delete),
 * so at 5 a second about 45 are there; creation waits when the node falls behind.
 */
const MAX_ALIVE = 60;
const LABEL = 'nodelet.io/drill';

/**
 * RSS may grow by this much from the standing level to the end of churn. Measured on this 2-core
 * machine (shared, loaded), 60 pods in flight: +40..+61 MiB in 45 s runs; in 10 min runs (1000-1500
 * pods through) +54, +65 and +88 MiB, with RSS flat after the warm-up (slopes 0.3-7 MiB/min, the
 * per-pod sizes all back at the standing level) and kept after churn: pages V8 and the allocator
 * took at the peak, not objects (the heap in use falls back). 128 MiB is above that level and
 * catches a gross leak: ~90 KiB for each of 1500 pods. A smaller leak shows in the per-pod sizes
 * and the printed slopes, not in this bound.
 */
const RSS_GROWTH_BOUND_MIB = 128;

/** What each sample reads from /metrics. */
const FIGURES: Record<string, (s: Scrape) => number> = {
  rss_mib: (s) => (s.get('process_resident_memory_bytes') ?? 0) / 2 ** 20,
  heap_mib: (s) => (s.get('nodejs_heap_size_used_bytes') ?? 0) / 2 ** 20,
  open_fds: (s) => s.get('process_open_fds') ?? 0,
  handles: (s) => s.get('nodejs_active_handles_total') ?? 0,
  timers: (s) => s.get('nodelet_clock_active_timers') ?? 0,
  backoff_entries: (s) => s.sum('nodelet_backoff_entries'),
  pod_workers: (s) => s.sum('kubelet_working_pods'),
  work_queue: (s) => s.get('nodelet_pod_work_queue_length') ?? 0,
  status_pods: (s) => s.get('nodelet_status_manager_pods') ?? 0,
  status_queue: (s) => s.get('nodelet_status_manager_queue_length') ?? 0,
  probe_workers: (s) => s.get('nodelet_probe_workers') ?? 0,
  pleg_pods: (s) => s.get('nodelet_pleg_pods') ?? 0,
  event_queue: (s) => s.get('nodelet_event_recorder_queue_length') ?? 0,
  event_caches: (s) => s.sum('nodelet_event_recorder_cache_entries'),
  volume_pods: (s) => s.get('nodelet_volume_manager_pods') ?? 0,
  other_maps: (s) => s.sum('nodelet_map_entries'),
  api_requests: (s) => s.sum('rest_client_requests_total'),
};

/**
 * Sizes that hold something per pod (or per container, or per pending piece of work): after churn
 * they are back at the standing workload's. The event recorder's caches are bounded LRUs (4096,
 * client-go's size) and stay full; RSS, fds and handles are judged by their slope and bound.
 */
const MUST_RETURN = ['backoff_entries', 'pod_workers', 'work_queue', 'status_pods', 'status_queue', 'probe_workers', 'pleg_pods', 'event_queue', 'volume_pods'];
/** A few timers come and go with the agent's loops (a status retry's sleep, a relist): a margin. */
const TIMER_MARGIN = 10;

interface Sample {
  t: number;
  created: number;
  /** Churn pods in the API when sampled (created and not yet gone). */
  alive: number;
  scrape: Scrape;
  values: Record<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function churnPod(ctx: DrillContext, i: number): V1Pod {
  return {
    metadata: { name: `churn-${Date.now().toString(36)}-${i}`, labels: { [LABEL]: 'churn' } },
    spec: {
      nodeName: ctx.agent.nodeName,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'c', image: clusterEnv().testImage, command: ['sh', '-c', "trap 'exit 0' TERM; echo up; sleep 3600 & wait"] }],
    },
  };
}

async function churnPodsInApi(ns: string): Promise<number> {
  return (await core.listNamespacedPod({ namespace: ns, labelSelector: `${LABEL}=churn` })).items.length;
}

/** The process listening on the runtime's unix socket (the process runtime, or containerd). */
function runtimePid(endpoint: string): number | undefined {
  const path = endpoint.replace(/^unix:\/\//, '');
  const out = spawnSync('ss', ['-xlpn'], { encoding: 'utf8' }).stdout ?? '';
  const line = out.split('\n').find((l) => l.split(/\s+/).includes(path));
  const pid = line ? Number(/pid=(\d+)/.exec(line)?.[1]) : NaN;
  return Number.isFinite(pid) ? pid : undefined;
}

/** The runtime process's RSS and open files, from /proc (it has no /metrics of ours). */
function runtimeFigures(pid: number | undefined): Record<string, number> {
  if (!pid) return {};
  try {
    const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
    return { runtime_rss_mib: rss / 1024, runtime_fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return {};
  }
}

async function sample(ctx: DrillContext, t0: number, created: number, alive: number, rtPid?: number): Promise<Sample> {
  const scrape = parseProm(await ctx.agent.get('/metrics'));
  const values: Record<string, number> = {};
  for (const [k, read] of Object.entries(FIGURES)) values[k] = read(scrape);
  Object.assign(values, runtimeFigures(rtPid));
  return { t: (Date.now() - t0) / 1000, created, alive, scrape, values };
}

/** Each nodelet_map_entries series (a map of its own) as a figure too. */
function mapSeries(s: Scrape): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of s.series) if (k.startsWith('nodelet_map_entries{')) out[k.replace(/^nodelet_map_entries\{map="(.*)"\}$/, 'map:$1')] = v;
  return out;
}

/**
 * What is still above its standing level (names and values), given the baseline and the latest
 * samples: each figure by its lowest of them, as the standing workload's own work (a crash loop's
 * restart, a probe, a status on its way) lifts one sample or another for a moment.
 */
function notReturned(base: Sample, recent: Sample[]): string[] {
  const over: string[] = [];
  const low = (read: (s: Sample) => number) => Math.min(...recent.map(read));
  for (const k of MUST_RETURN) {
    const v = low((s) => s.values[k]!);
    if (v > base.values[k]!) over.push(`${k} ${v} (was ${base.values[k]})`);
  }
  const timers = low((s) => s.values.timers!);
  if (timers > base.values.timers! + TIMER_MARGIN) over.push(`timers ${timers} (was ${base.values.timers}, margin ${TIMER_MARGIN})`);
  const b = mapSeries(base.scrape);
  for (const k of Object.keys(mapSeries(recent.at(-1)!.scrape))) {
    // The ConfigMap/Secret caches hold objects, not pods: kube-root-ca.crt of the drill's namespace may stay.
    if (k.endsWith('_cache_objects')) continue;
    const v = low((s) => mapSeries(s.scrape)[k] ?? 0);
    if (v > (b[k] ?? 0)) over.push(`${k} ${v} (was ${b[k] ?? 0})`);
  }
  return over;
}

export const drill: Drill = {
  name: 'churn',
  description: 'pods created and deleted at 5 a second on the node; /metrics sampled for leaks',
  runtimes: ['containerd', 'process'],
  async run(ctx: DrillContext): Promise<Figures> {
    const durationMs = ctx.reduced ? 45_000 : 600_000;
    const sampleEveryMs = ctx.reduced ? 2000 : 5000;
    // Slopes are fitted after the agent's caches and V8's heap have grown to their working size.
    const warmupS = ctx.reduced ? 15 : 120;
    const settleMs = ctx.reduced ? 120_000 : 180_000;
    const ns = ctx.namespace;
    const t0 = Date.now();
    const samples: Sample[] = [];
    const rtPid = runtimePid(ctx.runtime.endpoint);
    const startedBefore = parseProm(await ctx.agent.get('/metrics')).sum('kubelet_started_pods_total');
    // The standing level: the highest of samples over 12 s (log rotation learns the containers'
    // log paths every 10 s, a resync's timer comes and goes).
    const base = await sample(ctx, t0, 0, 0, rtPid);
    for (let i = 0; i < 4; i++) {
      await sleep(3000);
      const s = await sample(ctx, t0, 0, 0, rtPid);
      for (const k of Object.keys(s.values)) base.values[k] = Math.max(base.values[k]!, s.values[k]!);
      for (const [k, v] of s.scrape.series) if (v > (base.scrape.series.get(k) ?? -Infinity)) base.scrape.series.set(k, v);
    }
    ctx.log(`churn: baseline rss ${base.values.rss_mib!.toFixed(1)} MiB, ${base.values.pod_workers} pod workers, ${base.values.timers} timers`);

    let created = 0;
    let createErrors = 0;
    let deleteErrors = 0;
    let skipped = 0;
    let alive = 0;
    let maxAlive = 0;
    const pending = new Set<Promise<unknown>>();
    const track = (p: Promise<unknown>) => {
      pending.add(p);
      void p.finally(() => pending.delete(p));
    };
    let stop = false;
    // The count of churn pods in the API, read every 2 s: creation pauses at MAX_ALIVE.
    const counter = (async () => {
      while (!stop) {
        alive = await churnPodsInApi(ns).catch(() => alive);
        maxAlive = Math.max(maxAlive, alive);
        await sleep(2000);
      }
    })();
    let failure: Error | undefined;
    const sampler = (async () => {
      while (!stop) {
        await sleep(sampleEveryMs);
        if (!ctx.agent.alive()) throw new Error('nodelet died during churn');
        samples.push(await sample(ctx, t0, created, alive, rtPid));
      }
    })().catch((err: Error) => {
      failure = err;
      stop = true;
    });
    const churnStart = Date.now();
    for (let i = 0; Date.now() - churnStart < durationMs && !failure; i++) {
      const due = churnStart + (i * 1000) / RATE_PER_SECOND;
      if (due > Date.now()) await sleep(due - Date.now());
      if (alive >= MAX_ALIVE) {
        skipped++;
        continue;
      }
      const body = churnPod(ctx, i);
      created++;
      alive++;
      track(
        core.createNamespacedPod({ namespace: ns, body }).then(
          async () => {
            await sleep(LIFETIME_MS);
            await core.deleteNamespacedPod({ name: body.metadata!.name!, namespace: ns, gracePeriodSeconds: 1 }).catch(() => deleteErrors++);
          },
          () => createErrors++,
        ),
      );
    }
    const churnEnd = Date.now();
    await Promise.all([...pending]);
    stop = true;
    await Promise.all([counter, sampler]);
    if (failure) throw failure;
    ctx.log(`churn: ${created} pods created in ${((churnEnd - churnStart) / 1000).toFixed(0)} s (${skipped} skipped at ${MAX_ALIVE} alive, ${createErrors} create errors), waiting for them to go`);

    // Settle: the pods go from the API, and every per-pod size back to its standing level.
    const settleStart = Date.now();
    let last = await sample(ctx, t0, created, alive, rtPid);
    const recent = [last];
    let left = notReturned(base, recent);
    let podsLeft = await churnPodsInApi(ns);
    while ((left.length || podsLeft) && Date.now() - settleStart < settleMs) {
      await sleep(2000);
      if (!ctx.agent.alive()) throw new Error('nodelet died after churn');
      podsLeft = await churnPodsInApi(ns);
      last = await sample(ctx, t0, created, alive, rtPid);
      recent.push(last);
      if (recent.length > 5) recent.shift();
      left = notReturned(base, recent);
    }
    const settledS = (Date.now() - settleStart) / 1000;
    // The heap in use once churn is over (a figure): its lowest over 10 s, as a sample may come before a GC.
    let heapAfter = Math.min(...recent.map((s) => s.values.heap_mib!));
    for (let i = 0; i < 5; i++) {
      await sleep(2000);
      heapAfter = Math.min(heapAfter, (await sample(ctx, t0, created, alive, rtPid)).values.heap_mib!);
    }

    // Slopes per minute, after the warm-up, over the churn window.
    const churnT = (churnEnd - t0) / 1000;
    const during = samples.filter((s) => s.t <= churnT);
    const figures: Figures = Object.assign(ctx.figures, { pods_per_second: Number((created / ((churnEnd - churnStart) / 1000)).toFixed(2)), pods_created: created, pods_skipped: skipped, create_errors: createErrors, delete_errors: deleteErrors, max_alive: maxAlive });
    figures.pods_started = parseProm(await ctx.agent.get('/metrics')).sum('kubelet_started_pods_total') - startedBefore;
    const lines: string[] = [];
    for (const k of Object.keys(base.values)) {
      if (k === 'api_requests') continue;
      const pts: Point[] = during.map((s) => ({ t: s.t, y: s.values[k]! }));
      const slope = slopePerMinute(pts, warmupS);
      figures[`${k}_slope_per_min`] = Number(slope.toFixed(3));
      lines.push(`${k.padEnd(16)} base ${fmt(base.values[k]!)}  mean ${fmt(mean(pts.filter((p) => p.t >= warmupS)))}  after ${fmt(last.values[k]!)}  slope/min ${fmt(slope)}`);
    }
    ctx.log(`churn: figures after a ${warmupS} s warm-up:\n  ${lines.join('\n  ')}`);

    // API requests per pod, the first half of the churn (after the warm-up) against the second. A
    // pod's requests come at its start and at its end: the pods of a window are the mean of those
    // created and those gone in it (creation pauses when the node falls behind; deletions go on).
    const perPod = (a: Sample, b: Sample) => {
      const created = b.created - a.created;
      const gone = created - (b.alive - a.alive);
      return created + gone > 0 ? (b.values.api_requests! - a.values.api_requests!) / ((created + gone) / 2) : NaN;
    };
    const steady = during.filter((s) => s.t >= warmupS);
    const first = steady[0] ?? base;
    const mid = steady[Math.floor(steady.length / 2)] ?? base;
    const end = steady.at(-1) ?? base;
    figures.api_requests_per_pod_first_half = Number(perPod(first, mid).toFixed(2));
    figures.api_requests_per_pod_second_half = Number(perPod(mid, end).toFixed(2));
    const rssEnd = mean(during.slice(-3).map((s) => ({ t: s.t, y: s.values.rss_mib! })));
    figures.rss_base_mib = Number(base.values.rss_mib!.toFixed(1));
    figures.rss_end_mib = Number(rssEnd.toFixed(1));
    figures.rss_after_mib = Number(last.values.rss_mib!.toFixed(1));
    figures.heap_base_mib = Number(base.values.heap_mib!.toFixed(1));
    figures.heap_after_mib = Number(heapAfter.toFixed(1));
    figures.settle_seconds = Number(settledS.toFixed(0));
    ctx.log(`churn: API requests per pod ${figures.api_requests_per_pod_first_half} (first half), ${figures.api_requests_per_pod_second_half} (second half); rss ${figures.rss_base_mib} -> ${figures.rss_end_mib} -> ${figures.rss_after_mib} MiB, heap in use ${figures.heap_base_mib} -> ${figures.heap_after_mib} MiB`);

    if (podsLeft) throw new Error(`${podsLeft} churn pods still in the API ${settledS.toFixed(0)} s after churn stopped`);
    if (left.length) throw new Error(`sizes not back at the standing workload's ${settledS.toFixed(0)} s after churn: ${left.join('; ')}`);
    if (rssEnd - base.values.rss_mib! > RSS_GROWTH_BOUND_MIB) throw new Error(`RSS grew by ${(rssEnd - base.values.rss_mib!).toFixed(1)} MiB over the churn (bound ${RSS_GROWTH_BOUND_MIB} MiB)`);
    if (createErrors > created / 100) throw new Error(`${createErrors} of ${created} pod creations failed`);
    return figures;
  },
};

function fmt(n: number): string {
  return Number.isFinite(n) ? (Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(2)) : String(n);
}
