// Drill 7, bad input: pods the API server accepts but that cannot run, static manifests that are not
// pods, and config files and flags with every kind of mistake. Each pod must get the kubelet's reason
// and Warning event (test/drills/bad-pods/), each bad manifest one log line while the good one runs
// (test/drills/bad-static/), each bad config or flag exit code 2 with one line (test/drills/bad-config/);
// the agent never dies, and the runner checks that the standing workload was not disturbed.
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterEnv, projectRoot } from '../../support/cluster.js';
import { core, nodeV1 } from '../../support/kube.js';
import { loadCliCases, runCliCases } from '../bad-input/cli-cases.js';
import { describeState, loadBadPods, missingEvents, stateMatches, type BadPodCase } from '../bad-input/pods.js';
import { findLogLine, linesAbout, loadStaticCases } from '../bad-input/static-manifests.js';
import type { Drill, DrillContext, Figures } from '../types.js';

const CORPUS = join(projectRoot, 'test/drills');
const RUNTIME_CLASS = 'drills-no-such-handler';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function assertAlive(ctx: DrillContext, when: string): void {
  if (!ctx.agent.alive()) throw new Error(`nodelet died ${when} (see its log)`);
}

/** ConfigMap, Secret and RuntimeClass the cases refer to as existing. */
async function createFixtures(ns: string): Promise<void> {
  await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'drill-config' }, data: { present: 'yes' } } });
  await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'drill-secret' }, stringData: { present: 'yes' } } });
  await nodeV1.createRuntimeClass({ body: { metadata: { name: RUNTIME_CLASS }, handler: 'no-such-handler' } }).catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });
}

async function createPods(ctx: DrillContext, cases: BadPodCase[]): Promise<Map<string, V1Pod>> {
  const created = new Map<string, V1Pod>();
  const create = async (c: BadPodCase) => {
    const body: V1Pod = { ...c.pod, metadata: { ...c.pod.metadata, namespace: ctx.namespace }, spec: { terminationGracePeriodSeconds: 5, ...c.pod.spec!, nodeName: ctx.agent.nodeName } };
    created.set(c.name, await core.createNamespacedPod({ namespace: ctx.namespace, body }));
  };
  await Promise.all(cases.filter((c) => !c.after).map(create));
  // A case that needs another one running first (a host port held) waits for it.
  for (const c of cases.filter((x) => x.after)) {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const p = await core.readNamespacedPod({ name: c.after!, namespace: ctx.namespace }).catch(() => undefined);
      if (p?.status?.phase === 'Running') break;
      if (Date.now() > deadline) throw new Error(`${c.name}: ${c.after} is not running after 60 s`);
      await sleep(500);
    }
    await create(c);
  }
  return created;
}

/** Waits until every case shows its reason and its events; returns the seconds it took, and the slowest case. */
async function waitForAnswers(ctx: DrillContext, cases: BadPodCase[], started: number, timeoutMs: number): Promise<{ seconds: number; slowest: string }> {
  const stateSeen = new Set<string>();
  const eventsSeen = new Set<string>();
  const answeredAt = new Map<string, number>();
  let pods: V1Pod[] = [];
  let events: CoreV1Event[] = [];
  while (stateSeen.size < cases.length || eventsSeen.size < cases.length) {
    assertAlive(ctx, 'while the bad pods were running');
    pods = (await core.listNamespacedPod({ namespace: ctx.namespace, labelSelector: 'drills.nodelet.io/case' })).items;
    events = (await core.listNamespacedEvent({ namespace: ctx.namespace })).items;
    for (const c of cases) {
      const pod = pods.find((p) => p.metadata?.name === c.name);
      if (!pod) continue;
      // Each is latched: a reason seen once counts (a crash loop moves on from it).
      if (stateMatches(c, pod)) stateSeen.add(c.name);
      if (missingEvents(c, events.filter((e) => e.involvedObject.uid === pod.metadata!.uid)).length === 0) eventsSeen.add(c.name);
      if (stateSeen.has(c.name) && eventsSeen.has(c.name) && !answeredAt.has(c.name)) answeredAt.set(c.name, Date.now());
    }
    if (Date.now() - started > timeoutMs) {
      const report = cases
        .filter((c) => !stateSeen.has(c.name) || !eventsSeen.has(c.name))
        .map((c) => {
          const pod = pods.find((p) => p.metadata?.name === c.name);
          const evs = events.filter((e) => e.involvedObject.uid === pod?.metadata?.uid && e.type === 'Warning').map((e) => `${e.reason}: ${e.message}`);
          const wants = [...(stateSeen.has(c.name) ? [] : [`reason ${c.expect.reason}${c.expect.statusMessage ? ` with ${c.expect.statusMessage}` : ''}`]), ...missingEvents(c, events.filter((e) => e.involvedObject.uid === pod?.metadata?.uid))];
          return `  ${c.name} (${c.file}): wants ${wants.join(', ')}; has ${describeState(c, pod)}; Warning events: ${evs.join(' | ') || 'none'}`;
        });
      throw new Error(`${report.length} bad pods did not get their answer in ${timeoutMs / 1000} s: ${report.map((r) => r.trim().split(' ')[0]).join(', ')}\n${report.join('\n')}`);
    }
    await sleep(1000);
  }
  const [slowest, at] = [...answeredAt].sort((a, b) => b[1] - a[1])[0]!;
  return { seconds: (Date.now() - started) / 1000, slowest: `${slowest} (${((at - started) / 1000).toFixed(1)} s)` };
}

