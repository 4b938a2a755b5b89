// Each test agent's pods' cgroups under a root of its own (/nodelet-tests/<node>): agents on one
// machine never share a kubepods, whose pod cgroups each would take for orphans of its own and remove.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from './cluster.js';

/** deploy/cgroup-root.sh: makes or removes a cgroupfs path in every hierarchy (a lab node reads it from the host's root). */
export const CGROUP_ROOT_SCRIPT = join(projectRoot, 'deploy/cgroup-root.sh');
const SCRIPT = CGROUP_ROOT_SCRIPT;

export const agentCgroupRoot = (nodeName: string) => `/nodelet-tests/${nodeName}`;

/** argv run after its cgroup root is made (in every hierarchy of wherever argv runs): sh execs it, signals reach it. */
export function withCgroupRoot(root: string, argv: string[]): string[] {
  return ['sh', '-c', '"$0" make "$1" && shift && exec "$@"', SCRIPT, root, ...argv];
}

/** Removes a root's empty cgroups on this machine (those of processes still running stay). */
export function removeCgroupRoot(root: string): void {
  spawnSync(SCRIPT, ['remove', root], { stdio: 'ignore' });
}
