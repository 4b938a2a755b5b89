// `make drills`: for each runtime, a node with its standing workload, every drill in turn, and after
// each one the invariants (invariants.ts); one line per drill, and results/latest.json.
//   DRILLS=agent-kill,churn    only these drills
//   DRILLS_RUNTIMES=process    only this runtime (default: containerd,process)
//   DRILLS_REDUCED=1           the short run of `make test`: fewer pods, shorter outages and churn, and
//                              (unless DRILLS_RUNTIMES says otherwise) each drill on one runtime, in turn
//   DRILLS_RESULTS=FILE        where the JSON goes (default test/drills/results/latest.json; the short run: .cluster/drills/reduced.json)
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { CriClient } from '../../src/cri/client.js';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';
import { allDrills } from './drills/index.js';
import { checkRestarts, converge, leftovers, openFds, restartLedger, RuntimeObserver } from './invariants.js';
import { startDrillNode } from './node.js';
import type { DrillContext, Figures, RuntimeName } from './types.js';
import { kubeClients, StandingWorkload, type KubeClients } from './workload.js';

/** nodelet's informer resync: the API's status must match the runtime within it. */
const RESYNC_MS = 60_000;
/** Processes and mounts of a deleted pod go with its termination; allow a termination's grace and a sync. */
const LEFTOVER_MS = 30_000;
/** Runtime records of deleted pods (stopped sandboxes, exited containers) go at the next garbage collection (every minute, as the kubelet's). */
const GC_MS = 90_000;

interface DrillResult {
  drill: string;
  runtime: RuntimeName;
  ok: boolean;
  seconds: number;
  figures: Figures;
  invariants: Figures;
  errors: string[];
}

const reduced = process.env.DRILLS_REDUCED === '1';
const only = process.env.DRILLS ? new Set(process.env.DRILLS.split(',')) : undefined;
const runtimes = (process.env.DRILLS_RUNTIMES ?? 'containerd,process').split(',') as RuntimeName[];
const split = reduced && !process.env.DRILLS_RUNTIMES;
const resultsFile = process.env.DRILLS_RESULTS ?? (reduced ? join(clusterEnv().clusterDir, 'drills/reduced.json') : join(projectRoot, 'test/drills/results/latest.json'));

function log(message: string): void {
  process.stderr.write(`[drills] ${message}\n`);
}

function fmt(f: Figures): string {
  return Object.entries(f).map(([k, v]) => `${k}=${typeof v === 'number' ? Math.round(v * 100) / 100 : v}`).join(' ');
}

async function createNamespace(kube: KubeClients, name: string): Promise<void> {
  await kube.core.createNamespace({ body: { metadata: { name } } });
  // The ServiceAccount admission plugin refuses pods until the namespace's default account exists.
  await eventually(`namespace ${name}'s default ServiceAccount`, 60_000, async () => ((await kube.core.readNamespacedServiceAccount({ name: 'default', namespace: name }).catch(() => undefined)) ? true : undefined), 200);
}

