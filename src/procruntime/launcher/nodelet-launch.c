/*
 * nodelet-launch: the process runtime's container init, what runc's init is to runc.
 *
 * It is C, not TypeScript, because the steps between fork and exec of a container's process
 * (setns, unshare, mounts by file descriptor, pivot_root, the bounding set, no_new_privs, a seccomp
 * filter, the switch of user) are system calls a Node.js process cannot make for a child.
 * The runtime decides everything; this program only carries it out, in runc's order:
 *
 *   the monitor (this process): joins the pod's network, IPC and UTS namespaces, joins the pod's
 *   PID namespace or makes one, forks the container, reports {"child-pid": N} once the command
 *   runs (or {"error": "..."} when it cannot), waits, reports {"exit-code": N}.
 *
 *   the child: a mount namespace of its own (propagation as asked), the root filesystem, /proc,
 *   /dev, /sys, /dev/shm, the binds (propagation rprivate/rslave/rshared, read-only or recursively
 *   read-only), masked and read-only paths, pivot_root, then no_new_privs, seccomp, the bounding
 *   set, groups, gid, uid, capabilities, working directory, environment, exec.
 *
 * With --enter PID it runs a command in a running container instead (CRI's Exec): it joins every
 * namespace of PID, its mount namespace included, and applies the same security settings.
 * With --reaper it only holds a new PID namespace, as its init, reaping what is left to it.
 *
 * Every path inside the container is resolved inside its root (openat2 RESOLVE_IN_ROOT) and
 * mounted on through its file descriptor, so no link in an image can point a mount at the host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ITEMS 256

enum prop { PROP_DEFAULT, PROP_PRIVATE, PROP_SLAVE, PROP_SHARED };

struct bind {
  const char *src, *dst;
  int ro, rro;
  enum prop prop;
};

static struct {
  int status_fd;
  const char *join_net, *join_ipc, *join_uts, *join_pid;
  int unshare_pid, unshare_ipc, unshare_uts;
  const char *hostname;
  int enter_pid;
  int reaper;
  const char *rootfs;
  int rootfs_ro;
  enum prop rootfs_prop;
  const char *shm;
  struct bind binds[MAX_ITEMS];
  int nbinds;
  const char *masked[MAX_ITEMS];
  int nmasked;
  const char *readonly[MAX_ITEMS];
  int nreadonly;
  int has_caps;
  uint64_t caps;
  uid_t uid;
  gid_t gid;
  gid_t groups[MAX_ITEMS];
  int ngroups;
  int nnp;
  int seccomp_fd;
  const char *cwd;
  char *env[MAX_ITEMS * 4];
  int nenv;
  char **argv;
} opt = {.status_fd = -1, .seccomp_fd = -1, .enter_pid = -1};

static int err_fd = -1; /* the child's end of the error pipe */

/* A failure: in the child it goes up the error pipe to the monitor; in the monitor it is reported. */
static void report_error(const char *msg);

static void fail(const char *fmt, ...) {
  char msg[1024];
  int saved = errno;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (saved && n > 0 && (size_t)n < sizeof msg) snprintf(msg + n, sizeof msg - n, ": %s", strerror(saved));
  if (err_fd >= 0) {
    ssize_t w = write(err_fd, msg, strlen(msg));
    (void)w;
    _exit(127);
  }
  report_error(msg);
  exit(127);
}

static void write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

static void report_error(const char *msg) {
  if (opt.status_fd < 0) {
    dprintf(2, "nodelet-launch: %s\n", msg);
    return;
  }
  char buf[2200];
  size_t o = 0;
  o += (size_t)snprintf(buf, sizeof buf, "{\"error\": \"");
  for (const char *p = msg; *p && o < sizeof buf - 8; p++) {
    if (*p == '"' || *p == '\\') buf[o++] = '\\', buf[o++] = *p;
    else if ((unsigned char)*p < 0x20) buf[o++] = ' ';
    else buf[o++] = *p;
  }
  o += (size_t)snprintf(buf + o, sizeof buf - o, "\"}\n");
  write_all(opt.status_fd, buf, o);
}

