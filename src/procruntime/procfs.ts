// What the process runtime reads of a process in /proc: whether it handles SIGTERM, whether it
// has exec'd away from its parent's program, its start time (which tells a PID reused); and the
// exit code a container's monitor wrote.
import { readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** Whether `pid` has a handler for SIGTERM (bit 15 of SigCgt in /proc/PID/status). */
export function catchesSigterm(pid: number): boolean {
  try {
    const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m !== null && (BigInt(`0x${m[1]}`) & (1n << 14n)) !== 0n;
  } catch {
    return false;
  }
}

/** Whether `pid` has exec'd away from its parent's program (proot's shell forks, then execs proot). */
export function execedFromParent(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
    return readlinkSync(`/proc/${pid}/exe`) !== readlinkSync(`/proc/${ppid}/exe`);
  } catch {
    return true; // gone, or not ours to look at: nothing to wait for
  }
}

export function procStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Whether a container's process still runs: its PID with the start time recorded at start. A
 * process gone before its start time could be read is not running (an unknown start time must
 * not compare equal to the unknown start time of a PID that is gone).
 */
export function processRunning(c: { pid?: number; pidStart?: string }): boolean {
  return c.pid !== undefined && c.pidStart !== undefined && procStart(c.pid) === c.pidStart;
}

/** The exit code a container's monitor wrote to <dir>/status.json, once it has. */
export function readExitCode(dir: string): number | undefined {
  try {
    const m = /"exit-code"\s*:\s*(-?\d+)/.exec(readFileSync(join(dir, 'status.json'), 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Under proot, or in a PID namespace the container shares, there is no PID namespace whose end
 * takes every process with it: what the container started and left running (its process group)
 * goes when it ends, as in a container.
 */
export function killLeftovers(c: { isolation?: string; pid?: number; pgid?: number }): void {
  // In a PID namespace shared with the pod, the container's end does not end what it started either:
  // its process group goes (the container's session keeps it together).
  const group = c.isolation === 'proot' ? c.pid : c.pgid;
  if (group === undefined) return;
  try {
    process.kill(-group, 'SIGKILL');
  } catch {
    /* none left */
  }
}

/** The process group of `pid` (field 5 of /proc/PID/stat). */
export function processGroup(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return undefined;
  }
}

/** Every mount of the runtime's mount namespace: its point (mountinfo's octal escapes undone) and filesystem type. */
export function mounts(): Array<{ point: string; fstype: string }> {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const f = l.split(' ');
        const dash = f.indexOf('-');
        return { point: (f[4] ?? '').replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8))), fstype: dash > 0 ? (f[dash + 1] ?? '') : '' };
      });
  } catch {
    return [];
  }
}

/** Every mount point of the runtime's mount namespace. */
export function mountPoints(): Set<string> {
  return new Set(mounts().map((m) => m.point));
}

/** The runtime's mount points under `dir`, deepest first. */
export function mountPointsUnder(dir: string): string[] {
  return [...mountPoints()].filter((p) => p.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length);
}