async function canary(kube: KubeClients, namespace: string, node: string, n: number): Promise<number> {
  const started = Date.now();
  const name = `canary-${n}`;
  await kube.core.createNamespacedPod({ namespace, body: { metadata: { name }, spec: { nodeName: node, terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: clusterEnv().testImage, command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'] }] } } });
  await eventually(`${name} Running`, 60_000, async () => ((await kube.core.readNamespacedPod({ name, namespace })).status?.containerStatuses?.[0]?.ready ? true : undefined), 200);
  await kube.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 1 });
  await eventually(`${name} gone`, 60_000, async () => ((await kube.core.readNamespacedPod({ name, namespace }).catch(() => undefined)) ? undefined : true), 200);
  return (Date.now() - started) / 1000;
}

async function nodeReady(kube: KubeClients, node: string): Promise<boolean> {
  const n = await kube.core.readNode({ name: node });
  return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

async function runOnRuntime(runtime: RuntimeName, kube: KubeClients, results: DrillResult[]): Promise<void> {
  const drills = allDrills.filter((d, i) => d.runtimes.includes(runtime) && (!only || only.has(d.name)) && (!split || d.runtimes.length === 1 || runtimes[i % runtimes.length] === runtime));
  if (drills.length === 0) return;
  const suffix = randomBytes(3).toString('hex');
  const nodeName = `drill-${runtime}-${suffix}`;
  const namespace = `drills-${runtime}-${suffix}`;
  const dir = join(clusterEnv().clusterDir, 'drills', nodeName);
  log(`${runtime}: node ${nodeName}, namespace ${namespace}`);
  const node = await startDrillNode({ runtime, nodeName, dir, logFsMiB: 256 });
  const cri = new CriClient(node.runtime.endpoint, { statusTimeoutMs: 2000 });
  const observer = new RuntimeObserver(cri, nodeName);
  const idScheme = runtime === 'containerd' ? 'containerd' : 'nodelet-process';
  try {
    await createNamespace(kube, namespace);
    const workload = new StandingWorkload(kube, namespace, nodeName, reduced);
    observer.start();
    const t0 = Date.now();
    await workload.create();
    await eventually('the standing workload to settle', 180_000, async () => ((await workload.settled()) ? true : undefined), 1000);
    log(`${runtime}: ${(await workload.pods()).length} standing pods settled in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const fdBaseline = new Map<number, number>([[node.agent.pid, openFds(node.agent.pid)]]);

    let canaries = 0;
    for (const drill of drills) {
      const errors: string[] = [];
      const before = restartLedger(await workload.pods());
      const seenBefore = new Set(observer.containers.keys());
      const violationsBefore = observer.violations.length;
      const expected = new Set<string>();
      const partial: Figures = {};
      const ctx: DrillContext = {
        runtime: node.runtime,
        apiProxy: node.apiProxy,
        agent: node.agent,
        workload,
        cri,
        namespace,
        reduced,
        figures: partial,
        expectRestart: (uid, container) => void expected.add(`${uid}/${container}`),
        log: (m) => log(`${runtime} ${drill.name}: ${m}`),
      };
      const started = Date.now();
      let figures: Figures = partial;
      try {
        figures = { ...partial, ...(await drill.run(ctx)) };
      } catch (err) {
        errors.push(`drill: ${(err as Error).stack ?? String(err)}`);
      }
      const seconds = (Date.now() - started) / 1000;
      const inv: Figures = {};
      const check = async (what: string, fn: () => Promise<void>) => {
        try {
          await fn();
        } catch (err) {
          errors.push(`${what}: ${(err as Error).message}`);
        }
      };
      await check('agent serving', async () => {
        if (!node.agent.alive()) throw new Error('nodelet is not running');
        await node.agent.get('/healthz');
        await eventually('the Node Ready', 90_000, async () => ((await nodeReady(kube, nodeName)) ? true : undefined), 500);
        await eventually('the standing workload to settle again', 120_000, async () => ((await workload.settled()) ? true : undefined), 1000);
        inv.canarySeconds = await canary(kube, namespace, nodeName, ++canaries);
      });
      await check('status', async () => {
        inv.convergeSeconds = await converge(kube, namespace, observer, idScheme, RESYNC_MS);
      });
      await check('restart counts', async () => {
        const after = restartLedger(await workload.pods());
        const pods = await workload.pods();
        const kindByUid = new Map(pods.map((p) => [p.metadata!.uid!, workload.kindOf(p)]));
        const problems = checkRestarts(before, after, observer, { seenBefore, mustRestart: expected, mayRestart: (uid, name) => kindByUid.get(uid) === 'crash' || expected.has(`${uid}/${name}`) });
        if (problems.length) throw new Error(problems.join('; '));
      });
      const dup = observer.violations.slice(violationsBefore);
      if (dup.length) errors.push(`duplicates: ${dup.join('; ')}`);
      inv.duplicates = dup.length;
      await check('leftovers', async () => {
        const t = Date.now();
        let last: string[] = [];
        await eventually('nothing running or mounted for deleted pods', LEFTOVER_MS, async () => {
          const live = await observer.poll();
          if (!live) return undefined;
          const uids = new Set((await kube.core.listNamespacedPod({ namespace })).items.map((p) => p.metadata!.uid!));
          const left = leftovers(observer, live, uids, node.agent.rootDir);
          last = left.resources;
          inv.runtimeShimLeaks = left.runtimeShims.length;
          // What was there at first, for the record.
          if (last.length && inv.leftoversAtFirst === undefined) inv.leftoversAtFirst = `${last.length}: ${last.slice(0, 3).join(', ')}`;
          return last.length === 0 ? true : undefined;
        }, 1000).catch(() => {
          throw new Error(last.join('; '));
        });
        inv.leftoverSeconds = (Date.now() - t) / 1000;
      });
      await check('file descriptors', async () => {
        const pid = node.agent.pid;
        let now = openFds(pid);
        if (!fdBaseline.has(pid)) fdBaseline.set(pid, now);
        // Connections to the API server still idling out of their keep-alive right after a burst
        // are not a leak: a few seconds for them to close; a leak stays.
        for (const until = Date.now() + 10_000; now - fdBaseline.get(pid)! > 16 && Date.now() < until; now = openFds(pid)) await new Promise((r) => setTimeout(r, 500));
        inv.agentFds = now;
        inv.agentFdsDelta = now - fdBaseline.get(pid)!;
        if (now - fdBaseline.get(pid)! > 16) throw new Error(`the agent holds ${now} fds, ${now - fdBaseline.get(pid)!} more than after it settled`);
      });
      const result: DrillResult = { drill: drill.name, runtime, ok: errors.length === 0, seconds, figures, invariants: inv, errors };
      results.push(result);
      console.log(`${result.ok ? 'ok  ' : 'FAIL'} ${drill.name.padEnd(16)} ${runtime.padEnd(10)} ${seconds.toFixed(1).padStart(6)} s  ${fmt(figures)}  | ${fmt(inv)}`);
      for (const e of errors) console.log(`     ${e.split('\n')[0]}`);
    }

    // The end: every pod deleted, and nothing of any of them left.
    const teardownErrors: string[] = [];
    let shims: string[] = [];
    await kube.batch.deleteCollectionNamespacedJob({ namespace, propagationPolicy: 'Background' }).catch(() => undefined);
    await kube.core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 2 });
    try {
      await eventually('every pod of the namespace gone', 120_000, async () => ((await kube.core.listNamespacedPod({ namespace })).items.length === 0 ? true : undefined), 500);
      let last: string[] = [];
      await eventually('nothing left of any pod', GC_MS, async () => {
        const live = await observer.poll();
        if (!live) return undefined;
        const left = leftovers(observer, live, new Set(), node.agent.rootDir);
        last = [...left.resources, ...left.records];
        shims = left.runtimeShims;
        return last.length === 0 ? true : undefined;
      }, 1000).catch(() => {
        throw new Error(`left over: ${last.join('; ')}`);
      });
    } catch (err) {
      teardownErrors.push((err as Error).message);
    }
    results.push({ drill: 'teardown', runtime, ok: teardownErrors.length === 0, seconds: 0, figures: { containersSeen: observer.containers.size, sandboxesSeen: observer.sandboxes.size, polls: observer.polls, runtimeShimLeaks: shims.length }, invariants: {}, errors: teardownErrors });
    if (shims.length) console.log(`     containerd shims left by containerd itself (no process under them; a StopPodSandbox cancelled half-way): ${shims.join('; ')}`);
    console.log(`${teardownErrors.length ? 'FAIL' : 'ok  '} ${'teardown'.padEnd(16)} ${runtime.padEnd(10)}  every pod deleted, nothing left (${observer.containers.size} containers and ${observer.sandboxes.size} sandboxes seen)`);
    for (const e of teardownErrors) console.log(`     ${e}`);
  } finally {
    await observer.stop();
    cri.close();
    await node.teardown().catch((err) => log(`teardown: ${String(err)}`));
    await kube.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    await kube.core.deleteNode({ name: nodeName }).catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const kube = kubeClients();
  const results: DrillResult[] = [];
  const started = Date.now();
  // The commit the run measures (read now: the tree may change while it runs), marked when it had changes.
  const git = (...args: string[]) => execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' }).trim();
  const commit = git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? '+changes' : '');
  for (const runtime of runtimes) {
    try {
      await runOnRuntime(runtime, kube, results);
    } catch (err) {
      results.push({ drill: 'setup', runtime, ok: false, seconds: 0, figures: {}, invariants: {}, errors: [(err as Error).stack ?? String(err)] });
      console.log(`FAIL setup            ${runtime}: ${(err as Error).message}`);
    }
  }
  mkdirSync(dirname(resultsFile), { recursive: true });
  writeFileSync(resultsFile, JSON.stringify({ date: new Date().toISOString(), commit, reduced, seconds: (Date.now() - started) / 1000, results }, null, 2) + '\n');
  const failed = results.filter((r) => !r.ok);
  console.log(`${results.length - failed.length}/${results.length} passed in ${((Date.now() - started) / 1000).toFixed(0)} s; ${resultsFile}`);
  process.exit(failed.length ? 1 : 0);
}

await main();
