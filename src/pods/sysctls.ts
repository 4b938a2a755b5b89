// The kubelet's sysctl admission: a pod may set the safe sysctls (those of its own namespaces that
// cannot hurt the node) and the unsafe ones the node allows (allowedUnsafeSysctls); anything else,
// or a network or IPC sysctl in a pod that shares the host's network or IPC, is refused with
// SysctlForbidden.
import { release } from 'node:os';
import type { V1Pod } from '@kubernetes/client-node';

type Namespace = 'IPC' | 'Net' | 'UTS' | 'User' | '';

/** The safe sysctls, with the kernel version from which each is namespaced. */
const SAFE: Array<[string, string?]> = [
  ['kernel.shm_rmid_forced'],
  ['net.ipv4.ip_local_port_range'],
  ['net.ipv4.tcp_syncookies'],
  ['net.ipv4.ping_group_range'],
  ['net.ipv4.ip_unprivileged_port_start'],
  ['net.ipv4.ip_local_reserved_ports', '3.16'],
  ['net.ipv4.tcp_keepalive_time', '4.5'],
  ['net.ipv4.tcp_fin_timeout', '4.6'],
  ['net.ipv4.tcp_keepalive_intvl', '4.5'],
  ['net.ipv4.tcp_keepalive_probes', '4.5'],
  ['net.ipv4.tcp_rmem', '4.15'],
  ['net.ipv4.tcp_wmem', '4.15'],
  ['net.ipv4.tcp_slow_start_after_idle', '4.15'],
  ['net.ipv4.tcp_notsent_lowat', '4.6'],
];

const BY_NAME: Record<string, Namespace> = {
  'kernel.domainname': 'UTS',
  'kernel.sem': 'IPC',
  'kernel.shmall': 'IPC',
  'kernel.shmmax': 'IPC',
  'kernel.shmmni': 'IPC',
  'kernel.shm_rmid_forced': 'IPC',
  'kernel.shm': 'IPC',
  'kernel.msgmax': 'IPC',
  'kernel.msgmnb': 'IPC',
  'kernel.msgmni': 'IPC',
  'kernel.msg': 'IPC',
};
const BY_PREFIX: Array<[string, Namespace]> = [
  ['net', 'Net'],
  ['fs.mqueue', 'IPC'],
  ['user', 'User'],
];

/** kernel/sem or kernel.sem: one spelling. */
export function normalizeSysctl(name: string): string {
  const dot = name.indexOf('.');
  const slash = name.indexOf('/');
  if (slash >= 0 && (dot < 0 || slash < dot)) return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
  return name;
}

export function sysctlNamespace(name: string): Namespace {
  if (BY_NAME[name]) return BY_NAME[name];
  return BY_PREFIX.find(([p]) => name.startsWith(`${p}.`))?.[1] ?? '';
}

function atLeast(kernel: string, want: string): boolean {
  const a = kernel.split(/[.-]/).map(Number);
  const b = want.split('.').map(Number);
  for (let i = 0; i < b.length; i++) {
    if ((a[i] ?? 0) !== b[i]) return (a[i] ?? 0) > b[i]!;
  }
  return true;
}

export class SysctlAllowlist {
  private readonly names = new Map<string, Namespace>();
  private readonly prefixes = new Map<string, Namespace>();

  /** Throws on a pattern that is not a namespaced sysctl (a bad config: the agent does not start). */
  constructor(allowedUnsafe: string[], kernel = release()) {
    const patterns = [...SAFE.filter(([, v]) => !v || atLeast(kernel, v)).map(([n]) => n), ...allowedUnsafe];
    for (const p of patterns) {
      const n = normalizeSysctl(p);
      const star = n.indexOf('*');
      const name = star >= 0 ? n.slice(0, star) : n;
      const ns = sysctlNamespace(star >= 0 ? name.replace(/\.$/, '') : name) || (star >= 0 ? sysctlNamespace(`${name}x`) : '');
      if (!ns) throw new Error(`the sysctls "${name}" are not known to be namespaced`);
      (star >= 0 ? this.prefixes : this.names).set(name, ns);
    }
  }

  private check(sysctl: string, hostNet: boolean, hostIPC: boolean, hostUsers: boolean): string | undefined {
    const name = normalizeSysctl(sysctl);
    const ns = this.names.get(name) ?? [...this.prefixes].find(([p]) => name.startsWith(p))?.[1];
    if (ns === undefined) return `"${name}" not allowlisted`;
    if ((ns === 'IPC' && hostIPC) || (ns === 'Net' && hostNet) || (ns === 'User' && hostUsers)) return `"${name}" not allowed with host ${ns} enabled`;
    return undefined;
  }

  /** The refusal of a pod whose sysctls are not all allowed, in the kubelet's words. */
  admit(pod: V1Pod): { admit: true } | { admit: false; reason: string; message: string } {
    const spec = pod.spec;
    for (const s of spec?.securityContext?.sysctls ?? []) {
      const err = this.check(s.name, spec?.hostNetwork === true, spec?.hostIPC === true, spec?.hostUsers !== false);
      if (err) return { admit: false, reason: 'SysctlForbidden', message: `forbidden sysctl: ${err}` };
    }
    return { admit: true };
  }
}
