// The process runtime's seccomp: profiles read and refused as containerd reads them, containerd's
// default built for a container's capabilities, and the compiled BPF program, run here by a small
// classic-BPF interpreter on made-up syscalls (the kernel runs the same bytes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { actionValue, compileProfile } from '../../../src/procruntime/seccomp/bpf.js';
import { containerSeccompProfile, containerSeccompProgram } from '../../../src/procruntime/seccomp/container.js';
import { runtimeDefaultProfile } from '../../../src/procruntime/seccomp/default-profile.js';
import { parseProfile, seccompRequest, SeccompProfileError } from '../../../src/procruntime/seccomp/profile.js';
import { SYSCALLS_X86_64 as NR } from '../../../src/procruntime/seccomp/syscalls-x86_64.js';
import { boundingSet, DEFAULT_CAPABILITIES } from '../../../src/procruntime/isolation.js';

const X86_64 = 0xc000003e;
const I386 = 0x40000003;

/** Runs a classic BPF seccomp program on one syscall (nr, arch, six 64-bit args): the SECCOMP_RET value. */
function run(prog: Buffer, nr: number, args: bigint[] = [], arch = X86_64): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr, 0);
  data.writeUInt32LE(arch, 4);
  args.forEach((a, i) => data.writeBigUInt64LE(a, 16 + 8 * i));
  let A = 0;
  for (let pc = 0; pc < prog.length / 8; ) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    pc++;
    switch (code) {
      case 0x20: A = data.readUInt32LE(k); break;
      case 0x54: A = (A & k) >>> 0; break;
      case 0x15: pc += A === k ? jt : jf; break;
      case 0x25: pc += A > k ? jt : jf; break;
      case 0x35: pc += A >= k ? jt : jf; break;
      case 0x06: return k;
      default: throw new Error(`unknown opcode ${code.toString(16)}`);
    }
  }
  throw new Error('the program fell off its end');
}

const ALLOW = actionValue('SCMP_ACT_ALLOW');
const EPERM = actionValue('SCMP_ACT_ERRNO');

test('RuntimeDefault: ordinary syscalls pass; keyctl, unshare and namespace flags of clone do not, without CAP_SYS_ADMIN; clone3 says ENOSYS; other ABIs get the default', () => {
  const prog = compileProfile(runtimeDefaultProfile(DEFAULT_CAPABILITIES, [6, 1]));
  for (const s of ['read', 'write', 'openat', 'execve', 'exit_group', 'futex', 'arch_prctl', 'ptrace']) assert.equal(run(prog, NR[s]!), ALLOW, s);
  for (const s of ['keyctl', 'add_key', 'request_key', 'unshare', 'mount', 'setns', 'bpf', 'reboot', 'kexec_load']) assert.equal(run(prog, NR[s]!), EPERM, s);
  assert.equal(run(prog, NR.clone!, [0x11n]), ALLOW, 'a plain fork-like clone');
  assert.equal(run(prog, NR.clone!, [0x10000000n | 0x11n]), EPERM, 'clone(CLONE_NEWUSER)');
  assert.equal(run(prog, NR.clone3!), actionValue('SCMP_ACT_ERRNO', 38));
  assert.equal(run(prog, NR.socket!, [2n]), ALLOW, 'AF_INET');
  assert.equal(run(prog, NR.socket!, [38n]), EPERM, 'AF_ALG');
  assert.equal(run(prog, NR.socket!, [40n]), EPERM, 'AF_VSOCK');
  assert.equal(run(prog, NR.socket!, [39n]), ALLOW);
  assert.equal(run(prog, NR.socket!, [41n]), ALLOW);
  assert.equal(run(prog, NR.personality!, [0xffffffffn]), ALLOW);
  assert.equal(run(prog, NR.personality!, [0x1n]), EPERM);
  assert.equal(run(prog, NR.read!, [], I386), EPERM, 'a 32-bit syscall');
  assert.equal(run(prog, 0x40000000 + NR.read!), EPERM, 'an x32 syscall');
  // With CAP_SYS_ADMIN (as containerd's, by the bounding set) the namespace calls are allowed.
  const admin = compileProfile(runtimeDefaultProfile(boundingSet({ add: ['SYS_ADMIN'] }), [6, 1]));
  assert.equal(run(admin, NR.unshare!), ALLOW);
  assert.equal(run(admin, NR.clone!, [0x10000000n]), ALLOW);
  assert.equal(run(admin, NR.keyctl!), EPERM, 'keyctl stays refused');
  // Old kernels do not get ptrace (it could bypass seccomp before 4.8).
  assert.equal(run(compileProfile(runtimeDefaultProfile(DEFAULT_CAPABILITIES, [4, 4])), NR.ptrace!), EPERM);
});

