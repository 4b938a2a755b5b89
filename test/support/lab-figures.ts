// What the lab lane reads off a node about one container (its cgroup v2 files, its OOM score, where
// an exec lands) and off the host (its process count, its available memory), and the figures in
// which nodelet is known to differ from the kubelet's node, each with the issue that closes it.
import { readdirSync, readFileSync } from 'node:fs';
import { eventually } from './cluster.js';
import { kubectl, labSh0, type LabAgent } from './lab.js';

export interface Figures {
  /** The container's cgroup, the pod's UID and the container's ID replaced by <uid> and <container>. */
  path: string;
  'memory.max': string;
  'cpu.max': string;
  'cpu.weight': string;
  'pids.max': string;
  'memory.oom.group': string;
  /** The same files one level up: the pod's cgroup, where the kubelet's node has one. */
  'pod memory.max': string;
  'pod cpu.max': string;
  oom_score_adj: string;
  /** Where a `kubectl exec` process lands: "the container's" cgroup, or elsewhere (the path). */
  'exec cgroup': string;
}

const FILES = ['memory.max', 'cpu.max', 'cpu.weight', 'pids.max', 'memory.oom.group'] as const;

/** The cgroup (v2, from the node's root) and OOM score of the one process whose command line is `sleep MARKER`. */
async function processCgroup(node: string, marker: string): Promise<{ pid: string; cgroup: string; oomScoreAdj: string }> {
  return eventually(`sleep ${marker} on ${node}`, 30_000, async () => {
    const out = await labSh0(node, `p=$(pgrep -xf 'sleep ${marker}' | head -1); [ -n "$p" ] && echo "$p" && sed -n 's/^0:://p' /proc/$p/cgroup && cat /proc/$p/oom_score_adj || true`);
    const [pid, cgroup, oomScoreAdj] = out.trim().split('\n');
    return pid && cgroup && oomScoreAdj ? { pid, cgroup, oomScoreAdj } : undefined;
  }, 500);
}

function normalize(path: string, uid: string, containerId: string): string {
  return path
    .split('/')
    .map((seg) => seg.replace(uid, '<uid>').replace(uid.replaceAll('-', '_'), '<uid>'))
    .map((seg) => (seg.includes(containerId) ? seg.replace(/^.*$/, '<container>') : seg))
    .join('/');
}

/**
 * The figures of a running pod's container on a lab node: its main process runs `sleep MARKER`;
 * an exec of `sleep MARKER+200` shows where exec sessions land.
 */
export async function cgroupFigures(node: string, uid: string, containerID: string, marker: string, pod: string): Promise<Figures> {
  const main = await processCgroup(node, marker);
  const id = containerID.replace(/^[\w-]+:\/\//, '');
  const dir = `/sys/fs/cgroup${main.cgroup}`;
  const read = async (d: string) => {
    const script = FILES.map((f) => `cat ${d}/${f} 2>/dev/null || echo absent`).join('; ');
    const lines = (await labSh0(node, script)).trim().split('\n');
    return Object.fromEntries(FILES.map((f, i) => [f, lines[i] ?? 'absent'])) as Record<(typeof FILES)[number], string>;
  };
  const own = await read(dir);
  const parent = await read(dir.replace(/\/[^/]+$/, ''));
  const execMarker = String(Number(marker) + 200);
  const session = kubectl(['exec', pod, '--', 'sleep', execMarker], undefined, 60_000);
  let execCgroup: string;
  try {
    const p = await processCgroup(node, execMarker);
    execCgroup = p.cgroup === main.cgroup ? "the container's" : `elsewhere: ${normalize(p.cgroup, uid, id)}`;
    await labSh0(node, `kill ${p.pid}`);
  } finally {
    await session;
  }
  return {
    path: normalize(main.cgroup, uid, id),
    ...own,
    'pod memory.max': parent['memory.max'],
    'pod cpu.max': parent['cpu.max'],
    oom_score_adj: main.oomScoreAdj,
    'exec cgroup': execCgroup,
  };
}

/** Where each of nodelet's agents differs from the kubelet's node on cgroup v2, measured in the lab. */
export function figureGaps(agent: LabAgent): Partial<Record<keyof Figures, string>> {
  // None left: the kubepods hierarchy, the pod's cgroup and memory.oom.group came with issue #35.
  switch (agent) {
    case 'nodelet-containerd':
    case 'nodelet-process':
    case 'kubelet':
      return {};
  }
}

/** The host's processes, from /proc. */
export function hostPids(): string[] {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d));
}

export function memAvailableBytes(): number {
  const m = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return Number(m![1]) * 1024;
}