static long number(const char *s, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 0);
  if (errno || *end || end == s) {
    errno = 0;
    fail("%s: not a number: %s", what, s);
  }
  return v;
}

static enum prop parse_prop(const char *s) {
  if (!strcmp(s, "private")) return PROP_PRIVATE;
  if (!strcmp(s, "slave")) return PROP_SLAVE;
  if (!strcmp(s, "shared")) return PROP_SHARED;
  fail("unknown propagation: %s", s);
  return PROP_DEFAULT;
}

static void parse_bind_opts(struct bind *b, const char *opts) {
  char *copy = strdup(opts), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!strcmp(t, "ro")) b->ro = 1;
    else if (!strcmp(t, "rro")) b->ro = b->rro = 1;
    else if (!strcmp(t, "rw")) b->ro = 0;
    else b->prop = parse_prop(t);
  }
  free(copy);
}

static void parse_args(int argc, char **argv) {
  int i = 1;
#define NEED(n) \
  if (i + (n) >= argc) fail("%s needs %d argument(s)", a, n)
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--version")) {
      printf("nodelet-launch 1\n");
      exit(0);
    } else if (!strcmp(a, "--")) {
      i++;
      break;
    } else if (!strcmp(a, "--status-fd")) {
      NEED(1);
      opt.status_fd = (int)number(argv[++i], a);
    } else if (!strcmp(a, "--join-net")) {
      NEED(1);
      opt.join_net = argv[++i];
    } else if (!strcmp(a, "--join-ipc")) {
      NEED(1);
      opt.join_ipc = argv[++i];
    } else if (!strcmp(a, "--join-uts")) {
      NEED(1);
      opt.join_uts = argv[++i];
    } else if (!strcmp(a, "--join-pid")) {
      NEED(1);
      opt.join_pid = argv[++i];
    } else if (!strcmp(a, "--unshare-pid")) {
      opt.unshare_pid = 1;
    } else if (!strcmp(a, "--unshare-ipc")) {
      opt.unshare_ipc = 1;
    } else if (!strcmp(a, "--unshare-uts")) {
      opt.unshare_uts = 1;
    } else if (!strcmp(a, "--hostname")) {
      NEED(1);
      opt.hostname = argv[++i];
    } else if (!strcmp(a, "--enter")) {
      NEED(1);
      opt.enter_pid = (int)number(argv[++i], a);
    } else if (!strcmp(a, "--reaper")) {
      opt.reaper = 1;
    } else if (!strcmp(a, "--rootfs")) {
      NEED(1);
      opt.rootfs = argv[++i];
    } else if (!strcmp(a, "--rootfs-ro")) {
      opt.rootfs_ro = 1;
    } else if (!strcmp(a, "--rootfs-propagation")) {
      NEED(1);
      opt.rootfs_prop = parse_prop(argv[++i]);
    } else if (!strcmp(a, "--shm")) {
      NEED(1);
      opt.shm = argv[++i];
    } else if (!strcmp(a, "--bind")) {
      NEED(3);
      if (opt.nbinds == MAX_ITEMS) fail("too many binds");
      struct bind *b = &opt.binds[opt.nbinds++];
      b->src = argv[++i];
      b->dst = argv[++i];
      parse_bind_opts(b, argv[++i]);
    } else if (!strcmp(a, "--mask")) {
      NEED(1);
      if (opt.nmasked == MAX_ITEMS) fail("too many masked paths");
      opt.masked[opt.nmasked++] = argv[++i];
    } else if (!strcmp(a, "--readonly")) {
      NEED(1);
      if (opt.nreadonly == MAX_ITEMS) fail("too many read-only paths");
      opt.readonly[opt.nreadonly++] = argv[++i];
    } else if (!strcmp(a, "--caps")) {
      NEED(1);
      opt.has_caps = 1;
      opt.caps = strtoull(argv[++i], NULL, 16);
    } else if (!strcmp(a, "--uid")) {
      NEED(1);
      opt.uid = (uid_t)number(argv[++i], a);
    } else if (!strcmp(a, "--gid")) {
      NEED(1);
      opt.gid = (gid_t)number(argv[++i], a);
    } else if (!strcmp(a, "--groups")) {
      NEED(1);
      char *copy = strdup(argv[++i]), *save = NULL;
      for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (opt.ngroups == MAX_ITEMS) fail("too many groups");
        opt.groups[opt.ngroups++] = (gid_t)number(t, a);
      }
      free(copy);
    } else if (!strcmp(a, "--nnp")) {
      opt.nnp = 1;
    } else if (!strcmp(a, "--seccomp")) {
      NEED(1);
      opt.seccomp_fd = (int)number(argv[++i], a);
    } else if (!strcmp(a, "--cwd")) {
      NEED(1);
      opt.cwd = argv[++i];
    } else if (!strcmp(a, "--env")) {
      NEED(1);
      if (opt.nenv == MAX_ITEMS * 4 - 1) fail("too many environment variables");
      opt.env[opt.nenv++] = argv[++i];
    } else {
      fail("unknown argument: %s", a);
    }
  }
  opt.argv = argv + i;
  if (!opt.reaper && !opt.argv[0]) fail("no command");
}

