/* nodelet-launch: the container's mount namespace and root, as runc makes them. */
#include "launch.h"

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
    /* A remount sets every per-mount flag anew: the ones the mount has (nosuid, nodev, noexec ...) are kept. */
    char p[64];
    struct statvfs vfs;
    unsigned long keep = 0;
    if (statvfs(fd_path(fd, p), &vfs) == 0) {
      if (vfs.f_flag & ST_NOSUID) keep |= MS_NOSUID;
      if (vfs.f_flag & ST_NODEV) keep |= MS_NODEV;
      if (vfs.f_flag & ST_NOEXEC) keep |= MS_NOEXEC;
      if (vfs.f_flag & ST_NOATIME) keep |= MS_NOATIME;
      if (vfs.f_flag & ST_NODIRATIME) keep |= MS_NODIRATIME;
      if (vfs.f_flag & ST_RELATIME) keep |= MS_RELATIME;
    }
    if (mount(NULL, fd_path(fd, p), NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | keep, NULL) < 0) fail("make %s read-only", dst);
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
  /* Opened after the mount: the tmpfs (an O_PATH descriptor serves the *at calls). */
  int dev = open_in_root("/dev", O_DIRECTORY);
  if (dev < 0) fail("open /dev");
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

/* The cgroup hierarchy's mount on the host: cgroup2 (one unified hierarchy) or v1's tmpfs of hierarchies. */
static int host_cgroup2(void) {
  struct statfs fs;
  return statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

/*
 * /sys as runc gives it: a sysfs of its own (the devices of the pod's network namespace, not the
 * host's), read-only (writable for a privileged container, as containerd's), and under it the
 * container's own cgroups only. cgroup v2: a cgroup2 mount
 * made in the container's cgroup namespace (setup_rootfs made one), whose root is the container's
 * cgroup. cgroup v1: a tmpfs holding the container's own cgroups (--cgroup-view), each bound
 * read-only under its hierarchy's name (with links for co-mounted ones, cpu -> cpu,cpuacct); the
 * runtime's cgroups the container shares with every other one are not shown.
 */
static void setup_sys(int cgroup2) {
  const unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (opt.sys_rw ? 0 : MS_RDONLY);
  mount_at("sysfs", "/sys", "sysfs", flags, NULL);
  if (cgroup2) {
    mount_at("cgroup2", "/sys/fs/cgroup", "cgroup2", flags, NULL);
    return;
  }
  if (opt.ncgroup_views == 0) return;
  mount_at("tmpfs", "/sys/fs/cgroup", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=64k");
  int top = open_in_root("/sys/fs/cgroup", O_DIRECTORY);
  if (top < 0) fail("open /sys/fs/cgroup");
  for (int i = 0; i < opt.ncgroup_views; i++) {
    /* /sys/fs/cgroup/<hierarchy>/<the container's cgroup>, links resolved: the hierarchy's real name. */
    char real[4096];
    if (!realpath(opt.cgroup_views[i], real) || strncmp(real, "/sys/fs/cgroup/", 15)) fail("the cgroup %s", opt.cgroup_views[i]);
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(real + 15, "/"), real + 15);
    if (!*name || mkdirat(top, name, 0755) < 0) {
      if (errno == EEXIST) continue;
      fail("make /sys/fs/cgroup/%s", name);
    }
    char dst[300];
    snprintf(dst, sizeof dst, "/sys/fs/cgroup/%s", name);
    bind_into(real, dst, 0);
    if (!opt.sys_rw) make_readonly(dst, 0);
    /* cpu,cpuacct: cpu and cpuacct link to it, as on the host. */
    if (strchr(name, ',')) {
      char parts[256];
      snprintf(parts, sizeof parts, "%s", name);
      for (char *save = NULL, *part = strtok_r(parts, ",", &save); part; part = strtok_r(NULL, ",", &save))
        if (symlinkat(name, top, part) < 0 && errno != EEXIST) fail("link /sys/fs/cgroup/%s", part);
    }
  }
  close(top);
  make_readonly("/sys/fs/cgroup", 0);  /* the tmpfs only: the cgroups bound on it keep their mode */
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
  int f = openat(dir, slash + 1, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (f < 0) fail("make the mount point %s", dst);
  close(f);
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
void setup_rootfs(void) {
  /* Seen from the host, before the mount namespace changes. On cgroup v2 the container gets a
   * cgroup namespace of its own, rooted at the cgroup it was started in (as containerd's default
   * there): /proc/self/cgroup says 0::/ and the cgroup2 mount shows its own cgroup only. */
  int cgroup2 = host_cgroup2();
  if (cgroup2 && unshare(CLONE_NEWCGROUP) < 0) fail("unshare the cgroup namespace");
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
  setup_sys(cgroup2);
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
