// A seccomp profile compiled to the classic BPF program the kernel runs on each syscall (what
// the launcher loads): the architecture checked first, then each rule in order, the
// first that matches the syscall number and all its argument conditions deciding, the profile's
// default action last. x86_64 only; syscalls of other ABIs (i386, x32) get the default action.
import { SYSCALLS_X86_64 } from './syscalls-x86_64.js';
import { SeccompProfileError, type Action, type SeccompArg, type SeccompProfile } from './profile.js';

const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;

// Classic BPF opcodes.
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGT_K = 0x25;
const JGE_K = 0x35;
const AND_K = 0x54;
const RET_K = 0x06;

// struct seccomp_data offsets.
const NR = 0;
const ARCH = 4;
const argLo = (i: number) => 16 + 8 * i;
const argHi = (i: number) => 20 + 8 * i;

const EPERM = 1;

/** The SECCOMP_RET_* value of an action. */
export function actionValue(a: Action, errno?: number): number {
  switch (a) {
    case 'SCMP_ACT_KILL':
    case 'SCMP_ACT_KILL_THREAD':
      return 0x00000000;
    case 'SCMP_ACT_KILL_PROCESS':
      return 0x80000000;
    case 'SCMP_ACT_TRAP':
      return 0x00030000;
    case 'SCMP_ACT_ERRNO':
      return (0x00050000 | ((errno ?? EPERM) & 0xffff)) >>> 0;
    case 'SCMP_ACT_TRACE':
      return (0x7ff00000 | ((errno ?? EPERM) & 0xffff)) >>> 0;
    case 'SCMP_ACT_LOG':
      return 0x7ffc0000;
    case 'SCMP_ACT_ALLOW':
      return 0x7fff0000;
  }
}

type Target = number | string; // a fixed offset (0: the next instruction) or a label
interface Insn {
  code: number;
  k: number;
  jt?: Target;
  jf?: Target;
}

class Assembler {
  readonly insns: Insn[] = [];
  private readonly labels = new Map<string, number>();
  private n = 0;

  label(): string {
    return `L${this.n++}`;
  }
  place(l: string): void {
    this.labels.set(l, this.insns.length);
  }
  emit(code: number, k: number, jt: Target = 0, jf: Target = 0): void {
    this.insns.push({ code, k: k >>> 0, jt, jf });
  }
  /** The program as the kernel reads it: 8 bytes per instruction (u16 code, u8 jt, u8 jf, u32 k). */
  assemble(): Buffer {
    if (this.insns.length > 4096) throw new SeccompProfileError(`the seccomp program has ${this.insns.length} instructions, more than the kernel's 4096`);
    const out = Buffer.alloc(this.insns.length * 8);
    this.insns.forEach((ins, i) => {
      const off = (t: Target | undefined) => {
        if (t === undefined || typeof t === 'number') return t ?? 0;
        const at = this.labels.get(t);
        if (at === undefined) throw new Error(`seccomp assembler: label ${t} was never placed`);
        const d = at - (i + 1);
        if (d < 0 || d > 255) throw new SeccompProfileError('a seccomp rule is too long to compile (a jump beyond 255 instructions)');
        return d;
      };
      out.writeUInt16LE(ins.code, i * 8);
      out.writeUInt8(off(ins.jt), i * 8 + 2);
      out.writeUInt8(off(ins.jf), i * 8 + 3);
      out.writeUInt32LE(ins.k, i * 8 + 4);
    });
    return out;
  }
}

const hi = (v: bigint) => Number((v >> 32n) & 0xffffffffn);
const lo = (v: bigint) => Number(v & 0xffffffffn);

