// Bad config files and bad flags (test/drills/bad-config/): `nodelet run` must refuse each with exit
// code 2 and one line naming what is wrong, not start, and not print a stack trace. (A file may say
// "# exit: 1": a valid config whose failure is found only when starting.)
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CliCase {
  /** The config file's name, or "flags.txt:<line>". */
  name: string;
  args: string[];
  /** Regex for the one line; FILE stands for the config file's path. */
  expect: RegExp;
  /** 2 (a mistake in the file or flags), or what the file's "# exit: N" line says. */
  exitCode: number;
  file?: string;
}

export function loadCliCases(dir: string): CliCase[] {
  const cases: CliCase[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()) {
    const file = join(dir, name);
    const m = /^# expect: (.*)$/m.exec(readFileSync(file, 'utf8'));
    if (!m) throw new Error(`${file}: no "# expect: REGEX" line`);
    const exit = /^# exit: (\d+)$/m.exec(readFileSync(file, 'utf8'));
    cases.push({ name, args: ['--config', file], expect: new RegExp(m[1]!), exitCode: exit ? Number(exit[1]) : 2, file });
  }
  readFileSync(join(dir, 'flags.txt'), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (!line.trim() || line.startsWith('#')) return;
      const sep = line.indexOf(' => ');
      if (sep < 0) throw new Error(`flags.txt:${i + 1}: no " => "`);
      cases.push({ name: `flags.txt:${i + 1}`, args: line.slice(0, sep).trim().split(/\s+/), expect: new RegExp(line.slice(sep + 4)), exitCode: 2 });
    });
  return cases;
}

interface Outcome {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

function runOnce(cli: string, args: string[], cwd: string): Promise<Outcome> {
  return new Promise((resolve) => {
    // Nothing of the caller's environment: no KUBERNETES_SERVICE_HOST or NODELET_* to change the outcome.
    const child = spawn(cli, ['run', ...args], { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    // An accepted config would start an agent: it must not be left running.
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, 60_000);
    child.once('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr, timedOut });
    });
  });
}

function judge(c: CliCase, r: Outcome): string | undefined {
  const stderr = r.stderr.replace(/\n$/, '');
  const lines = stderr.split('\n').filter((l) => l !== '');
  const masked = (t: string) => (c.file ? t.split(c.file).join('FILE') : t);
  const problems: string[] = [];
  if (r.timedOut) problems.push('still running after 60 s (the config was accepted)');
  if (r.status !== c.exitCode) problems.push(`exit code ${r.status ?? r.signal}, not ${c.exitCode}`);
  if (lines.length !== 1) problems.push(`${lines.length} lines on stderr, not 1`);
  if (/^\s+at /m.test(stderr)) problems.push('a stack trace');
  if (r.stdout) problems.push(`stdout: ${r.stdout.slice(0, 200)}`);
  if (lines.length >= 1 && !c.expect.test(masked(lines[0]!))) problems.push(`line does not match ${c.expect}`);
  return problems.length ? `${c.name} (nodelet run ${c.args.join(' ')}): ${problems.join('; ')}; stderr: ${JSON.stringify(masked(stderr).slice(0, 400))}` : undefined;
}

/** Runs each case against the built CLI, a few at a time; returns the failures as text (none: all good). */
export async function runCliCases(cli: string, cases: CliCase[], parallel = 2): Promise<string[]> {
  const failures: string[] = [];
  // An accepted config must not touch the host's /var/lib/nodelet: what it would write goes here.
  const scratch = mkdtempSync(join(tmpdir(), 'nodelet-drill-config-'));
  try {
    const queue = [...cases];
    const worker = async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        const failure = judge(c, await runOnce(cli, c.args, scratch));
        if (failure) failures.push(failure);
      }
    };
    await Promise.all(Array.from({ length: parallel }, worker));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return failures.sort();
}
