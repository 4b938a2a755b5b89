// RuntimeDefault: containerd's default profile, built for a container's capabilities (the bounding
// set decides which privileged syscalls are allowed) on this kernel. Everything not allowed fails
// with EPERM; clone with a namespace flag is refused unless CAP_SYS_ADMIN is held, and clone3 then
// answers ENOSYS (so that libcs fall back to clone, which can be checked).
import { ALLOWED_FROM_KERNEL_4_8, ALLOWED_ON_X86_64, ALLOWED_WITH_CAPABILITY, ALWAYS_ALLOWED } from './default-profile-data.js';
import type { SeccompArg, SeccompProfile, SeccompRule } from './profile.js';

const AF_ALG = 38n;
const AF_VSOCK = 40n;
const ENOSYS = 38;
/** CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP */
const CLONE_NAMESPACES = 0x00020000n | 0x04000000n | 0x08000000n | 0x10000000n | 0x20000000n | 0x40000000n | 0x02000000n;

const allow = (names: readonly string[], args: SeccompArg[] = []): SeccompRule => ({ names: [...names], action: 'SCMP_ACT_ALLOW', args });
const arg0 = (op: SeccompArg['op'], value: bigint, valueTwo = 0n): SeccompArg => ({ index: 0, value, valueTwo, op });

/** `bounding`: the container's bounding capability names (CAP_...); `kernel`: [major, minor]. */
export function runtimeDefaultProfile(bounding: readonly string[], kernel: [number, number]): SeccompProfile {
  const rules: SeccompRule[] = [allow(ALWAYS_ALLOWED)];
  // socket for every address family but AF_ALG and AF_VSOCK (three ranges, as containerd splits them).
  rules.push(allow(['socket'], [arg0('SCMP_CMP_LT', AF_ALG)]), allow(['socket'], [arg0('SCMP_CMP_EQ', AF_ALG + 1n)]), allow(['socket'], [arg0('SCMP_CMP_GT', AF_VSOCK)]));
  for (const persona of [0x0n, 0x0008n, 0x20000n, 0x20008n, 0xffffffffn]) rules.push(allow(['personality'], [arg0('SCMP_CMP_EQ', persona)]));
  if (kernel[0] > 4 || (kernel[0] === 4 && kernel[1] >= 8)) rules.push(allow(ALLOWED_FROM_KERNEL_4_8));
  rules.push(allow(ALLOWED_ON_X86_64));
  for (const cap of new Set(bounding)) {
    const names = ALLOWED_WITH_CAPABILITY[cap];
    if (names) rules.push(allow(names));
  }
  if (!bounding.includes('CAP_SYS_ADMIN')) {
    rules.push(allow(['clone'], [arg0('SCMP_CMP_MASKED_EQ', CLONE_NAMESPACES, 0n)]));
    rules.push({ names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS, args: [] });
  }
  return { defaultAction: 'SCMP_ACT_ERRNO', architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'], syscalls: rules };
}