/** Writes the static manifests (their paths pushed to `written` as they are) and waits for their lines and the good one's mirror pod. */
async function staticManifests(ctx: DrillContext, testImage: string, written: string[]): Promise<{ count: number; mirror: string }> {
  const cases = loadStaticCases(join(CORPUS, 'bad-static'), { NAMESPACE: ctx.namespace, TEST_IMAGE: testImage });
  // Prefixed, so that they cannot collide with the workload's own manifests.
  for (const c of cases) {
    const path = join(ctx.agent.staticPodDir, `drill-bad-${c.file}`);
    writeFileSync(path, c.content);
    written.push(path);
  }
  const good = cases.find((c) => c.podName)!;
  const mirror = `${good.podName}-${ctx.agent.nodeName}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    assertAlive(ctx, 'after the bad static manifests were written');
    const missing = cases.filter((c) => c.expectLog && !findLogLine(ctx.agent.lines, `drill-bad-${c.file}`, c.expectLog));
    const pod = await core.readNamespacedPod({ name: mirror, namespace: ctx.namespace }).catch(() => undefined);
    const runs = pod?.status?.phase === 'Running' && (pod.status.containerStatuses ?? []).every((s) => s.ready && s.name === 'c');
    if (missing.length === 0 && runs) break;
    if (Date.now() > deadline) {
      const report = missing.map((c) => `  drill-bad-${c.file}: no log line matching ${c.expectLog}; lines about it: ${linesAbout(ctx.agent.lines, `drill-bad-${c.file}`).join(' | ') || 'none'}`);
      if (!runs) report.push(`  the good manifest's mirror pod ${mirror}: ${pod ? `phase ${pod.status?.phase}, containers ${(pod.status?.containerStatuses ?? []).map((s) => `${s.name} ready=${s.ready}`).join(', ')}` : 'not found'}`);
      throw new Error(`static manifests:\n${report.join('\n')}`);
    }
    await sleep(1000);
  }
  return { count: cases.length, mirror };
}

async function deleteAndWait(ctx: DrillContext, names: string[], timeoutMs: number): Promise<void> {
  const started = Date.now();
  await Promise.all(names.map((name) => core.deleteNamespacedPod({ name, namespace: ctx.namespace }).catch(() => undefined)));
  const deadline = Date.now() + timeoutMs;
  let last: string[] = [];
  for (;;) {
    const left = (await core.listNamespacedPod({ namespace: ctx.namespace })).items.filter((p) => names.includes(p.metadata!.name!));
    if (left.length === 0) {
      if (last.length) ctx.log(`the last pods gone after ${((Date.now() - started) / 1000).toFixed(1)} s: ${last.join(', ')}`);
      return;
    }
    last = left.map((p) => p.metadata!.name!);
    if (Date.now() > deadline) throw new Error(`pods not gone ${timeoutMs / 1000} s after their deletion: ${left.map((p) => `${p.metadata!.name} (${p.status?.phase})`).join(', ')}`);
    await sleep(1000);
  }
}

