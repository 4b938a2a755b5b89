/*
 * nodelet-launch: the container's device allow-list on cgroup v2, where the devices controller is
 * an eBPF program attached to the cgroup (as runc's devicefilter). On cgroup v1 the runtime writes
 * devices.deny and devices.allow itself.
 */
#include "launch.h"
#include <linux/bpf.h>

#define MAX_INSNS 1024

static struct bpf_insn prog[MAX_INSNS];
static int nprog;

static void emit(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  if (nprog == MAX_INSNS) fail("too many device rules");
  prog[nprog++] = (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

/* Parses "c:1:3:rwm" (type a, b or c; -1 for any major or minor). */
static struct device_rule parse_rule(const char *s) {
  struct device_rule r = {0};
  char type = 0, access[8] = {0};
  if (sscanf(s, "%c:%d:%d:%7s", &type, &r.major, &r.minor, access) != 4 || !strchr("abc", type)) {
    errno = 0;
    fail("bad device rule %s", s);
  }
  r.type = type;
  for (char *a = access; *a; a++) {
    if (*a == 'm') r.access |= BPF_DEVCG_ACC_MKNOD;
    else if (*a == 'r') r.access |= BPF_DEVCG_ACC_READ;
    else if (*a == 'w') r.access |= BPF_DEVCG_ACC_WRITE;
    else {
      errno = 0;
      fail("bad device rule %s", s);
    }
  }
  return r;
}

/*
 * The program: r2 the device type, r3 the access asked for, r4 the major, r5 the minor; each rule a
 * block that returns 1 (allowed) when all of it matches and jumps to the next rule otherwise; 0 at
 * the end (denied).
 */
static void build(const char **rules, int n) {
  nprog = 0;
  emit(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0);
  emit(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
  emit(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 0, 0);
  emit(BPF_ALU | BPF_RSH | BPF_K, BPF_REG_3, 0, 0, 16);
  emit(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 4, 0);
  emit(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_5, BPF_REG_1, 8, 0);
  for (int i = 0; i < n; i++) {
    struct device_rule r = parse_rule(rules[i]);
    int jumps[4], njumps = 0;
    if (r.type != 'a') {
      jumps[njumps++] = nprog;
      emit(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 0, r.type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR);
    }
    if (r.access != (BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE)) {
      /* Every bit asked for must be one the rule gives. */
      emit(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_3, 0, 0);
      emit(BPF_ALU | BPF_AND | BPF_K, BPF_REG_1, 0, 0, r.access);
      jumps[njumps++] = nprog;
      emit(BPF_JMP | BPF_JNE | BPF_X, BPF_REG_1, BPF_REG_3, 0, 0);
    }
    if (r.major >= 0) {
      jumps[njumps++] = nprog;
      emit(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 0, r.major);
    }
    if (r.minor >= 0) {
      jumps[njumps++] = nprog;
      emit(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 0, r.minor);
    }
    emit(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
    emit(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    for (int j = 0; j < njumps; j++) prog[jumps[j]].off = (int16_t)(nprog - jumps[j] - 1);
  }
  emit(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
  emit(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

/* Loads the allow-list and attaches it to the cgroup directory: a failure stops the start (no container runs with every device). */
void restrict_devices(const char *cgroup, const char **rules, int n) {
  build(rules, n);
  static char log[65536];
  union bpf_attr load;
  memset(&load, 0, sizeof load);
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insns = (uint64_t)(uintptr_t)prog;
  load.insn_cnt = (uint32_t)nprog;
  load.license = (uint64_t)(uintptr_t) "Apache-2.0";
  load.log_buf = (uint64_t)(uintptr_t)log;
  load.log_size = sizeof log;
  load.log_level = 1;
  int pfd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof load);
  if (pfd < 0) fail("load the device filter (%.200s)", log);
  int cfd = open(cgroup, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (cfd < 0) fail("open the cgroup %s", cgroup);
  union bpf_attr attach;
  memset(&attach, 0, sizeof attach);
  attach.target_fd = (uint32_t)cfd;
  attach.attach_bpf_fd = (uint32_t)pfd;
  attach.attach_type = BPF_CGROUP_DEVICE;
  /* As runc: filters of the cgroups above stay in force beside this one. */
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  if (syscall(SYS_bpf, BPF_PROG_ATTACH, &attach, sizeof attach) < 0) fail("attach the device filter to %s", cgroup);
  close(cfd);
  close(pfd);
}
