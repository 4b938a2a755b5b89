#!/usr/bin/env node
// nodelet's command line: `nodelet run ...`, `nodelet version`. Bad flags get one line and exit 2.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Agent, type AgentOptions } from '../agent/agent.js';
import { createLogger, type LogFormat, type LogLevel } from '../observability/logger.js';

class UsageError extends Error {}

const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')) as { version: string };

const help = `nodelet ${pkg.version}: a Kubernetes node agent

Usage:
  nodelet run --node-name NAME --runtime-endpoint unix:///path.sock [flags]
  nodelet version
  nodelet --help

Flags of run:
  --node-name NAME             the node this agent serves (pods with spec.nodeName=NAME)
  --kubeconfig PATH            kubeconfig of the API server (default: in-cluster config)
  --runtime-endpoint URL       CRI endpoint, unix:///path/to/socket
  --pod-log-root DIR           container logs root (default /var/log/pods)
  --node-ip IP                 the node's IP, for status.hostIP (default: first non-loopback IPv4)
  --address ADDR               address of /healthz and /metrics (default 127.0.0.1)
  --port N                     port of /healthz and /metrics (default 10250; 0 picks one)
  --resync-interval DURATION   pod resync period (default 1m)
  --informer-resync DURATION   pod source resync period (default 1m)
  --pleg-relist DURATION       PLEG relist period (default 1s)
  --max-concurrent-syncs N     syncs running at once (default 16)
  --cpu-cfs-quota BOOL         enforce CPU limits with CFS quota (default true)
  --allow-privileged BOOL      let securityContext.privileged take effect (default false)
  --log-level LEVEL            error|warn|info|debug (default info)
  --log-format FORMAT          json|text (default: text on a terminal, else json)
`;

function parseDuration(flag: string, v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(v);
  if (!m) throw new UsageError(`${flag}: invalid duration ${JSON.stringify(v)} (use e.g. 500ms, 10s, 1m)`);
  const n = Number(m[1]);
  return n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

function parseBool(flag: string, v: string): boolean {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new UsageError(`${flag}: expected true or false, got ${JSON.stringify(v)}`);
}

function parseInt10(flag: string, v: string, min: number, max: number): number {
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new UsageError(`${flag}: expected an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
  return Number(v);
}

export function parseRunFlags(args: string[]): Omit<AgentOptions, 'logger'> & { logLevel: LogLevel; logFormat?: LogFormat } {
  const o: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument ${JSON.stringify(a)}`);
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    const value = eq > 0 ? a.slice(eq + 1) : args[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    o[name] = value;
  }
  const known = ['node-name', 'kubeconfig', 'runtime-endpoint', 'pod-log-root', 'node-ip', 'address', 'port', 'resync-interval', 'informer-resync', 'pleg-relist', 'max-concurrent-syncs', 'cpu-cfs-quota', 'allow-privileged', 'log-level', 'log-format'];
  for (const k of Object.keys(o)) if (!known.includes(k)) throw new UsageError(`unknown flag --${k} (see nodelet --help)`);
  if (!o['node-name']) throw new UsageError('--node-name is required');
  if (!o['runtime-endpoint']) throw new UsageError('--runtime-endpoint is required');
  if (!/^unix:\/\/\//.test(o['runtime-endpoint'])) throw new UsageError(`--runtime-endpoint: expected unix:///path/to/socket, got ${JSON.stringify(o['runtime-endpoint'])}`);
  const level = (o['log-level'] ?? 'info') as LogLevel;
  if (!['error', 'warn', 'info', 'debug'].includes(level)) throw new UsageError(`--log-level: expected error, warn, info or debug, got ${JSON.stringify(level)}`);
  const format = o['log-format'] as LogFormat | undefined;
  if (format && format !== 'json' && format !== 'text') throw new UsageError(`--log-format: expected json or text, got ${JSON.stringify(format)}`);
  return {
    nodeName: o['node-name'],
    kubeconfig: o.kubeconfig,
    runtimeEndpoint: o['runtime-endpoint'],
    podLogRoot: o['pod-log-root'] ?? '/var/log/pods',
    nodeIP: o['node-ip'],
    serveAddress: o.address ?? '127.0.0.1',
    servePort: o.port !== undefined ? parseInt10('--port', o.port, 0, 65535) : 10250,
    resyncIntervalMs: o['resync-interval'] ? parseDuration('--resync-interval', o['resync-interval']) : 60_000,
    informerResyncMs: o['informer-resync'] ? parseDuration('--informer-resync', o['informer-resync']) : 60_000,
    plegRelistMs: o['pleg-relist'] ? parseDuration('--pleg-relist', o['pleg-relist']) : 1000,
    maxConcurrentSyncs: o['max-concurrent-syncs'] ? parseInt10('--max-concurrent-syncs', o['max-concurrent-syncs'], 1, 1000) : 16,
    cpuCFSQuota: o['cpu-cfs-quota'] ? parseBool('--cpu-cfs-quota', o['cpu-cfs-quota']) : true,
    allowPrivileged: o['allow-privileged'] ? parseBool('--allow-privileged', o['allow-privileged']) : false,
    logLevel: level,
    logFormat: format,
  };
}

async function run(args: string[]): Promise<void> {
  const flags = parseRunFlags(args);
  const logger = createLogger({ level: flags.logLevel, format: flags.logFormat });
  const agent = new Agent({ ...flags, logger });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down; running pods are left running', { signal });
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    agent.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error('shutdown failed', { error: (err as Error).message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  try {
    await agent.start();
  } catch (err) {
    logger.error('nodelet failed to start', { error: (err as Error).message });
    process.exit(1);
  }
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  try {
    if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
      process.stdout.write(help);
      return;
    }
    if (cmd === 'version' || cmd === '--version') {
      process.stdout.write(`nodelet ${pkg.version}\n`);
      return;
    }
    if (cmd === 'run') return await run(rest);
    throw new UsageError(`unknown command ${JSON.stringify(cmd)} (see nodelet --help)`);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`nodelet: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) void main(process.argv.slice(2));
