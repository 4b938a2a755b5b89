// Time is injected: backoff, GC, probes and leases take a Clock, so tests of minutes run in milliseconds.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` after `ms` milliseconds unless cancelled first. */
  setTimer(ms: number, fn: () => void): Timer;
  sleep(ms: number): Promise<void>;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Polls `done` every `stepMs` until it holds or `deadlineMs` (clock time) has passed; whether it held. */
export async function waitUntil(clock: Clock, done: () => boolean, deadlineMs: number, stepMs = 200): Promise<boolean> {
  while (!done() && clock.now() < deadlineMs) await clock.sleep(stepMs);
  return done();
}

/** A clock that moves only when told to; timers fire in order as time passes them. */
export class FakeClock implements Clock {
  private timers: Array<{ at: number; seq: number; fn: () => void; cancelled: boolean }> = [];
  private seq = 0;

  constructor(private current = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.current;
  }

  setTimer(ms: number, fn: () => void): Timer {
    const t = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(t);
    return { cancel: () => (t.cancelled = true) };
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimer(ms, resolve));
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  step(ms: number): void {
    const until = this.current + ms;
    for (;;) {
      const due = this.timers.filter((t) => !t.cancelled && t.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.at);
      due.fn();
    }
    this.current = until;
    this.timers = this.timers.filter((t) => !t.cancelled);
  }

  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }
}

/**
 * A clock that counts its timers not yet fired or cancelled (sleeps included), so that /metrics
 * can show whether they pile up: a timer leaked per pod is a slope under churn.
 */
export class CountingClock implements Clock {
  private active = 0;

  constructor(private readonly inner: Clock) {}

  get activeTimers(): number {
    return this.active;
  }

  now(): number {
    return this.inner.now();
  }

  setTimer(ms: number, fn: () => void): Timer {
    let live = true;
    const done = () => {
      if (!live) return false;
      live = false;
      this.active--;
      return true;
    };
    this.active++;
    const t = this.inner.setTimer(ms, () => {
      if (done()) fn();
    });
    return {
      cancel: () => {
        done();
        t.cancel();
      },
    };
  }

  async sleep(ms: number): Promise<void> {
    this.active++;
    try {
      await this.inner.sleep(ms);
    } finally {
      this.active--;
    }
  }
}