/** Takes away what the drill put on the node: the static manifests, the bad pods, the RuntimeClass. */
async function cleanUp(ctx: DrillContext, names: string[], staticFiles: string[], mirror: string | undefined): Promise<number> {
  const started = Date.now();
  for (const f of staticFiles) rmSync(f, { force: true });
  await deleteAndWait(ctx, names, 90_000);
  const mirrorGone = Date.now() + 60_000;
  while (mirror && (await core.readNamespacedPod({ name: mirror, namespace: ctx.namespace }).then(() => true, () => false))) {
    if (Date.now() > mirrorGone) throw new Error(`mirror pod ${mirror} still there 60 s after its manifest was removed`);
    await sleep(1000);
  }
  await nodeV1.deleteRuntimeClass({ name: RUNTIME_CLASS }).catch(() => undefined);
  return (Date.now() - started) / 1000;
}

export const drill: Drill = {
  name: 'bad-input',
  description: 'pods that cannot run, static manifests that are not pods, and bad config files and flags: each gets its reason, event or one line, and nothing else is disturbed',
  runtimes: ['containerd', 'process'],
  async run(ctx: DrillContext): Promise<Figures> {
    const env = clusterEnv();
    // First what needs no node: the CLI refusing bad configs and flags.
    const cli = loadCliCases(join(CORPUS, 'bad-config'));
    const failures = await runCliCases(join(projectRoot, 'dist/src/cli/main.js'), cli);
    if (failures.length) throw new Error(`${failures.length} of ${cli.length} bad configs and flags were not refused with one line, the first: ${failures.join('\n  ')}`);
    ctx.log(`${cli.length} bad configs and flags refused with one line each`);

    const cases = loadBadPods(join(CORPUS, 'bad-pods'), ctx.runtime.name, {
      PUBLIC_REGISTRY: env.publicRegistry,
      PRIVATE_REGISTRY: env.registry,
      TEST_IMAGE: env.testImage,
      NAMESPACE: ctx.namespace,
    }, ctx.reduced);
    const staticFiles: string[] = [];
    let mirror: string | undefined;
    try {
      await createFixtures(ctx.namespace);
      ctx.log(`creating ${cases.length} bad pods`);
      // Timed from the first creation: a case created after another one runs (host-port-conflict) counts its wait.
      const started = Date.now();
      await createPods(ctx, cases);
      const { seconds, slowest } = await waitForAnswers(ctx, cases, started, ctx.reduced ? 120_000 : 180_000);
      ctx.log(`every bad pod got its reason and event in ${seconds.toFixed(1)} s (the last: ${slowest})`);

      // bad-static/good.yaml's pod, named after the node as static pods are (known before it exists, for the clean-up).
      mirror = `drill-static-good-${ctx.agent.nodeName}`;
      const stat = await staticManifests(ctx, env.testImage, staticFiles);
      ctx.log(`${stat.count - 1} bad static manifests reported, the good one runs`);

      const deleteSeconds = await cleanUp(ctx, cases.map((c) => c.name), staticFiles, mirror);
      assertAlive(ctx, 'by the end of the drill');
      // A bug that did not kill the agent still shows in its log as a programming error.
      const bugs = ctx.agent.lines.filter((l) => /\b(TypeError|ReferenceError|RangeError)\b|Cannot read properties|is not (a function|iterable)/.test(JSON.stringify(l)));
      if (bugs.length) throw new Error(`the agent logged ${bugs.length} programming errors, the first: ${JSON.stringify(bugs[0]).slice(0, 500)}`);
      return {
        pods: cases.length,
        staticManifests: stat.count,
        configs: cli.filter((c) => c.file).length,
        flags: cli.filter((c) => !c.file).length,
        secondsToAllReasons: Number(seconds.toFixed(1)),
        secondsToDelete: Number(deleteSeconds.toFixed(1)),
      };
    } catch (err) {
      // A failed check still leaves the node as it found it, so that the invariants judge the rest.
      await cleanUp(ctx, cases.map((c) => c.name), staticFiles, mirror).catch((e: Error) => ctx.log(`cleaning up after the failure: ${e.message}`));
      throw err;
    }
  },
};