/* ---- namespaces ---------------------------------------------------------------------------- */

static void join_ns(const char *path, int type, const char *what) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open the pod's %s namespace %s", what, path);
  if (setns(fd, type) < 0) fail("join the %s namespace %s", what, path);
  close(fd);
}

/* ---- mounts -------------------------------------------------------------------------------- */

static int root_fd = -1;

/* A path of the container, resolved inside its root; -1 with errno when it cannot be. */
static int open_in_root(const char *path, int flags) {
  struct open_how how = {.flags = (uint64_t)(flags | O_PATH | O_CLOEXEC), .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  return (int)syscall(SYS_openat2, root_fd, path, &how, sizeof how);
}

/* Makes a directory of the container and those above it, inside its root, where they are missing. */
static void mkdir_in_root(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != 0) continue;
    char saved = *p;
    *p = 0;
    int fd = open_in_root(buf, 0);
    if (fd < 0) {
      char *slash = strrchr(buf, '/');
      *slash = 0;
      int parent = open_in_root(*buf ? buf : "/", O_DIRECTORY);
      *slash = '/';
      if (parent < 0 || (mkdirat(parent, slash + 1, 0755) < 0 && errno != EEXIST)) fail("make the directory %s", buf);
      close(parent);
    } else {
      close(fd);
    }
    *p = saved;
    if (!saved || !p[1]) break;
  }
}

static const char *fd_path(int fd, char *buf) {
  snprintf(buf, 64, "/proc/self/fd/%d", fd);
  return buf;
}

/* mount(2) onto a path of the container (resolved in its root): a link cannot take it elsewhere. */
static void mount_at(const char *src, const char *dst, const char *type, unsigned long flags, const char *data) {
  int fd = open_in_root(dst, 0);
  if (fd < 0) fail("mount point %s", dst);
  char p[64];
  if (mount(src, fd_path(fd, p), type, flags, data) < 0) fail("mount %s on %s", src ? src : type, dst);
  close(fd);
}

static unsigned long prop_flags(enum prop p) {
  switch (p) {
  case PROP_SHARED: return MS_SHARED;
  case PROP_SLAVE: return MS_SLAVE;
  default: return MS_PRIVATE;
  }
}

/* Read-only on the mount at a container path: this mount alone, or it and every mount below it. */
static void make_readonly(const char *dst, int recursive) {
  int fd = open_in_root(dst, 0);
  if (fd < 0) fail("read-only %s", dst);
  if (recursive) {
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
    if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) fail("make %s recursively read-only", dst);
  } else {
    char p[64];
    if (mount(NULL, fd_path(fd, p), NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0) fail("make %s read-only", dst);
  }
  close(fd);
}

static void bind_into(const char *src, const char *dst, int recursive) {
  mount_at(src, dst, NULL, MS_BIND | (recursive ? MS_REC : 0), NULL);
}

