#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8
// nodelet's command line. Bad flags and bad config files get one line and exit code 2.
// Run it as an executable: the line above caps V8's young generation, which otherwise holds
// ~70 MB more at rest with 110 pods, and glibc's malloc arenas, which kept ~35 MB of native memory
// after a burst against ~20 MB with two (bench/README.md has the measurements). Containers do not
// inherit the variable: their environment is built from the pod's.
import { fileURLToPath } from 'node:url';
import { Agent } from '../agent/agent.js';
import { ConfigError, parseDuration } from '../config/config.js';
import { createLogger } from '../observability/logger.js';
import { flagsHelp, parseRunArgs, UsageError } from './flags.js';

import { NODELET_VERSION } from '../version.js';


const help = `nodelet ${NODELET_VERSION}: a Kubernetes node agent

Usage:
  nodelet run [--config FILE] [flags]   serve a node: run the pods bound to it through CRI
  nodelet runtime serve --socket PATH [--root DIR] [--images-dir DIR] [--isolation auto|launcher|proot] [--cni-conf-dir DIR] [--cni-bin-dir DIR:DIR] [--registry-certs-dir DIR] [--image-pull-progress-deadline 1m]
                                        the process runtime: a CRI v1 server running containers as host
                                        processes (its launcher, or proot), for nodelet, crictl, critest
  nodelet images import FILE.tar [--root DIR]
                                        add an OCI image archive to the process runtime's store
  nodelet get pods [-w] [--server URL]  the agent's pods, as kubectl get pods (from its read-only port's
                                        /pods; default server http://127.0.0.1:10255)
  nodelet plan NAMESPACE/POD [-o json] [--server URL] [--kubeconfig FILE] [--certificate-authority FILE]
                                        what the agent's next sync of the pod would do, and why (from its
                                        /debug; --server defaults to the read-only port http://127.0.0.1:10255;
                                        an https:// node API is asked as the kubeconfig's user)
  nodelet plan --file POD.yaml --runtime-endpoint ENDPOINT --node-name NAME [-o json]
                                        the same for a pod not created yet, against a runtime
  nodelet history NAMESPACE/POD [-o json] [--server URL] [--kubeconfig FILE] [--certificate-authority FILE]
                                        the agent's last syncs of the pod: trigger, plan, results, times
  nodelet runtime reset --root DIR      stop and remove every container and sandbox of a process runtime
  nodelet approve-csrs [--kubeconfig FILE] [--service-account kube-system/nodelet] [--node-suffix -nodelet]
                                        approve each nodelet DaemonSet pod's bootstrap CSR for its own
                                        node only, once (deploy/approver.yaml; in-cluster without --kubeconfig)
  nodelet version
  nodelet --help

The config file is a NodeletConfiguration (apiVersion nodelet.io/v1alpha1; see deploy/config.yaml).
Flags override the file; $(VAR) in the file is filled from the environment.

Flags of run:
${flagsHelp()}
`;

async function run(args: string[]): Promise<void> {
  const config = parseRunArgs(args);
  // A node agent must outlive the reader of its log going away (a closed pipe): drop the lines instead.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const logger = createLogger({ level: config.logLevel, format: config.logFormat || undefined });
  let agent: Agent;
  try {
    // Reads the kubeconfig (or bootstrap kubeconfig) at once: one that cannot be read stops here.
    agent = new Agent(config, { logger });
  } catch (err) {
    logger.error('nodelet failed to start', { error: (err as Error).message });
    process.exit(1);
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // With shutdownOnSIGTERM, the agent's SIGTERM is the node going down: its pods end first.
    const nodeDown = signal === 'SIGTERM' && config.shutdownOnSIGTERM;
    logger.info(nodeDown ? 'node shutting down: ending its pods, then stopping' : 'shutting down; running pods are left running', { signal });
    // Past this, exit anyway: a wedged API server must not keep a node agent from stopping.
    const force = setTimeout(() => process.exit(1), 10_000 + (nodeDown ? config.shutdownGracePeriodMs : 0));
    force.unref();
    (nodeDown ? agent.shutdownNode() : Promise.resolve())
      .then(() => agent.stop())
      .then(
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
    // A setting the node cannot be run with (a cgroup root that is not there) is a bad config: one line, 2.
    if (err instanceof ConfigError) {
      process.stderr.write(`nodelet: ${err.message}\n`);
      process.exit(2);
    }
    logger.error('nodelet failed to start', { error: (err as Error).message });
    process.exit(1);
  }
}

/** --name value pairs of the small subcommands; anything else is a usage error. */
function options(args: string[], allowed: string[]): { values: Record<string, string>; rest: string[] } {
  const values: Record<string, string> = {};
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) {
      rest.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    const value = eq > 0 ? a.slice(eq + 1) : args[++i];
    if (!allowed.includes(name)) throw new UsageError(`unknown flag --${name} (see nodelet --help)`);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    values[name] = value;
  }
  return { values, rest };
}

