// Tests whose steps build on each other (a DaemonSet, then its pods, then its update; a lab, then
// its pods, then attacks on it): once one step fails, the later ones are skipped with the reason
// "an earlier step failed" rather than each timing out on what is already broken; the run still
// fails, on the step that did.
import { test, type TestContext } from 'node:test';

export function steps(): (name: string, fn: (t: TestContext) => Promise<void>) => void {
  let broken = false;
  return (name, fn) =>
    test(name, async (t) => {
      if (broken) return t.skip('an earlier step failed');
      try {
        await fn(t);
      } catch (err) {
        broken = true;
        throw err;
      }
    });
}