static void mknod_dev(int devfd, const char *name, unsigned maj, unsigned min) {
  if (mknodat(devfd, name, S_IFCHR | 0666, makedev(maj, min)) < 0) fail("mknod /dev/%s", name);
  /* the umask would have taken bits away */
  if (fchmodat(devfd, name, 0666, 0) < 0) fail("chmod /dev/%s", name);
}

/* /dev as a container's: a tmpfs with the usual devices, its own devpts, /dev/shm and the links. */
static void setup_dev(void) {
  mount_at("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k");
  int devfd = open_in_root("/dev", O_DIRECTORY);
  if (devfd < 0) fail("open /dev");
  char p[64];
  int dev = open(fd_path(devfd, p), O_DIRECTORY | O_CLOEXEC);
  if (dev < 0) fail("open /dev");
  close(devfd);
  mknod_dev(dev, "null", 1, 3);
  mknod_dev(dev, "zero", 1, 5);
  mknod_dev(dev, "full", 1, 7);
  mknod_dev(dev, "random", 1, 8);
  mknod_dev(dev, "urandom", 1, 9);
  mknod_dev(dev, "tty", 5, 0);
  const char *dirs[] = {"pts", "shm", "mqueue"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
    if (mkdirat(dev, dirs[i], 0755) < 0) fail("mkdir /dev/%s", dirs[i]);
  const char *links[][2] = {{"pts/ptmx", "ptmx"}, {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}, {"/proc/kcore", "core"}};
  for (size_t i = 0; i < sizeof links / sizeof *links; i++)
    if (symlinkat(links[i][0], dev, links[i][1]) < 0) fail("link /dev/%s", links[i][1]);
  close(dev);
  mount_at("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5");
  if (opt.shm) bind_into(opt.shm, "/dev/shm", 0);
  else mount_at("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k");
  mount_at("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

/* A bind's mount point, made inside the root where the image lacks it: a directory, or an empty file. */
static void make_mount_point(const char *src, const char *dst) {
  int fd = open_in_root(dst, 0);
  if (fd >= 0) {
    close(fd);
    return;
  }
  struct stat st;
  if (stat(src, &st) < 0) fail("the mount source %s", src);
  if (S_ISDIR(st.st_mode)) {
    mkdir_in_root(dst);
    return;
  }
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", dst);
  char *slash = strrchr(parent, '/');
  if (!slash || !slash[1]) fail("mount point %s", dst);
  *slash = 0;
  if (*parent) mkdir_in_root(parent);
  int dir = open_in_root(*parent ? parent : "/", O_DIRECTORY);
  if (dir < 0) fail("mount point %s", dst);
  char p[64];
  int real = open(fd_path(dir, p), O_DIRECTORY | O_CLOEXEC);
  if (real < 0) fail("mount point %s", dst);
  int f = openat(real, slash + 1, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (f < 0) fail("make the mount point %s", dst);
  close(f);
  close(real);
  close(dir);
}

static void setup_binds(void) {
  for (int i = 0; i < opt.nbinds; i++) {
    struct bind *b = &opt.binds[i];
    if (b->rro && (!b->ro || b->prop == PROP_SLAVE || b->prop == PROP_SHARED)) {
      errno = 0;
      fail("recursive read-only mount %s must be read-only and private", b->dst);
    }
    make_mount_point(b->src, b->dst);
    bind_into(b->src, b->dst, 1);
    mount_at(NULL, b->dst, NULL, MS_REC | prop_flags(b->prop), NULL);
    if (b->ro) make_readonly(b->dst, b->rro);
  }
}

/* As runc: a masked directory gets an empty read-only tmpfs, a masked file /dev/null; absent paths are left alone. */
static void setup_masked(void) {
  for (int i = 0; i < opt.nmasked; i++) {
    int fd = open_in_root(opt.masked[i], 0);
    if (fd < 0) continue;
    struct stat st;
    char p[64];
    int bad = fstat(fd, &st) < 0;
    if (!bad && S_ISDIR(st.st_mode)) bad = mount("tmpfs", fd_path(fd, p), "tmpfs", MS_RDONLY, "size=0") < 0;
    else if (!bad) bad = mount("/dev/null", fd_path(fd, p), NULL, MS_BIND, NULL) < 0;
    if (bad) fail("mask %s", opt.masked[i]);
    close(fd);
  }
  for (int i = 0; i < opt.nreadonly; i++) {
    int fd = open_in_root(opt.readonly[i], 0);
    if (fd < 0) continue;
    close(fd);
    bind_into(opt.readonly[i], opt.readonly[i], 1);
    make_readonly(opt.readonly[i], 1);
  }
}

/* The container's mount namespace and root: what it sees, then pivot_root into it. */
static void setup_rootfs(void) {
  if (unshare(CLONE_NEWNS) < 0) fail("unshare the mount namespace");
  /* Nothing the container mounts reaches the host, unless a bind asks for rshared (as runc). */
  unsigned long rootprop = opt.rootfs_prop == PROP_DEFAULT ? MS_SLAVE : prop_flags(opt.rootfs_prop);
  if (mount(NULL, "/", NULL, MS_REC | rootprop, NULL) < 0) fail("set the propagation of /");
  /* pivot_root wants the new root, and the mount under it, not shared: bind twice, the lower private. */
  if (mount(opt.rootfs, opt.rootfs, NULL, MS_BIND | MS_REC, NULL) < 0) fail("bind the root filesystem %s", opt.rootfs);
  if (mount(NULL, opt.rootfs, NULL, MS_PRIVATE, NULL) < 0) fail("make the root filesystem private");
  if (mount(opt.rootfs, opt.rootfs, NULL, MS_BIND | MS_REC, NULL) < 0) fail("bind the root filesystem %s", opt.rootfs);
  if (mount(NULL, opt.rootfs, NULL, MS_PRIVATE, NULL) < 0) fail("make the root filesystem private");
  root_fd = open(opt.rootfs, O_DIRECTORY | O_PATH | O_CLOEXEC);
  if (root_fd < 0) fail("open the root filesystem %s", opt.rootfs);

  const char *points[] = {"/proc", "/dev", "/sys"};
  for (size_t i = 0; i < sizeof points / sizeof *points; i++) mkdir_in_root(points[i]);
  /* A working directory the image lacks is made, as runc makes it. */
  if (opt.cwd) mkdir_in_root(opt.cwd);
  mount_at("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  setup_dev();
  bind_into("/sys", "/sys", 1);
  make_readonly("/sys", 1);
  setup_binds();
  setup_masked();

  int old_root = open("/", O_DIRECTORY | O_PATH | O_CLOEXEC);
  if (old_root < 0) fail("open /");
  if (fchdir(root_fd) < 0) fail("enter the root filesystem");
  if (syscall(SYS_pivot_root, ".", ".") < 0) fail("pivot_root");
  /* The old root sits on top of the new one now: slave first, so that unmounting it does not reach the host. */
  if (fchdir(old_root) < 0) fail("enter the old root");
  close(old_root);
  if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0) fail("make the old root a slave");
  if (umount2(".", MNT_DETACH) < 0) fail("unmount the old root");
  if (chdir("/") < 0) fail("chdir /");
  close(root_fd);
  if (opt.rootfs_ro && mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0) fail("make the root filesystem read-only");
}

/* ---- security ------------------------------------------------------------------------------ */

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

static int last_cap(void) {
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
static void apply_security(int lastcap) {
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

/* ---- the container's process --------------------------------------------------------------- */

static void child(pid_t monitor, int lastcap) {
  /* Dies with its monitor, checked once that is set (the monitor may already be gone). */
  /* (In a PID namespace of its own, its parent is outside it: 0.) */
  pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || (parent != monitor && parent != 0)) _exit(127);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (opt.enter_pid >= 0) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/ns/mnt", opt.enter_pid);
    join_ns(p, CLONE_NEWNS, "mount");
  } else if (opt.rootfs) {
    setup_rootfs();
  }
  if (opt.hostname && sethostname(opt.hostname, strlen(opt.hostname)) < 0) fail("set the hostname");
  if (chdir(opt.cwd ? opt.cwd : "/") < 0) fail("chdir to the working directory %s", opt.cwd ? opt.cwd : "/");
  apply_security(lastcap);
  /* setresuid cleared the death signal: set again, before the command runs. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) fail("set the parent death signal");
  opt.env[opt.nenv] = NULL;
  environ = opt.env;
  execvp(opt.argv[0], opt.argv);
  fail("exec %s", opt.argv[0]);
}

/* The init of a PID namespace that holds it for a pod: it reaps what is left to it, and waits. */
static void reap_forever(void) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, NULL);
  for (;;) {
    if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD) {
      int sig;
      sigset_t chld;
      sigemptyset(&chld);
      sigaddset(&chld, SIGCHLD);
      sigwait(&chld, &sig);
    }
  }
}

int main(int argc, char **argv) {
  parse_args(argc, argv);
  int lastcap = last_cap();
  if (opt.enter_pid >= 0) {
    /* Every namespace of the running container (the mount namespace is joined by the child). */
    const char *kinds[] = {"ipc", "uts", "net", "pid"};
    int types[] = {CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWPID};
    for (int i = 0; i < 4; i++) {
      char p[64];
      snprintf(p, sizeof p, "/proc/%d/ns/%s", opt.enter_pid, kinds[i]);
      join_ns(p, types[i], kinds[i]);
    }
  }
  if (opt.join_net) join_ns(opt.join_net, CLONE_NEWNET, "network");
  if (opt.join_ipc) join_ns(opt.join_ipc, CLONE_NEWIPC, "IPC");
  if (opt.join_uts) join_ns(opt.join_uts, CLONE_NEWUTS, "UTS");
  if (opt.join_pid) join_ns(opt.join_pid, CLONE_NEWPID, "PID");
  int flags = (opt.unshare_pid ? CLONE_NEWPID : 0) | (opt.unshare_ipc ? CLONE_NEWIPC : 0) | (opt.unshare_uts ? CLONE_NEWUTS : 0);
  if (flags && unshare(flags) < 0) fail("unshare namespaces");

  /* The monitor outlives signals meant for the container; the container gets them by its PID. */
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGHUP);
  sigaddset(&block, SIGCHLD);
  sigprocmask(SIG_BLOCK, &block, &old);

  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0) fail("pipe");
  pid_t monitor = getpid();
  pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    close(pipefd[0]);
    err_fd = pipefd[1];
    if (opt.status_fd >= 0) close(opt.status_fd);
    if (opt.reaper) {
      close(err_fd);
      reap_forever();
    }
    child(monitor, lastcap);
  }
  close(pipefd[1]);
  if (opt.seccomp_fd >= 0) close(opt.seccomp_fd);
  /* The error pipe closes on exec: data on it is why the container could not start. */
  char msg[1100];
  size_t n = 0;
  for (;;) {
    ssize_t r = read(pipefd[0], msg + n, sizeof msg - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (n == sizeof msg - 1) break;
  }
  close(pipefd[0]);
  int status;
  if (n > 0) {
    msg[n] = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    errno = 0;
    err_fd = -1;
    report_error(msg);
    return 127;
  }
  if (opt.status_fd >= 0) dprintf(opt.status_fd, "{\"child-pid\": %d}\n", pid);
  if (opt.enter_pid >= 0) {
    /*
     * An exec's monitor is how the runtime ends it: SIGTERM kills the command, which the monitor
     * reaps (a parent that died first would leave it a zombie of the container's init), then
     * whatever else is left in its process group. SIGINT and SIGHUP go on to the command.
     */
    for (;;) {
      int sig = 0;
      sigwait(&block, &sig);
      if (sig == SIGCHLD) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        continue;
      }
      if (sig != SIGTERM) {
        kill(pid, sig);
        continue;
      }
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      signal(SIGTERM, SIG_DFL);
      kill(0, SIGKILL);
    }
  } else {
    for (;;) {
      pid_t w = waitpid(pid, &status, 0);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) return 127;
    }
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (opt.status_fd >= 0) dprintf(opt.status_fd, "{\"exit-code\": %d}\n", code);
  return code;
}
