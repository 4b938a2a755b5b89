// Stopping a container's process as containerd's StopContainer does: SIGTERM, up to the timeout
// for it to exit, then SIGKILL; returns once its exit is recorded by its monitor (or it is gone).
import { catchesSigterm, processRunning, readExitCode } from './procfs.js';

/** Whether the process is gone when this returns. */
export async function stopContainerProcess(c: { pid: number; pidStart?: string; isolation?: string }, dir: string, timeoutSeconds: number): Promise<boolean> {
  const alive = () => processRunning(c) && readExitCode(dir) === undefined;
  // Under proot the PID is the monitor shell's, the leader of the container's process group.
  const target = c.isolation === 'proot' ? -c.pid : c.pid;
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(target, sig);
    } catch {
      /* already gone */
    }
  };
  if (timeoutSeconds > 0) {
    // The container's process is PID 1 of its namespace, which only gets the signals it has a
    // handler for: a SIGTERM sent just before the handler is installed is lost, so it is sent
    // once more when the handler appears (a process that never installs one waits for SIGKILL).
    let handled = catchesSigterm(c.pid);
    signal('SIGTERM');
    const deadline = Date.now() + timeoutSeconds * 1000;
    while (alive() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      if (!handled && catchesSigterm(c.pid)) {
        handled = true;
        signal('SIGTERM');
      }
    }
  }
  if (alive()) signal('SIGKILL'); // the init of its PID namespace: everything in it goes
  const deadline = Date.now() + 10_000;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  // The monitor records the exit code a moment after the process ends; then the container is
  // exited when this call returns (the grace the ticker gives is spent here).
  const recorded = Date.now() + 1000;
  while (readExitCode(dir) === undefined && Date.now() < recorded) await new Promise((r) => setTimeout(r, 10));
  return !alive();
}
