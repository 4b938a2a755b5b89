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

/** The figures that say most about each drill, in words. */
const HEADLINE: Record<string, Array<[string, string]>> = {
  'agent-kill': [['createRecoverySeconds', 'all running %s s after the restart (mid-create)'], ['deleteRecoverySeconds', 'all gone %s s after the restart (mid-delete)']],
  'runtime-restart': [['notReadySeconds', 'NotReady after %s s'], ['readySeconds', 'Ready %s s after the runtime is back'], ['restartedSeconds', 'killed containers running %s s after']],
  'apiserver-down': [['statusCaughtUpSeconds', 'status caught up %s s after'], ['eventsCaughtUpSeconds', 'events %s s after'], ['podAfterEtcdSeconds', 'a pod runs %s s after etcd restarts']],
  'watch-faults': [['stallChangesSeenSeconds', 'changes seen %s s into a silent watch'], ['goneChangesSeenSeconds', 'after 410 Gone in %s s']],
  'bad-input': [['pods', '%s bad pods'], ['staticManifests', '%s bad static manifests'], ['configs', '%s bad config files'], ['flags', '%s bad flag lines'], ['secondsToAllReasons', 'every pod its reason and event in %s s']],
  churn: [['pods_created', '%s pods'], ['pods_per_second', 'at %s/s'], ['api_requests_per_pod_first_half', 'API requests per pod %s'], ['api_requests_per_pod_second_half', 'then %s'], ['rss_base_mib', 'RSS %s MiB'], ['rss_end_mib', '→ %s'], ['rss_after_mib', '→ %s MiB after'], ['pod_workers_slope_per_min', 'workers slope %s/min'], ['timers_slope_per_min', 'timers slope %s/min'], ['handles_slope_per_min', 'handles slope %s/min']],
  'disk-full': [['seconds_to_disk_pressure', 'DiskPressure in %s s'], ['new_pod_under_pressure', 'a new pod %s'], ['seconds_to_no_disk_pressure', 'cleared %s s after space returns'], ['canary_lines_lost', '%s log lines lost while full']],
};

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
    const words = (HEADLINE[r.drill] ?? []).filter(([k]) => r.figures[k] !== undefined).map(([k, text]) => text.replace('%s', round(r.figures[k])));
    const inv = r.invariants;
    lines.push(`| ${r.drill} | ${r.runtime} | ${r.ok ? 'ok' : '**FAIL**'} | ${round(r.seconds)} s | ${words.join('; ')} | ${inv.convergeSeconds !== undefined ? `${round(inv.convergeSeconds)} s` : ''} | ${inv.leftoverSeconds !== undefined ? `${round(inv.leftoverSeconds)} s` : ''} | ${inv.agentFdsDelta !== undefined ? round(inv.agentFdsDelta) : ''} |`);
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
