// Drill 6, the log filesystem full: the pod log root (a small loop-mounted filesystem of the
// agent's own) is filled in two steps. First below the DiskPressure threshold with space left: the
// Node reports DiskPressure, a new pod is refused as the kubelet refuses it (Failed, Evicted) and a
// critical one still starts. Then to the last block, with a pod writing logs fast: the containers
// keep running, nodelet keeps serving and does not spin. Then the space returns: DiskPressure goes
// False, the logs flow again and a new pod starts. A canary pod numbers its lines, so the lines
// lost while the disk was full are counted.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { clusterEnv, eventually } from '../../support/cluster.js';
import { core } from '../../support/kube.js';
import type { Drill, DrillContext, Figures } from '../types.js';
import { PRESSURE_TRANSITION_SECONDS } from '../node.js';

const MiB = 2 ** 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** nodelet's CPU while the disk is full may not exceed this (in cores): more is a spin. */
const MAX_CPU_WHILE_FULL = 0.5;

interface FsSpace {
  totalBytes: number;
  /** What root may still use (reserved blocks included). */
  freeBytes: number;
  /** What others may use: what DiskPressure is judged by. */
  availBytes: number;
}

function space(path: string): FsSpace {
  const s = statfsSync(path);
  return { totalBytes: s.blocks * s.bsize, freeBytes: s.bfree * s.bsize, availBytes: s.bavail * s.bsize };
}

function fallocate(path: string, bytes: number): boolean {
  if (bytes <= 0) return true;
  const r = spawnSync('fallocate', ['-l', String(Math.floor(bytes / 4096) * 4096), path], { encoding: 'utf8' });
  if (r.status === 0) return true;
  rmSync(path, { force: true });
  if (/No space left/.test(r.stderr)) return false;
  throw new Error(`fallocate ${path}: ${r.stderr.trim()}`);
}

/** A file taking all but `leave` bytes of what root may use (ext4's extent blocks are not counted in free: less is tried on ENOSPC). */
function fillLeaving(path: string, root: string, leave: number): void {
  for (let margin = leave; margin < 64 * MiB; margin *= 2) if (fallocate(path, space(root).freeBytes - margin)) return;
  throw new Error(`could not fill ${root}`);
}

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function condition(node: V1Node, type: string) {
  return node.status?.conditions?.find((c) => c.type === type);
}

function pod(ctx: DrillContext, name: string, script: string, extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name, labels: { 'nodelet.io/drill': 'disk-full' } },
    spec: { nodeName: ctx.agent.nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: clusterEnv().testImage, command: ['sh', '-c', script] }], ...extra },
  };
}

async function waitPhase(ns: string, name: string, what: string, timeoutMs: number, ok: (p: V1Pod) => boolean): Promise<V1Pod> {
  return eventually(`${name}: ${what}`, timeoutMs, async () => {
    const p = await core.readNamespacedPod({ name, namespace: ns });
    return ok(p) ? p : undefined;
  }, 500);
}

/** Container ID and restart count of every container of the standing workload (but the crash-looping), by pod and name. */
async function standing(ctx: DrillContext): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const p of await ctx.workload.pods()) {
    // Crash-looping pods restart by design.
    if (p.metadata?.labels?.['drills.nodelet.io/kind'] === 'crash') continue;
    for (const c of [...(p.status?.containerStatuses ?? []), ...(p.status?.initContainerStatuses ?? [])]) {
      out.set(`${p.metadata?.namespace}/${p.metadata?.name}/${c.name}`, `${c.containerID ?? ''} restarts ${c.restartCount}`);
    }
  }
  return out;
}

/** The canary's numbered lines present in its CRI log files. */
function canaryNumbers(dir: string): number[] {
  const nums: number[] = [];
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => /\.log(\.\d{8}-\d{6})?$/.test(f));
  } catch {
    return nums;
  }
  for (const f of files) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const m = / canary (\d+)$/.exec(line);
      if (m) nums.push(Number(m[1]));
    }
  }
  return nums;
}

