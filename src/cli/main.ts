#!/usr/bin/env node
// nodelet's command line. Bad flags and bad config files get one line and exit code 2.
import { fileURLToPath } from 'node:url';
import { Agent } from '../agent/agent.js';
import { ConfigError } from '../config/config.js';
import { createLogger } from '../observability/logger.js';
import { flagsHelp, parseRunArgs, UsageError } from './flags.js';

import { NODELET_VERSION } from '../version.js';


const help = `nodelet ${NODELET_VERSION}: a Kubernetes node agent

Usage:
  nodelet run [--config FILE] [flags]   serve a node: run the pods bound to it through CRI
  nodelet version
  nodelet --help

The config file is a NodeletConfiguration (apiVersion nodelet.io/v1alpha1; see deploy/config.yaml).
Flags override the file; $(VAR) in the file is filled from the environment.

Flags of run:
${flagsHelp()}
`;

async function run(args: string[]): Promise<void> {
  const config = parseRunArgs(args);
  const logger = createLogger({ level: config.logLevel, format: config.logFormat || undefined });
  const agent = new Agent(config, { logger });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down; running pods are left running', { signal });
    // Past this, exit anyway: a wedged API server must not keep a node agent from stopping.
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
      process.stdout.write(`nodelet ${NODELET_VERSION}\n`);
      return;
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
