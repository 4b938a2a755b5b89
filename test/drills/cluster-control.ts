// Stopping and starting the test cluster's own components (etcd, kube-apiserver, containerd) for the
// drills: by the PIDs hack/cluster-up.sh recorded (only processes it started), and started again by
// hack/cluster-up.sh itself, which starts whatever is missing and waits for it.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { clusterEnv, eventually, projectRoot } from '../support/cluster.js';

export type Component = 'etcd' | 'kube-apiserver' | 'containerd';

/** The PID cluster-up.sh recorded for a component, if that process is still the one it started. */
export function componentPid(name: Component): number | undefined {
  const dir = clusterEnv().clusterDir;
  const pidFile = join(dir, `${name}.pid`);
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  try {
    return readlinkSync(`/proc/${pid}/exe`) === readFileSync(join(dir, `${name}.exe`), 'utf8').trim() ? pid : undefined;
  } catch {
    return undefined;
  }
}

function gone(pid: number): boolean {
  try {
    // A zombie has exited: cluster-up.sh's shell may not have reaped it.
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    return true;
  }
}

/** SIGTERM (SIGKILL after 15 s), and waits until it has exited. */
export async function stopComponent(name: Component, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const pid = componentPid(name);
  if (pid === undefined) throw new Error(`${name} is not running (no live PID in .cluster/${name}.pid)`);
  process.kill(pid, signal);
  try {
    await eventually(`${name} (pid ${pid}) to exit`, 15_000, async () => (gone(pid) ? true : undefined), 100);
  } catch {
    process.kill(pid, 'SIGKILL');
    await eventually(`${name} (pid ${pid}) to die`, 5000, async () => (gone(pid) ? true : undefined), 100);
  }
}

/** hack/cluster-up.sh: starts every stopped component and waits until each serves. */
export function startComponents(): void {
  const r = spawnSync(join(projectRoot, 'hack/cluster-up.sh'), { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 180_000 });
  if (r.status !== 0) throw new Error(`hack/cluster-up.sh exited ${r.status}: ${r.stderr.slice(-2000)}`);
}

/** etcd's current revision and a compaction up to it (etcd's v3 JSON gateway on its client port). */
export async function compactEtcd(): Promise<number> {
  const port = etcdPort();
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`etcd ${path}: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as { header?: { revision?: string } };
  };
  // A range over nothing still carries the store's revision in its header.
  const head = await post('/v3/kv/range', { key: Buffer.from('\0').toString('base64') });
  const revision = Number(head.header?.revision ?? 0);
  await post('/v3/kv/compaction', { revision: String(revision), physical: true });
  return revision;
}

function etcdPort(): number {
  const env = readFileSync(join(projectRoot, 'hack/cluster-lib.sh'), 'utf8');
  const m = /ETCD_PORT=\$\{NODELET_ETCD_PORT:-(\d+)\}/.exec(env);
  return Number(process.env.NODELET_ETCD_PORT ?? m?.[1] ?? 23790);
}