export const drill: Drill = {
  name: 'disk-full',
  description: "the pod log root's filesystem filled to DiskPressure, then to its last block, then freed",
  runtimes: ['containerd', 'process'],
  async run(ctx: DrillContext): Promise<Figures> {
    const ns = ctx.namespace;
    const root = ctx.agent.podLogRoot;
    const holdMs = ctx.reduced ? 20_000 : 60_000;
    const figures = ctx.figures;
    const fs0 = space(root);
    figures.fs_mib = Math.round(fs0.totalBytes / MiB);
    const before = await standing(ctx);
    const readNode = () => core.readNode({ name: ctx.agent.nodeName });

    // The canary: a numbered line every 100 ms; its log directory holds the fillers (the log GC
    // removes any other entry of the log root whose name is no pod of the node's). Critical, as
    // the writer below: under DiskPressure the eviction manager evicts any other pod, as the
    // kubelet's does, and the canary must live through it to count its lines.
    await core.createNamespacedPod({ namespace: ns, body: pod(ctx, 'canary', 'i=0; while true; do echo "canary $i"; i=$((i+1)); sleep 0.1; done', { priorityClassName: 'system-node-critical' }) });
    const canary = await waitPhase(ns, 'canary', 'Running', 60_000, (p) => p.status?.phase === 'Running');
    const canaryID = canary.status?.containerStatuses?.[0]?.containerID;
    const podDir = join(root, `${ns}_canary_${canary.metadata!.uid}`);
    const canaryDir = join(podDir, 'c');
    await eventually('canary lines in its log', 30_000, async () => (canaryNumbers(canaryDir).length > 5 ? true : undefined), 500);
    const fillers = [join(podDir, 'drill-filler-1'), join(podDir, 'drill-filler-2')];
    const cpuBefore = cpuSeconds(ctx.agent.pid);
    const cpuBeforeAt = Date.now();
    let cleaned = false;
    const cleanup = () => {
      if (cleaned) return;
      cleaned = true;
      for (const f of fillers) rmSync(f, { force: true });
    };
    try {
      // Step 1: below the threshold, with a little room left (avail at 3% of the filesystem).
      const s1 = space(root);
      const reserved = s1.freeBytes - s1.availBytes;
      fillLeaving(fillers[0]!, root, reserved + 0.03 * s1.totalBytes);
      const filledAt = Date.now();
      ctx.log(`disk-full: ${figures.fs_mib} MiB filesystem filled to ${((space(root).availBytes / s1.totalBytes) * 100).toFixed(1)}% available`);
      const pressured = await eventually('DiskPressure True', 90_000, async () => {
        const n = await readNode();
        return condition(n, 'DiskPressure')?.status === 'True' ? n : undefined;
      }, 500);
      figures.seconds_to_disk_pressure = Number(((Date.now() - filledAt) / 1000).toFixed(1));
      const reason = condition(pressured, 'DiskPressure')?.reason;
      if (reason !== 'KubeletHasDiskPressure') throw new Error(`DiskPressure True with reason ${reason}, not KubeletHasDiskPressure`);

      // A new pod is refused as the kubelet's eviction manager refuses it; a critical one starts.
      await core.createNamespacedPod({ namespace: ns, body: pod(ctx, 'refused', 'sleep 3600') });
      const refused = await waitPhase(ns, 'refused', 'Failed (Evicted)', 30_000, (p) => p.status?.phase === 'Failed' || p.status?.phase === 'Running');
      if (refused.status?.phase !== 'Failed' || refused.status.reason !== 'Evicted') throw new Error(`a new pod under DiskPressure: phase ${refused.status?.phase}, reason ${refused.status?.reason} (the kubelet refuses it: Failed, Evicted)`);
      figures.new_pod_under_pressure = `Failed/${refused.status.reason}`;
      // system-node-critical: the API server makes it with the class, allowed in any namespace since 1.17.
      await core.createNamespacedPod({ namespace: ns, body: pod(ctx, 'critical', "trap 'exit 0' TERM; sleep 3600 & wait", { priorityClassName: 'system-node-critical' }) });
      await waitPhase(ns, 'critical', 'Running (critical pods are admitted under pressure)', 60_000, (p) => p.status?.phase === 'Running');
      figures.critical_pod_under_pressure = 'Running';
      const taint = (await readNode()).spec?.taints?.some((t) => t.key === 'node.kubernetes.io/disk-pressure');
      figures.disk_pressure_taint = taint === true;

      // Step 2: to the last block. A pod writes logs fast and takes what the second filler leaves
      // (a critical one: no other pod starts under DiskPressure).
      const writer = pod(ctx, 'writer', 'l=$(printf "%0200d" 0); while true; do yes "writer $l" | head -c 262144; sleep 0.5; done', { priorityClassName: 'system-node-critical' });
      await core.createNamespacedPod({ namespace: ns, body: writer });
      await waitPhase(ns, 'writer', 'Running', 60_000, (p) => p.status?.phase === 'Running');
      fillLeaving(fillers[1]!, root, 1 * MiB);
      await eventually('the filesystem to be full', 60_000, async () => {
        // A runtime that died of it says so here, not as a filesystem that never fills.
        await ctx.cri.version('0.1.0');
        // ext4 keeps clusters of its own that statfs counts free: full is when 64 KiB cannot be had.
        const probe = join(podDir, 'drill-probe');
        const full = !fallocate(probe, 64 * 1024);
        rmSync(probe, { force: true });
        return full ? true : undefined;
      }, 500);
      const fullAt = Date.now();
      const lastBeforeFull = Math.max(...canaryNumbers(canaryDir));
      ctx.log(`disk-full: full (${space(root).freeBytes} bytes free); holding ${holdMs / 1000} s`);
      const linesAtFull = ctx.agent.lines.length;
      const cpuAtFull = cpuSeconds(ctx.agent.pid);
      while (Date.now() - fullAt < holdMs) {
        await sleep(2000);
        if (!ctx.agent.alive()) throw new Error('nodelet died with the log filesystem full');
        const health = await ctx.agent.get('/healthz').catch((err: Error) => `error: ${err.message}`);
        if (!/ok/.test(health)) throw new Error(`nodelet /healthz with the disk full: ${health}`);
        await ctx.cri.version('0.1.0').catch((err: Error) => {
          throw new Error(`the runtime does not answer with the disk full: ${err.message}`);
        });
      }
      const heldS = (Date.now() - fullAt) / 1000;
      figures.cpu_cores_before = Number(((cpuAtFull - cpuBefore) / ((fullAt - cpuBeforeAt) / 1000)).toFixed(3));
      figures.cpu_cores_while_full = Number(((cpuSeconds(ctx.agent.pid) - cpuAtFull) / heldS).toFixed(3));
      figures.log_lines_per_second_while_full = Number(((ctx.agent.lines.length - linesAtFull) / heldS).toFixed(1));
      const warnings = ctx.agent.lines.slice(linesAtFull).filter((l) => l.level === 'warn' || l.level === 'error');
      figures.warnings_while_full = warnings.length;
      if (figures.cpu_cores_while_full > MAX_CPU_WHILE_FULL) throw new Error(`nodelet used ${figures.cpu_cores_while_full} cores with the disk full (a spin?)`);
      const fullNode = await readNode();
      if (condition(fullNode, 'Ready')?.status !== 'True') throw new Error(`the node is not Ready with the disk full: ${condition(fullNode, 'Ready')?.message}`);

      // Step 3: the space returns.
      await core.deleteNamespacedPod({ name: 'writer', namespace: ns, gracePeriodSeconds: 1 });
      cleanup();
      const freedAt = Date.now();
      const since = () => Number(((Date.now() - freedAt) / 1000).toFixed(1));
      // Both measured from the moment the space returned.
      const [noPressure, flowing] = await Promise.all([
        eventually('DiskPressure False', 90_000, async () => (condition(await readNode(), 'DiskPressure')?.status === 'False' ? since() : undefined), 500),
        eventually('canary lines after the space returned', 60_000, async () => {
          const nums = canaryNumbers(canaryDir);
          return Math.max(...nums) > lastBeforeFull + 20 ? { nums, at: since() } : undefined;
        }, 500),
      ]);
      figures.seconds_to_no_disk_pressure = noPressure;
      // Held for the transition period after its last observation (the status is computed every 10 s).
      if (noPressure < PRESSURE_TRANSITION_SECONDS - 10) throw new Error(`DiskPressure False ${noPressure} s after the space returned, within the ${PRESSURE_TRANSITION_SECONDS} s transition period`);
      figures.seconds_to_logs_flowing = flowing.at;
      // Lines the canary wrote from its first to its last, against those its log has.
      const kept = new Set(flowing.nums);
      const first = Math.min(...kept);
      const last = Math.max(...kept);
      figures.canary_lines_written = last - first + 1;
      figures.canary_lines_lost = last - first + 1 - kept.size;
      ctx.log(`disk-full: canary ${figures.canary_lines_written} lines, ${figures.canary_lines_lost} lost while full`);
      // The process runtime holds a container's output back while its log cannot be written.
      if (ctx.runtime.name === 'process' && figures.canary_lines_lost > 0) throw new Error(`${figures.canary_lines_lost} canary lines lost while the disk was full`);

      const after = await core.createNamespacedPod({ namespace: ns, body: pod(ctx, 'after', "trap 'exit 0' TERM; sleep 3600 & wait") });
      const startAt = Date.now();
      await waitPhase(ns, after.metadata!.name!, 'Running after the space returned', 60_000, (p) => p.status?.phase === 'Running');
      figures.seconds_new_pod_running_after = Number(((Date.now() - startAt) / 1000).toFixed(1));

      // The containers that stood through it are the same, not restarted.
      const now = await standing(ctx);
      const changed = [...before].filter(([k, v]) => now.get(k) !== v).map(([k, v]) => `${k}: ${v} -> ${now.get(k) ?? 'gone'}`);
      if (changed.length) throw new Error(`standing containers changed: ${changed.join('; ')}`);
      const canaryNow = (await core.readNamespacedPod({ name: 'canary', namespace: ns })).status?.containerStatuses?.[0];
      if (canaryNow?.containerID !== canaryID || canaryNow?.restartCount) throw new Error(`the canary changed: ${canaryID} -> ${canaryNow?.containerID}, ${canaryNow?.restartCount} restarts`);
      if (!ctx.agent.alive()) throw new Error('nodelet died');
      return figures;
    } finally {
      cleanup();
      for (const name of ['writer', 'canary', 'refused', 'critical', 'after']) await core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 1 }).catch(() => undefined);
    }
  },
};
