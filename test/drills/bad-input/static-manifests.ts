// Bad static manifests (test/drills/bad-static/): each file's first line "# drills: REGEX" is what
// the agent's log line about it must say ("runs" for the good one). A file without that line (the
// empty one) must still be reported, as empty.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface StaticCase {
  file: string;
  /** The manifest with ${NAMESPACE} and ${TEST_IMAGE} filled in (bytes: one file is binary on purpose). */
  content: Buffer;
  /** undefined for the good one, which must run. */
  expectLog?: RegExp;
  /** The good one's pod name (its mirror pod is <name>-<node>). */
  podName?: string;
}

export function loadStaticCases(dir: string, values: { NAMESPACE: string; TEST_IMAGE: string }): StaticCase[] {
  return readdirSync(dir)
    .sort()
    .map((file) => {
      const raw = readFileSync(join(dir, file));
      const text = raw.toString('latin1');
      const filled = Buffer.from(text.replace(/\$\{NAMESPACE\}/g, values.NAMESPACE).replace(/\$\{TEST_IMAGE\}/g, values.TEST_IMAGE), 'latin1');
      const m = /^# drills: (.*)$/m.exec(text);
      if (m?.[1] === 'runs') return { file, content: filled, podName: /^\s+name: (\S+)$/m.exec(text)?.[1] };
      return { file, content: filled, expectLog: new RegExp(m?.[1] ?? 'empty') };
    });
}

/** The log line about `file` (a path ending in it) whose text matches, if any. */
export function findLogLine(lines: ReadonlyArray<Record<string, unknown>>, file: string, expect: RegExp): Record<string, unknown> | undefined {
  return lines.find((l) => {
    const where = String(l.file ?? l.path ?? '');
    if (!where.endsWith(`/${file}`) && !where.includes(`/${file} (`)) return false;
    return expect.test(`${l.message ?? ''}: ${l.error ?? ''}`);
  });
}

/** Every log line naming `file`, for a failure report. */
export function linesAbout(lines: ReadonlyArray<Record<string, unknown>>, file: string): string[] {
  return lines.filter((l) => String(l.file ?? l.path ?? '').includes(`/${file}`)).map((l) => `${l.level} ${l.message}: ${l.error ?? ''}`);
}
