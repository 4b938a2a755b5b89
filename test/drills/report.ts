// The figures of a `make drills` run as a Markdown table, written into README.md between its
// drills-results markers: `node dist/test/drills/report.js [results.json] [--readme]`.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../support/cluster.js';

interface Result {
  drill: string;
  runtime: string;
  ok: boolean;
  seconds: number;
  figures: Record<string, number | string | boolean>;
  invariants: Record<string, number | string | boolean>;
}

const round = (v: unknown) => (typeof v === 'number' ? String(Math.round(v * 10) / 10) : String(v));

/** The figures that say most about each drill, in words: {key} is a figure; a phrase shows when all its figures are there. */
const HEADLINE: Record<string, string[]> = {
  'agent-kill': ['all running {createRecoverySeconds} s after the restart (mid-create)', 'all gone {deleteRecoverySeconds} s after the restart (mid-delete)'],
  'runtime-restart': ['NotReady after {notReadySeconds} s', 'Ready {readySeconds} s after the runtime is back', 'killed containers running {restartedSeconds} s after'],
  'apiserver-down': ['status caught up {statusCaughtUpSeconds} s after', 'events {eventsCaughtUpSeconds} s after', 'a pod runs {podAfterEtcdSeconds} s after etcd restarts'],
  'watch-faults': ['changes seen {stallChangesSeenSeconds} s into a silent watch', 'after 410 Gone in {goneChangesSeenSeconds} s'],
  'bad-input': ['{pods} bad pods, {staticManifests} bad static manifests, {configs} bad config files, {flags} bad flag lines', 'every pod its reason and event in {secondsToAllReasons} s'],
  churn: [
    '{pods_created} pods at {pods_per_second}/s',
    'API requests per pod {api_requests_per_pod_first_half}, then {api_requests_per_pod_second_half}',
    'RSS {rss_base_mib} MiB, {rss_end_mib} at the end, {rss_after_mib} after',
    'slopes per minute: RSS {rss_mib_slope_per_min} MiB, pod workers {pod_workers_slope_per_min}, timers {timers_slope_per_min}, handles {handles_slope_per_min}, fds {open_fds_slope_per_min}',
  ],
  'disk-full': ['DiskPressure in {seconds_to_disk_pressure} s', 'a new pod {new_pod_under_pressure}', 'False {seconds_to_no_disk_pressure} s after space returns', '{canary_lines_lost} of {canary_lines_written} log lines lost while full'],
};

function words(r: Result): string {
  const phrases: string[] = [];
  for (const template of HEADLINE[r.drill] ?? []) {
    const keys = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    if (keys.every((k) => r.figures[k] !== undefined)) phrases.push(template.replace(/\{(\w+)\}/g, (_, k: string) => round(r.figures[k])));
  }
  return phrases.join('; ');
}

export function table(run: { date: string; commit: string; reduced: boolean; seconds: number; results: Result[] }): string {
  const lines = [
    `Last run: ${run.date.slice(0, 10)}, commit ${run.commit}, ${run.reduced ? 'the short run' : 'full'}, ${Math.round(run.seconds / 60)} min on 2 cores; every figure of a run in \`test/drills/results/latest.json\` (not kept in git, as bench results).`,
    '',
    '| drill | runtime | result | took | figures | status converged | nothing left after | fds vs settled |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of run.results) {
    if (r.drill === 'teardown') {
      lines.push(`| teardown | ${r.runtime} | ${r.ok ? 'ok' : '**FAIL**'} | | every pod deleted; ${round(r.figures.containersSeen)} containers and ${round(r.figures.sandboxesSeen)} sandboxes seen in all, none left | | | |`);
      continue;
    }
    const inv = r.invariants;
    lines.push(`| ${r.drill} | ${r.runtime} | ${r.ok ? 'ok' : '**FAIL**'} | ${round(r.seconds)} s | ${words(r)} | ${inv.convergeSeconds !== undefined ? `${round(inv.convergeSeconds)} s` : ''} | ${inv.leftoverSeconds !== undefined ? `${round(inv.leftoverSeconds)} s` : ''} | ${inv.agentFdsDelta !== undefined ? round(inv.agentFdsDelta) : ''} |`);
  }
  return lines.join('\n');
}

function main(): void {
  const args = process.argv.slice(2);
  const file = args.find((a) => !a.startsWith('--')) ?? join(projectRoot, 'test/drills/results/latest.json');
  const text = table(JSON.parse(readFileSync(file, 'utf8')));
  if (!args.includes('--readme')) {
    console.log(text);
    return;
  }
  const readme = join(projectRoot, 'README.md');
  const begin = '<!-- drills-results:begin -->';
  const end = '<!-- drills-results:end -->';
  const body = readFileSync(readme, 'utf8');
  const a = body.indexOf(begin);
  const b = body.indexOf(end);
  if (a < 0 || b < a) throw new Error(`README.md lacks the ${begin} ... ${end} markers`);
  writeFileSync(readme, `${body.slice(0, a + begin.length)}\n${text}\n${body.slice(b)}`);
}

main();
