/* nodelet-launch's shared declarations: the options the runtime passed, and how a step fails. */
#ifndef NODELET_LAUNCH_H
#define NODELET_LAUNCH_H
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
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <linux/magic.h>
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

struct device_rule {
  char type;
  int major, minor;
  uint32_t access;
};

struct options {
  int status_fd;
  const char *join_net, *join_ipc, *join_uts, *join_pid;
  int unshare_pid, unshare_ipc, unshare_uts;
  const char *hostname;
  int enter_pid;
  int reaper;
  const char *rootfs;
  int rootfs_ro;
  /* A privileged container's /sys and cgroups are writable, as containerd makes them. */
  int sys_rw;
  /* Written to /proc/self/oom_score_adj before the command runs (while the capability to lower it is held). */
  int has_oom_score_adj, oom_score_adj;
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
  const char *join_cgroups[MAX_ITEMS];
  int njoin_cgroups;
  /* cgroup v1: the container's own cgroup directories, shown under its /sys/fs/cgroup. */
  const char *cgroup_views[MAX_ITEMS];
  int ncgroup_views;
  const char *device_cgroup;
  const char *devices[MAX_ITEMS];
  int ndevices;
  char *env[MAX_ITEMS * 4];
  int nenv;
  char **argv;
};

extern struct options opt;
/* The child's end of the error pipe (-1 in the monitor). */
extern int err_fd;

/* options.c */
void parse_args(int argc, char **argv);
__attribute__((noreturn, format(printf, 1, 2))) void fail(const char *fmt, ...);
/* Writes all of it (a short write or EINTR goes on); -1 when the fd refuses. */
int write_all(int fd, const char *s, size_t n);
void report_error(const char *msg);
/* dial.c */
int dial_relay(int argc, char **argv);
/* mounts.c */
void setup_rootfs(void);
/* subpath.c */
int subpath_bind(int argc, char **argv);
/* devices.c */
void restrict_devices(const char *cgroup, const char **rules, int n);
/* security.c */
int last_cap(void);
void apply_security(int lastcap);

#endif
