// The order in which a pod with sidecars stops (the kubelet's terminationOrdering): every container
// is told to stop at once, but a sidecar's stop signal waits until the app containers and the
// sidecars after it have stopped, or until its grace period runs out.
import type { V1Pod } from '@kubernetes/client-node';
import { raceAbort } from '../util/abort.js';
import type { Clock } from '../util/clock.js';
import { isRestartableInitContainer } from './pod-actions.js';

interface Gate {
  done: Promise<void>;
  open(): void;
}

function gate(open: boolean): Gate {
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  if (open) resolve();
  return { done, open: resolve };
}

export class TerminationOrdering {
  private readonly terminated = new Map<string, Gate>();
  private readonly prereqs = new Map<string, Gate[]>();

  constructor(pod: V1Pod, runningNames: string[]) {
    const running = new Set(runningNames);
    const mains: Gate[] = [];
    for (const c of pod.spec?.containers ?? []) {
      const g = gate(!running.has(c.name));
      this.terminated.set(c.name, g);
      mains.push(g);
    }
    let laterSidecar: string | undefined;
    for (const c of [...(pod.spec?.initContainers ?? [])].reverse()) {
      this.terminated.set(c.name, gate(!running.has(c.name)));
      if (!isRestartableInitContainer(c)) continue;
      const waits = [...mains];
      if (laterSidecar) waits.push(this.terminated.get(laterSidecar)!);
      this.prereqs.set(c.name, waits);
      laterSidecar = c.name;
    }
  }

  /** Waits for the container's turn, at most `graceSeconds`; the seconds waited. */
  async waitForTurn(name: string, graceSeconds: number, clock: Clock, cutShort?: AbortSignal): Promise<number> {
    const waits = this.prereqs.get(name);
    if (graceSeconds <= 0 || !waits?.length) return 0;
    const start = clock.now();
    let timer: { cancel(): void } | undefined;
    const outOfTime = new Promise<void>((r) => (timer = clock.setTimer(graceSeconds * 1000, r)));
    await raceAbort(Promise.race([Promise.all(waits.map((g) => g.done)), outOfTime]), cutShort);
    timer?.cancel();
    return (clock.now() - start) / 1000;
  }

  containerTerminated(name: string): void {
    this.terminated.get(name)?.open();
  }
}

export function hasRestartableInitContainer(pod: V1Pod | undefined): boolean {
  return (pod?.spec?.initContainers ?? []).some(isRestartableInitContainer);
}
