// Running a command in a process-runtime container (CRI ExecSync, and the plan Exec streams use):
// the launcher enters the container's namespaces (its mounts as they are now), with the
// environment, user and security settings it was started with.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { ExecSyncResponse } from '../cri/types.js';
import { criMounts, DEFAULT_PATH, missingExecutable } from './container-files.js';
import { DeadlineExceededError, FailedPreconditionError, InvalidArgumentError } from './errors.js';
import { execArgv, isolationOf, launcherPath, type LaunchSpec } from './isolation.js';
import { processRunning } from './procfs.js';
import type { ContainerRecord } from './records.js';

export interface ExecPlan {
  argv: string[];
  env: Record<string, string>;
  /** The container's seccomp program, held open as fd 4 where the launcher applies it; closed by whoever spawns it. */
  seccomp?: number;
  /** Why the command cannot run there, if it cannot. */
  missing?: string;
}

export function execPlan(c: ContainerRecord, dir: string, cmd: string[], cgroupProcs: string[] = []): ExecPlan {
  if (c.state !== 'CONTAINER_RUNNING' || c.pid === undefined) throw new FailedPreconditionError(`container ${c.id} is not running`);
  if (cmd.length === 0) throw new InvalidArgumentError('no command to exec');
  // A container started before exec kept its launch: its root, binds and the image's defaults.
  const spec: LaunchSpec = c.launch ?? {
    rootfs: join(dir, 'rootfs'),
    argv: [],
    env: [['PATH', DEFAULT_PATH]],
    cwd: c.config.working_dir || '/',
    hostname: '',
    mounts: criMounts(c.config),
    statusFd: 3,
    user: c.user,
  };
  if (!processRunning(c)) throw new FailedPreconditionError(`container ${c.id} is not running`);
  const { argv, env } = execArgv(isolationOf(c.isolation), spec, c.pid, cmd, cgroupProcs);
  const path = spec.env.find(([k]) => k === 'PATH')?.[1] ?? DEFAULT_PATH;
  const seccomp = spec.seccomp && argv.includes('--seccomp') ? openSync(spec.seccomp, 'r') : undefined;
  return { argv, env, seccomp, missing: missingExecutable(spec.rootfs, cmd[0]!, path, spec.cwd) };
}

/** Closes what a plan holds open for its command (once it is spawned, or when it will not be). */
export function closePlan(plan: ExecPlan): void {
  if (plan.seccomp !== undefined) closeSync(plan.seccomp);
}

/** The spawn's stdio beyond 0-2: the seccomp program on fd 4, where there is one. */
export function planFds(plan: ExecPlan): Array<number | 'ignore'> {
  return plan.seccomp !== undefined ? ['ignore', plan.seccomp] : [];
}

/**
 * Ends a running exec: its launcher is asked first (it kills the command and reaps it, so that no
 * zombie is left to the container's init, then the rest of its group); a moment later, or at once
 * under proot, the whole process group is killed (killing only the top would leave the command
 * running and its pipes open).
 */
export function endExec(plan: ExecPlan, pid: number): void {
  const killGroup = () => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  if (plan.argv[0] !== launcherPath()) return killGroup();
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  setTimeout(killGroup, 2000).unref();
}

/**
 * What an ExecSync keeps of its output, both streams together (CVE-2022-31030): what comes after is
 * read and dropped. containerd keeps 16 MiB of each stream, which the 16 MiB gRPC message then
 * cannot carry ("Sent message larger than max"); this leaves room for the rest of the answer.
 */
export const EXEC_SYNC_MAX_BYTES = 16 * 1024 * 1024 - 64 * 1024;

export interface Sink {
  write: (b: Buffer) => void;
  bytes: () => Buffer;
}

/** Sinks sharing one budget of `limit` bytes; past it, what comes is drained (the command is not blocked) and not kept. */
export function cappedSinks(count: number, limit = EXEC_SYNC_MAX_BYTES): Sink[] {
  let left = limit;
  return Array.from({ length: count }, () => {
    const kept: Buffer[] = [];
    return {
      write: (b: Buffer) => {
        if (left <= 0) return;
        const part = b.length > left ? b.subarray(0, left) : b;
        kept.push(part);
        left -= part.length;
      },
      bytes: () => Buffer.concat(kept),
    };
  });
}

/** Runs the plan to its end, its output collected (each stream capped); past the timeout, the command is killed and this fails. */
export function runExecSync(plan: ExecPlan, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResponse> {
  const { argv, env } = plan;
  if (plan.missing) {
    // As containerd: a command that is not there is an error of the call, not an exit code.
    closePlan(plan);
    return Promise.reject(new Error(`failed to exec in container: ${plan.missing}`));
  }
  return new Promise<ExecSyncResponse>((resolve, reject) => {
    // A group of its own, for endExec.
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe', ...planFds(plan)], env, detached: true });
    closePlan(plan);
    const [out, err] = cappedSinks(2) as [Sink, Sink];
    let timedOut = false;
    child.stdout!.on('data', out.write);
    child.stderr!.on('data', err.write);
    const timer =
      timeoutSeconds > 0
        ? setTimeout(() => {
            timedOut = true;
            endExec(plan, child.pid!);
          }, timeoutSeconds * 1000)
        : undefined;
    child.on('close', (code, sig) => {
      if (timer) clearTimeout(timer);
      // As containerd: a command that outlives its timeout is an error, not an exit code.
      if (timedOut) return reject(new DeadlineExceededError(`command ${JSON.stringify(cmd)} timed out after ${timeoutSeconds}s`));
      resolve({ stdout: out.bytes(), stderr: err.bytes(), exit_code: code ?? (sig ? 128 + (os.constants.signals[sig] ?? 9) : 1) } as unknown as ExecSyncResponse);
    });
    child.on('error', (e) => resolve({ stdout: Buffer.alloc(0), stderr: Buffer.from(e.message), exit_code: 127 } as unknown as ExecSyncResponse));
  });
}