/** One argument condition: falls through when it holds, jumps to `fail` when not. Clobbers A. */
function condition(a: Assembler, c: SeccompArg, fail: string): void {
  const pass = a.label();
  const { index: i, value: v, valueTwo: v2 } = c;
  switch (c.op) {
    case 'SCMP_CMP_EQ':
      a.emit(LD_W_ABS, argHi(i));
      a.emit(JEQ_K, hi(v), 0, fail);
      a.emit(LD_W_ABS, argLo(i));
      a.emit(JEQ_K, lo(v), 0, fail);
      break;
    case 'SCMP_CMP_NE':
      a.emit(LD_W_ABS, argHi(i));
      a.emit(JEQ_K, hi(v), 0, pass);
      a.emit(LD_W_ABS, argLo(i));
      a.emit(JEQ_K, lo(v), fail, 0);
      break;
    case 'SCMP_CMP_MASKED_EQ':
      a.emit(LD_W_ABS, argHi(i));
      a.emit(AND_K, hi(v));
      a.emit(JEQ_K, hi(v2), 0, fail);
      a.emit(LD_W_ABS, argLo(i));
      a.emit(AND_K, lo(v));
      a.emit(JEQ_K, lo(v2), 0, fail);
      break;
    case 'SCMP_CMP_GT':
    case 'SCMP_CMP_GE':
      // The high words decide unless equal; then the low words.
      a.emit(LD_W_ABS, argHi(i));
      a.emit(JGT_K, hi(v), pass, 0);
      a.emit(JEQ_K, hi(v), 0, fail);
      a.emit(LD_W_ABS, argLo(i));
      a.emit(c.op === 'SCMP_CMP_GT' ? JGT_K : JGE_K, lo(v), 0, fail);
      break;
    case 'SCMP_CMP_LT':
    case 'SCMP_CMP_LE':
      a.emit(LD_W_ABS, argHi(i));
      a.emit(JGT_K, hi(v), fail, 0);
      a.emit(JEQ_K, hi(v), 0, pass);
      a.emit(LD_W_ABS, argLo(i));
      a.emit(c.op === 'SCMP_CMP_LT' ? JGE_K : JGT_K, lo(v), fail, 0);
      break;
  }
  a.place(pass);
}

/**
 * The BPF program of a profile. Names this architecture does not have are skipped (as runc
 * skips them); a profile that names none it has, or that cannot be compiled, is an error.
 */
export function compileProfile(p: SeccompProfile, table: Readonly<Record<string, number>> = SYSCALLS_X86_64): Buffer {
  if (p.architectures.length > 0 && !p.architectures.includes('SCMP_ARCH_X86_64')) {
    throw new SeccompProfileError(`the seccomp profile is for ${p.architectures.join(', ')}, not this node's x86_64`);
  }
  const a = new Assembler();
  const deflt = actionValue(p.defaultAction, p.defaultErrnoRet);
  // A 32-bit or x32 call has other numbers than the rules name: where the profile's default lets
  // calls through (a deny list), it is killed, as libseccomp kills a foreign architecture;
  // otherwise it gets the default, a refusal.
  const lets = ['SCMP_ACT_ALLOW', 'SCMP_ACT_LOG', 'SCMP_ACT_TRACE'].includes(p.defaultAction);
  const foreign = lets ? actionValue('SCMP_ACT_KILL_PROCESS') : deflt;
  const native = a.label();
  a.emit(LD_W_ABS, ARCH);
  a.emit(JEQ_K, AUDIT_ARCH_X86_64, native, 0);
  a.emit(RET_K, foreign);
  a.place(native);
  a.emit(LD_W_ABS, NR);
  const x64 = a.label();
  a.emit(JGE_K, X32_SYSCALL_BIT, 0, x64);
  a.emit(RET_K, foreign);
  a.place(x64);
  let loaded = true; // A holds the syscall number
  for (const rule of p.syscalls) {
    const ret = actionValue(rule.action, rule.errnoRet);
    for (const name of rule.names) {
      const nr = table[name];
      if (nr === undefined) continue;
      if (!loaded) a.emit(LD_W_ABS, NR);
      const next = a.label();
      a.emit(JEQ_K, nr, 0, next);
      for (const c of rule.args) condition(a, c, next);
      a.emit(RET_K, ret);
      a.place(next);
      loaded = rule.args.length === 0;
    }
  }
  a.emit(RET_K, deflt);
  return a.assemble();
}
