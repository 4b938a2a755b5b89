/*
 * nodelet-launch: the process runtime's container init, what runc's init is to runc.
 *
 * It is C, not TypeScript, because the steps between fork and exec of a container's process
 * (setns, unshare, mounts by file descriptor, pivot_root, the bounding set, no_new_privs, a seccomp
 * filter, the switch of user) are system calls a Node.js process cannot make for a child.
 * The runtime decides everything; this program only carries it out, in runc's order:
 *
 *   the monitor (this process): gives its cgroup the device allow-list (cgroup v2), joins the
 *   pod's network, IPC and UTS namespaces, joins the pod's PID namespace or makes one, forks the
 *   container, reports {"child-pid": N} once the command runs (or {"error": "..."} when it
 *   cannot), waits, reports {"exit-code": N}.
 *
 *   the child: a cgroup namespace of its own (cgroup v2), a mount namespace of its own
 *   (propagation as asked), the root filesystem, /proc, /dev, a fresh /sys with the container's
 *   cgroups, /dev/shm, the binds (propagation rprivate/rslave/rshared, read-only or recursively
 *   read-only), masked and read-only paths, pivot_root, then no_new_privs, seccomp, the bounding
 *   set, groups, gid, uid, capabilities, working directory, environment, exec.
 *
 * With --enter PID it runs a command in a running container instead (CRI's Exec): it joins the
 * container's cgroups (--join-cgroup) and every namespace of PID, its mount namespace included,
 * and applies the same security settings.
 * With --reaper it only holds a new PID namespace, as its init, reaping what is left to it.
 * With --subpath-bind it pins a volume's subPath for the node agent (subpath.c); with --dial it
 * relays one port-forward connection in a pod's network namespace (dial.c).
 *
 * Every path inside the container is resolved inside its root (openat2 RESOLVE_IN_ROOT) and
 * mounted on through its file descriptor, so no link in an image can point a mount at the host.
 */
#include "launch.h"

/* ---- namespaces ---------------------------------------------------------------------------- */

static void join_ns(const char *path, int type, const char *what) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open the pod's %s namespace %s", what, path);
  if (setns(fd, type) < 0) fail("join the %s namespace %s", what, path);
  close(fd);
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
  if (opt.has_oom_score_adj) {
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || dprintf(fd, "%d", opt.oom_score_adj) < 0) fail("set the OOM score adjustment %d", opt.oom_score_adj);
    close(fd);
  }
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
  /* A helper of the node agent's, not a container: a volume's subPath pinned safely. */
  if (argc > 1 && !strcmp(argv[1], "--subpath-bind")) return subpath_bind(argc, argv);
  /* A port-forward connection of the node agent's, inside a pod's network namespace. */
  if (argc > 1 && !strcmp(argv[1], "--dial")) return dial_relay(argc, argv);
  parse_args(argc, argv);
  int lastcap = last_cap();
  /* An exec joins the container's cgroups: its limits, its device filter, its accounting. */
  for (int i = 0; i < opt.njoin_cgroups; i++) {
    int fd = open(opt.join_cgroups[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0 || dprintf(fd, "%d\n", getpid()) < 0) fail("join the cgroup %s", opt.join_cgroups[i]);
    close(fd);
  }
  /* Before anything of the container runs: the cgroup this process joined gets the allow-list. */
  if (opt.device_cgroup) restrict_devices(opt.device_cgroup, opt.devices, opt.ndevices);
  if (opt.enter_pid >= 0) {
    /* Every namespace of the running container (the mount namespace is joined by the child). */
    const char *kinds[] = {"ipc", "uts", "net", "pid", "cgroup"};
    int types[] = {CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWCGROUP};
    for (int i = 0; i < 5; i++) {
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
