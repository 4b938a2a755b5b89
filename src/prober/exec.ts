// exec probes (and exec hooks): the command runs in the container through CRI ExecSync with the
// probe's timeout. Exit 0 succeeds, any other code fails with the command's output; a command that
// outlives its timeout fails with the kubelet's words; a runtime error leaves the result unknown.
import type { V1Container } from '@kubernetes/client-node';
import { CriError } from '../cri/errors.js';
import { expandVars } from '../runtime/env.js';
import { MAX_OUTPUT_BYTES, type Attempt } from './types.js';

export interface ExecResult {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
}

/** CRI ExecSync, as the prober needs it. */
export type RunInContainer = (containerID: string, cmd: string[], timeoutSeconds: number) => Promise<ExecResult>;

/** Go's way of printing a whole number of seconds as a duration (1s, 1m30s, 1h0m0s). */
export function goDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}

/** $(VAR) in a probe's command is expanded from the container's literal env values only (no valueFrom). */
export function expandProbeCommand(command: string[], container: V1Container): string[] {
  const vars = new Map<string, string>();
  for (const e of container.env ?? []) if (e.value !== undefined && !e.valueFrom) vars.set(e.name, e.value);
  return command.map((c) => expandVars(c, vars));
}

export async function execProbe(run: RunInContainer, containerID: string, cmd: string[], timeoutSeconds: number): Promise<Attempt> {
  let r: ExecResult;
  try {
    r = await run(containerID, cmd, timeoutSeconds);
  } catch (err) {
    if (err instanceof CriError && err.code === 'DeadlineExceeded') {
      return { result: 'failure', output: `command timed out: "${cmd.join(' ')}" timed out after ${goDuration(timeoutSeconds)}` };
    }
    return { result: 'unknown', output: '', error: err as Error };
  }
  const output = Buffer.concat([Buffer.from(r.stdout), Buffer.from(r.stderr)]).subarray(0, MAX_OUTPUT_BYTES).toString('utf8');
  return { result: r.exitCode === 0 ? 'success' : 'failure', output };
}
