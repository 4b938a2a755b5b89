// A suite's cases, all or some: the lab lane of make test runs a few cases of a suite on each
// runtime of a lab node (the whole suites run there with make test-lab). A name asked for that no
// case has fails the run, so a renamed case cannot drop out of the lane unseen.
import { test, after } from 'node:test';

export interface SuiteOptions {
  /** The cases to run, by the start of their names; all when absent. */
  cases?: string[];
}

type TestFn = typeof test;

/** The suite's `test`: node:test's own, or one that registers only the cases asked for. */
export function casesOf(opts: SuiteOptions = {}): TestFn {
  const wanted = opts.cases;
  if (!wanted) return test;
  const found = new Set<string>();
  after(() => {
    const missing = wanted.filter((w) => !found.has(w));
    if (missing.length) throw new Error(`no case of the suite starts with: ${missing.join('; ')}`);
  });
  return ((name: string, ...rest: unknown[]) => {
    const hit = wanted.find((w) => name.startsWith(w));
    if (!hit) return undefined;
    found.add(hit);
    return (test as (...a: unknown[]) => unknown)(name, ...rest);
  }) as TestFn;
}