test('every comparison on 64-bit arguments, the high word included', () => {
  const rule = (op: string, value: string, valueTwo = 0) => compileProfile(parseProfile(JSON.stringify({ defaultAction: 'SCMP_ACT_ERRNO', syscalls: [{ names: ['write'], action: 'SCMP_ACT_ALLOW', args: [{ index: 2, value: Number(value), valueTwo, op }] }] }), 't'));
  const big = 0x1_0000_0005n;
  const cases: Array<[string, bigint, bigint[], bigint[]]> = [
    ['SCMP_CMP_EQ', 5n, [5n], [4n, big]],
    ['SCMP_CMP_NE', 5n, [4n, big, 6n], [5n]],
    ['SCMP_CMP_LT', 5n, [0n, 4n], [5n, 6n, big]],
    ['SCMP_CMP_LE', 5n, [4n, 5n], [6n, big]],
    ['SCMP_CMP_GT', 5n, [6n, big], [5n, 0n]],
    ['SCMP_CMP_GE', 5n, [5n, big], [4n]],
  ];
  for (const [op, v, yes, no] of cases) {
    const prog = rule(op, String(v));
    for (const a of yes) assert.equal(run(prog, NR.write!, [0n, 0n, a]), ALLOW, `${op} ${v}: ${a}`);
    for (const a of no) assert.equal(run(prog, NR.write!, [0n, 0n, a]), EPERM, `${op} ${v}: ${a}`);
  }
  const masked = rule('SCMP_CMP_MASKED_EQ', String(0xf0), 0x30);
  assert.equal(run(masked, NR.write!, [0n, 0n, 0x3an]), ALLOW);
  assert.equal(run(masked, NR.write!, [0n, 0n, 0x4an]), EPERM);
  // Conditions on two arguments are ANDed; two rules for one syscall are ORed.
  const two = compileProfile(parseProfile(JSON.stringify({
    defaultAction: 'SCMP_ACT_KILL_PROCESS',
    syscalls: [
      { names: ['write'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: 1, op: 'SCMP_CMP_EQ' }, { index: 2, value: 10, op: 'SCMP_CMP_LT' }] },
      { names: ['write'], action: 'SCMP_ACT_ERRNO', errnoRet: 5 },
      { name: 'read', action: 'SCMP_ACT_LOG' },
    ],
  }), 't'));
  assert.equal(run(two, NR.write!, [1n, 0n, 3n]), ALLOW);
  assert.equal(run(two, NR.write!, [2n, 0n, 3n]), actionValue('SCMP_ACT_ERRNO', 5));
  assert.equal(run(two, NR.write!, [1n, 0n, 30n]), actionValue('SCMP_ACT_ERRNO', 5));
  assert.equal(run(two, NR.read!), actionValue('SCMP_ACT_LOG'));
  assert.equal(run(two, NR.close!), actionValue('SCMP_ACT_KILL_PROCESS'));
});

test('profiles and requests: malformed or unsupported ones are refused with a clear error; privileged and Unconfined run without a filter', () => {
  assert.throws(() => parseProfile('{', 'p'), /decoding seccomp profile p failed/);
  assert.throws(() => parseProfile('{"defaultAction":"SCMP_ACT_MAYBE"}', 'p'), /defaultAction: unknown action "SCMP_ACT_MAYBE"/);
  assert.throws(() => parseProfile('{"defaultAction":"SCMP_ACT_NOTIFY"}', 'p'), /SCMP_ACT_NOTIFY is not supported/);
  assert.throws(() => parseProfile('{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","args":[{"index":7,"value":1,"op":"SCMP_CMP_EQ"}]}]}', 'p'), /index must be 0 to 5/);
  assert.throws(() => compileProfile(parseProfile('{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_AARCH64"]}', 'p')), /not this node's x86_64/);
  // A deny list cannot be gone round by the 32-bit or x32 numbers of what it denies: those die.
  const denyList = compileProfile(parseProfile('{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mount"],"action":"SCMP_ACT_ERRNO"}]}', 'p'));
  assert.equal(run(denyList, NR.mount!), EPERM);
  assert.equal(run(denyList, 21, [], I386), 0x80000000, 'i386 mount: killed');
  assert.equal(run(denyList, 0x40000000 + NR.mount!), 0x80000000, 'x32 mount: killed');
  // Names this architecture does not have are skipped, as runc skips them.
  const p = compileProfile(parseProfile('{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["no_such_call","read"],"action":"SCMP_ACT_ALLOW"}]}', 'p'));
  assert.equal(run(p, NR.read!), ALLOW);

  assert.deepEqual(seccompRequest(undefined), { kind: 'unconfined' });
  assert.deepEqual(seccompRequest({ seccomp: { profile_type: 'RuntimeDefault' } }), { kind: 'runtime-default' });
  assert.deepEqual(seccompRequest({ seccomp_profile_path: 'docker/default' }), { kind: 'runtime-default' });
  assert.deepEqual(seccompRequest({ seccomp: { profile_type: 'Localhost', localhost_ref: '/var/lib/kubelet/seccomp/a.json' } }), { kind: 'localhost', path: '/var/lib/kubelet/seccomp/a.json' });
  assert.throws(() => seccompRequest({ seccomp: { profile_type: 'Localhost', localhost_ref: 'a.json' } }), SeccompProfileError);
  assert.throws(() => seccompRequest({ seccomp_profile_path: 'bogus' }), /unknown seccomp profile option/);

  const sc = (s: object) => ({ linux: { security_context: s } }) as never;
  assert.equal(containerSeccompProfile(sc({ privileged: true, seccomp: { profile_type: 'RuntimeDefault' } })), undefined);
  assert.equal(containerSeccompProgram(sc({ seccomp: { profile_type: 'Unconfined' } })), undefined);
  assert.ok(containerSeccompProgram(sc({ seccomp: { profile_type: 'RuntimeDefault' } }))!.length > 100);
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-seccomp-'));
  writeFileSync(join(dir, 'bad.json'), '{"defaultAction": 3}');
  assert.throws(() => containerSeccompProgram(sc({ seccomp: { profile_type: 'Localhost', localhost_ref: join(dir, 'bad.json') } })), /^SeccompProfileError: failed to generate seccomp spec opts: seccomp profile ".*bad\.json": defaultAction: unknown action 3$/);
  assert.throws(() => containerSeccompProgram(sc({ seccomp: { profile_type: 'Localhost', localhost_ref: join(dir, 'none.json') } })), /cannot load seccomp profile ".*none\.json": no such file or directory/);
});
