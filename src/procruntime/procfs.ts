// What the process runtime reads of a process in /proc: whether it handles SIGTERM, whether it
// has exec'd away from its parent's program, and its start time (which tells a PID reused).
import { readFileSync, readlinkSync } from 'node:fs';

/** Whether `pid` has a handler for SIGTERM (bit 15 of SigCgt in /proc/PID/status). */
export function catchesSigterm(pid: number): boolean {
  try {
    const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m !== null && (BigInt(`0x${m[1]}`) & (1n << 14n)) !== 0n;
  } catch {
    return false;
  }
}

/** Whether `pid` has exec'd away from its parent's program (bubblewrap forks, then execs the command). */
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