const DEFAULT_PROCESS_ROOT = '/var/lib/nodelet/process';

async function runtimeServe(args: string[]): Promise<void> {
  const { values, rest } = options(args, ['socket', 'root', 'images-dir', 'isolation', 'cni-conf-dir', 'cni-bin-dir', 'registry-certs-dir', 'image-pull-progress-deadline', 'log-level', 'log-format']);
  if (rest.length) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  if (!values.socket) throw new UsageError('--socket is required');
  const isolation = values.isolation ?? 'auto';
  if (!['auto', 'launcher', 'proot'].includes(isolation)) throw new UsageError(`--isolation: ${JSON.stringify(isolation)} is not one of auto, launcher, proot`);
  const deadline = values['image-pull-progress-deadline'];
  const deadlineMs = deadline === undefined ? undefined : parseDuration(deadline);
  if (deadlineMs === undefined && deadline !== undefined) throw new UsageError(`--image-pull-progress-deadline: ${JSON.stringify(deadline)} is not a duration such as 30s or 1m`);
  const logger = createLogger({ level: (values['log-level'] as never) ?? 'info', format: (values['log-format'] as never) ?? undefined });
  const { ProcessRuntime } = await import('../procruntime/runtime.js');
  const { ProcessRuntimeServer } = await import('../procruntime/server.js');
  const runtime = new ProcessRuntime({
    root: values.root ?? DEFAULT_PROCESS_ROOT,
    imagesDir: values['images-dir'],
    isolation: isolation === 'auto' ? undefined : (isolation as 'launcher' | 'proot'),
    cniConfDir: values['cni-conf-dir'],
    cniBinDirs: values['cni-bin-dir']?.split(':').filter(Boolean),
    registryCertsDir: values['registry-certs-dir'] ?? '/etc/containerd/certs.d',
    pullProgressTimeoutMs: deadlineMs,
    log: (m, f) => logger.info(m, f),
    warn: (m, f) => logger.warn(m, f),
  });
  await runtime.start();
  const server = new ProcessRuntimeServer(runtime);
  await server.listen(values.socket);
  logger.info('process runtime serving', { socket: `unix://${values.socket}`, isolation: runtime.isolationMode });
  const shutdown = () => {
    // Containers keep running: a restarted runtime finds them again.
    void server.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

async function imagesImport(args: string[]): Promise<void> {
  const { values, rest } = options(args, ['root']);
  if (rest.length !== 1) throw new UsageError('usage: nodelet images import FILE.tar [--root DIR]');
  const { ImageStore } = await import('../procruntime/image-store.js');
  const { join } = await import('node:path');
  const store = new ImageStore(join(values.root ?? DEFAULT_PROCESS_ROOT, 'images'));
  await store.load();
  try {
    for (const img of await store.importArchive(rest[0]!)) process.stdout.write(`${img.repoTags.join(',') || '<untagged>'} ${img.id}\n`);
  } catch (err) {
    process.stderr.write(`nodelet: cannot import ${rest[0]}: ${(err as Error).message.split('\n')[0]}\n`);
    process.exit(1);
  }
}

async function runtimeReset(args: string[]): Promise<void> {
  const { values } = options(args, ['root']);
  const { ProcessRuntime } = await import('../procruntime/runtime.js');
  const runtime = new ProcessRuntime({ root: values.root ?? DEFAULT_PROCESS_ROOT });
  await runtime.start(true);
  for (const sb of await runtime.listPodSandbox()) {
    await runtime.stopPodSandbox(sb.id);
    await runtime.removePodSandbox(sb.id);
  }
  for (const c of await runtime.listContainers()) await runtime.removeContainer(c.id);
  runtime.stop();
}

async function getPodsCommand(args: string[]): Promise<void> {
  const watch = args.includes('-w') || args.includes('--watch');
  const { values, rest } = options(args.filter((a) => a !== '-w' && a !== '--watch'), ['server']);
  if (rest.length !== 1 || rest[0] !== 'pods') throw new UsageError('usage: nodelet get pods [-w] [--server URL]');
  const { getPods } = await import('./get-pods.js');
  try {
    await getPods(values.server ?? 'http://127.0.0.1:10255', watch);
  } catch (err) {
    process.stderr.write(`nodelet: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

/** -o json / --output json, taken out of the arguments. */
function outputFlag(args: string[]): { json: boolean; rest: string[] } {
  const rest: string[] = [];
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const value = a === '-o' || a === '--output' ? args[++i] : a.startsWith('-o=') || a.startsWith('--output=') ? a.slice(a.indexOf('=') + 1) : undefined;
    if (value === undefined) {
      rest.push(a);
      continue;
    }
    if (value !== 'json') throw new UsageError(`-o: only json is known, got ${JSON.stringify(value)}`);
    json = true;
  }
  return { json, rest };
}

async function debugCommand(kind: 'plan' | 'history', args: string[]): Promise<void> {
  const out = outputFlag(args);
  const { values, rest } = options(out.rest, ['server', 'kubeconfig', 'certificate-authority', 'insecure-skip-tls-verify', 'file', 'runtime-endpoint', 'node-name']);
  const client = await import('./debug-client.js');
  let result: unknown;
  try {
    if (kind === 'plan' && values.file !== undefined) {
      if (rest.length) throw new UsageError('--file plans the pod of the file: no NAMESPACE/POD with it');
      if (!values['runtime-endpoint'] || !values['node-name']) throw new UsageError('--file needs --runtime-endpoint and --node-name');
      const { planFromRuntime } = await import('./plan-file.js');
      result = await planFromRuntime(client.readPodFile(values.file), values['runtime-endpoint'], values['node-name']);
    } else {
      if (rest.length !== 1) throw new UsageError(`usage: nodelet ${kind} NAMESPACE/POD [-o json] [--server URL] [--kubeconfig FILE]`);
      const { namespace, name } = client.podArg(rest[0]);
      const target = { server: values.server, kubeconfig: values.kubeconfig, certificateAuthority: values['certificate-authority'], insecure: values['insecure-skip-tls-verify'] === 'true' };
      result = await client.getDebug(target, client.debugPath(namespace, name, kind === 'plan'));
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    process.stderr.write(`nodelet: ${(err as Error).message}\n`);
    process.exit(1);
  }
  if (out.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else process.stdout.write(`${kind === 'plan' ? client.formatPlan(result as never) : client.formatHistory(result as never)}\n`);
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  try {
    if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
      process.stdout.write(help);
      return;
    }
    if (cmd === 'version' || cmd === '--version') {
      process.stdout.write(`nodelet ${NODELET_VERSION}\n`);
      return;
    }
    if (cmd === 'runtime' && rest[0] === 'serve') return await runtimeServe(rest.slice(1));
    if (cmd === 'runtime' && rest[0] === 'reset') return await runtimeReset(rest.slice(1));
    if (cmd === 'get') return await getPodsCommand(rest);
    if (cmd === 'plan' || cmd === 'history') return await debugCommand(cmd, rest);
    if (cmd === 'images' && rest[0] === 'import') return await imagesImport(rest.slice(1));
    if (cmd === 'approve-csrs') {
      const { values, rest: extra } = options(rest, ['kubeconfig', 'service-account', 'node-suffix', 'log-level', 'log-format']);
      if (extra.length) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
      const { approveCsrs } = await import('./approve-csrs.js');
      return await approveCsrs(values);
    }
    if (cmd === 'run') {
      if (rest.includes('--help') || rest.includes('-h')) {
        process.stdout.write(help);
        return;
      }
      return await run(rest);
    }
    throw new UsageError(`unknown command ${JSON.stringify(cmd)} (see nodelet --help)`);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError) {
      process.stderr.write(`nodelet: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) void main(process.argv.slice(2));
