/* nodelet-launch: no_new_privs, seccomp, the bounding set, ids and capabilities, in runc's order. */
#include "launch.h"


static void load_seccomp(void) {
  if (opt.seccomp_fd < 0) return;
  static char prog[65536 * sizeof(struct sock_filter)];
  size_t n = 0;
  for (;;) {
    ssize_t r = read(opt.seccomp_fd, prog + n, sizeof prog - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("read the seccomp program");
    if (r == 0) break;
    n += (size_t)r;
    if (n == sizeof prog) {
      errno = 0;
      fail("the seccomp program is too long");
    }
  }
  if (n == 0 || n % sizeof(struct sock_filter)) {
    errno = 0;
    fail("the seccomp program is not a whole number of BPF instructions");
  }
  struct sock_fprog fprog = {.len = (unsigned short)(n / sizeof(struct sock_filter)), .filter = (struct sock_filter *)prog};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) < 0) fail("load the seccomp filter");
  close(opt.seccomp_fd);
}

int last_cap(void) {
  FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
  int n = CAP_LAST_CAP;
  if (f) {
    if (fscanf(f, "%d", &n) != 1) n = CAP_LAST_CAP;
    fclose(f);
  }
  return n;
}

/*
 * runc's order: no_new_privs; seccomp early when no_new_privs is not set (loading it then needs
 * CAP_SYS_ADMIN); the bounding set; groups, gid, uid (a user other than root loses every
 * capability here); the capability sets; seccomp last when no_new_privs allows it.
 */
void apply_security(int lastcap) {
  if (opt.nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) fail("set no_new_privs");
  if (!opt.nnp) load_seccomp();
  if (opt.has_caps) {
    for (int c = 0; c <= lastcap; c++)
      if (!(opt.caps & (1ULL << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL) fail("drop capability %d from the bounding set", c);
  }
  if (setgroups((size_t)opt.ngroups, opt.groups) < 0) fail("set the supplementary groups");
  if (setresgid(opt.gid, opt.gid, opt.gid) < 0) fail("set gid %u", opt.gid);
  if (setresuid(opt.uid, opt.uid, opt.uid) < 0) fail("set uid %u", opt.uid);
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) fail("clear the ambient capabilities");
  if (opt.has_caps) {
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2] = {{0}};
    if (syscall(SYS_capget, &hdr, data) < 0) fail("read the capabilities");
    /* What the runtime itself lacks no container gets (a privileged one gets the rest). */
    uint64_t have = (uint64_t)data[0].permitted | ((uint64_t)data[1].permitted << 32);
    uint64_t set = opt.uid == 0 ? opt.caps & have : 0;
    memset(data, 0, sizeof data);
    data[0].effective = data[0].permitted = (uint32_t)set;
    data[1].effective = data[1].permitted = (uint32_t)(set >> 32);
    if (syscall(SYS_capset, &hdr, data) < 0) fail("set the capabilities");
  }
  if (opt.nnp) load_seccomp();
}
