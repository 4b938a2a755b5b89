// Seccomp profiles as the OCI runtime spec (and the JSON files of the kubelet's seccomp
// directory) write them, and which one a CRI container config asks for: RuntimeDefault
// (containerd's default), Localhost (a file), or Unconfined.
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';

export const ACTIONS = ['SCMP_ACT_KILL', 'SCMP_ACT_KILL_THREAD', 'SCMP_ACT_KILL_PROCESS', 'SCMP_ACT_TRAP', 'SCMP_ACT_ERRNO', 'SCMP_ACT_TRACE', 'SCMP_ACT_ALLOW', 'SCMP_ACT_LOG'] as const;
export type Action = (typeof ACTIONS)[number];
export const OPS = ['SCMP_CMP_NE', 'SCMP_CMP_LT', 'SCMP_CMP_LE', 'SCMP_CMP_EQ', 'SCMP_CMP_GE', 'SCMP_CMP_GT', 'SCMP_CMP_MASKED_EQ'] as const;
export type Op = (typeof OPS)[number];

export interface SeccompArg {
  index: number;
  value: bigint;
  /** MASKED_EQ's expected value (`value` is then the mask). */
  valueTwo: bigint;
  op: Op;
}

export interface SeccompRule {
  names: string[];
  action: Action;
  errnoRet?: number;
  /** ANDed: the rule applies when every one holds. */
  args: SeccompArg[];
}

export interface SeccompProfile {
  defaultAction: Action;
  defaultErrnoRet?: number;
  architectures: string[];
  syscalls: SeccompRule[];
}

/** A profile that cannot be used: CreateContainer fails with it, never runs without one. */
export class SeccompProfileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SeccompProfileError';
  }
}

const u64 = (v: unknown, what: string): bigint => {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return BigInt(v);
  if (typeof v === 'string' && /^\d+$/.test(v)) return BigInt(v);
  if (v === undefined) return 0n;
  throw new SeccompProfileError(`${what}: not an unsigned integer`);
};

function action(v: unknown, what: string): Action {
  if (v === 'SCMP_ACT_NOTIFY') throw new SeccompProfileError(`${what}: SCMP_ACT_NOTIFY is not supported by this runtime`);
  if (typeof v !== 'string' || !(ACTIONS as readonly string[]).includes(v)) throw new SeccompProfileError(`${what}: unknown action ${JSON.stringify(v)}`);
  return v as Action;
}

/** A profile in the OCI/Docker JSON form (`names` or the older `name`); anything malformed is an error naming it. */
export function parseProfile(text: string, source: string): SeccompProfile {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new SeccompProfileError(`decoding seccomp profile ${source} failed: ${(err as Error).message}`);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new SeccompProfileError(`seccomp profile ${source}: not a JSON object`);
  const defaultAction = action(raw.defaultAction, `seccomp profile ${source}: defaultAction`);
  const syscalls = (raw.syscalls ?? []) as Array<Record<string, unknown>>;
  if (!Array.isArray(syscalls)) throw new SeccompProfileError(`seccomp profile ${source}: syscalls is not a list`);
  const rules = syscalls.map((s, i): SeccompRule => {
    const where = `seccomp profile ${source}: syscalls[${i}]`;
    const names = Array.isArray(s.names) ? s.names : typeof s.name === 'string' ? [s.name] : undefined;
    if (!names || names.some((n) => typeof n !== 'string' || !n)) throw new SeccompProfileError(`${where}: names must be a list of syscall names`);
    const args = ((s.args ?? []) as Array<Record<string, unknown>>).map((a, j): SeccompArg => {
      const op = a.op;
      if (typeof op !== 'string' || !(OPS as readonly string[]).includes(op)) throw new SeccompProfileError(`${where}.args[${j}]: unknown op ${JSON.stringify(op)}`);
      const index = Number(a.index);
      if (!Number.isInteger(index) || index < 0 || index > 5) throw new SeccompProfileError(`${where}.args[${j}]: index must be 0 to 5`);
      return { index, value: u64(a.value, `${where}.args[${j}].value`), valueTwo: u64(a.valueTwo, `${where}.args[${j}].valueTwo`), op: op as Op };
    });
    const errnoRet = s.errnoRet === undefined ? undefined : Number(s.errnoRet);
    return { names: names as string[], action: action(s.action, `${where}.action`), ...(errnoRet !== undefined ? { errnoRet } : {}), args };
  });
  const architectures = Array.isArray(raw.architectures) ? (raw.architectures as string[]) : [];
  const defaultErrnoRet = raw.defaultErrnoRet === undefined ? undefined : Number(raw.defaultErrnoRet);
  return { defaultAction, ...(defaultErrnoRet !== undefined ? { defaultErrnoRet } : {}), architectures, syscalls: rules };
}

export type SeccompRequest = { kind: 'unconfined' } | { kind: 'runtime-default' } | { kind: 'localhost'; path: string };

/**
 * What a container's CRI security context asks for: `seccomp` (profile_type and localhost_ref)
 * or the older `seccomp_profile_path` ("runtime/default", "docker/default", "unconfined",
 * "localhost/<path>"); nothing asked is unconfined, as containerd has it.
 */
export function seccompRequest(sc: { seccomp?: { profile_type?: string; localhost_ref?: string } | null; seccomp_profile_path?: string } | undefined): SeccompRequest {
  const s = sc?.seccomp;
  if (s && s.profile_type) {
    if (s.profile_type === 'RuntimeDefault') return { kind: 'runtime-default' };
    if (s.profile_type === 'Unconfined') return { kind: 'unconfined' };
    if (s.profile_type === 'Localhost') return localhost(s.localhost_ref ?? '');
  }
  const p = sc?.seccomp_profile_path ?? '';
  if (p === 'runtime/default' || p === 'docker/default') return { kind: 'runtime-default' };
  if (p.startsWith('localhost/')) return localhost(p.slice('localhost/'.length));
  if (p === '' || p === 'unconfined') return { kind: 'unconfined' };
  throw new SeccompProfileError(`unknown seccomp profile option: ${JSON.stringify(p)}`);
}

function localhost(path: string): SeccompRequest {
  if (!isAbsolute(path)) throw new SeccompProfileError(`seccomp localhost profile ${JSON.stringify(path)} is not an absolute path`);
  return { kind: 'localhost', path };
}

/** A Localhost profile read from its file (the kubelet sends the absolute path in its seccomp directory). */
export function readLocalhostProfile(path: string): SeccompProfile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SeccompProfileError(`cannot load seccomp profile "${path}": ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (err as Error).message}`);
  }
  return parseProfile(text, `"${path}"`);
}
