// A node API the API server will proxy to. Its node proxy (`/api/v1/nodes/<n>/proxy/...`, which
// the kubelet's node e2e suite reads /configz through) refuses loopback addresses, and on this
// machine only loopback and network namespaces of our own may receive test traffic. So the node's
// address lives in a network namespace made here, behind a veth pair, and what arrives there is
// carried to the agent's loopback port through a unix socket (which no network namespace confines).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const NETNS = 'nodelet-node-api';
const HOST_LINK = 'nodeletapi0';
const PEER_LINK = 'eth0';
const HOST_SIDE_IP = '10.253.0.1';

export interface ExposedNodeApi {
  /** The node's InternalIP: the address in the namespace that forwards to the agent's port. */
  ip: string;
  port: number;
  close(): void;
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
}

/** Removes the namespace and its veth pair (deleting the namespace deletes the pair). */
export function removeNodeApiNetns(): void {
  spawnSync('ip', ['netns', 'del', NETNS]);
  spawnSync('ip', ['link', 'del', HOST_LINK]);
}

function makeNetns(address: string): void {
  removeNodeApiNetns();
  ip('netns', 'add', NETNS);
  ip('link', 'add', HOST_LINK, 'type', 'veth', 'peer', 'name', PEER_LINK, 'netns', NETNS);
  ip('addr', 'add', `${HOST_SIDE_IP}/30`, 'dev', HOST_LINK);
  ip('link', 'set', HOST_LINK, 'up');
  ip('netns', 'exec', NETNS, 'ip', 'addr', 'add', `${address}/30`, 'dev', PEER_LINK);
  ip('netns', 'exec', NETNS, 'ip', 'link', 'set', PEER_LINK, 'up');
  ip('netns', 'exec', NETNS, 'ip', 'link', 'set', 'lo', 'up');
}

/**
 * Makes `address:port` (inside the namespace) lead to 127.0.0.1:`port` on this machine, with two
 * socat processes: one listening in the namespace, one on this side dialing the agent.
 */
export async function exposeNodeApi(address: string, port: number, workDir: string): Promise<ExposedNodeApi> {
  makeNetns(address);
  const socket = join(workDir, 'node-api.sock');
  rmSync(socket, { force: true });
  const procs: ChildProcess[] = [
    spawn('socat', [`UNIX-LISTEN:${socket},fork,mode=600`, `TCP:127.0.0.1:${port}`], { stdio: 'ignore' }),
  ];
  for (let i = 0; i < 50 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 100));
  if (!existsSync(socket)) throw new Error(`socat did not make ${socket}`);
  procs.push(spawn('ip', ['netns', 'exec', NETNS, 'socat', `TCP-LISTEN:${port},bind=${address},fork,reuseaddr`, `UNIX-CONNECT:${socket}`], { stdio: 'ignore' }));
  // Until the namespace's listener answers, the API server would see a refused connection.
  for (let i = 0; i < 50; i++) {
    if (spawnSync('ip', ['netns', 'exec', NETNS, 'ss', '-Hltn', `sport = :${port}`], { encoding: 'utf8' }).stdout.trim()) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    ip: address,
    port,
    close() {
      for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
      rmSync(socket, { force: true });
      removeNodeApiNetns();
    },
  };
}
