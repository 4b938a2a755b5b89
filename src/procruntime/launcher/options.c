/* nodelet-launch: its arguments (what the runtime decided), and how a failure is reported. */
#include "launch.h"

struct options opt = {.status_fd = -1, .seccomp_fd = -1, .enter_pid = -1};

int err_fd = -1;

/* A failure: in the child it goes up the error pipe to the monitor; in the monitor it is reported. */
void fail(const char *fmt, ...) {
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

int write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

void report_error(const char *msg) {
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
  (void)write_all(opt.status_fd, buf, o);
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

/*
 * The environment as NUL-separated KEY=VALUE entries in a file only root reads: on the command
 * line (world-readable in /proc/PID/cmdline, for as long as the monitor runs) a Secret's value
 * would be anyone's.
 */
static void read_env_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) fail("open the environment file %s", path);
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  for (;;) {
    if (n == cap) {
      if (cap >= (size_t)64 << 20) fail("the environment file %s is too large", path);
      cap *= 2;
      buf = realloc(buf, cap + 1);
    }
    if (!buf) fail("read the environment file %s", path);
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("read the environment file %s", path);
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = 0;
  for (size_t o = 0; o < n; o += strlen(buf + o) + 1) {
    if (!buf[o]) continue;
    if (opt.nenv == MAX_ITEMS * 4 - 1) fail("too many environment variables");
    opt.env[opt.nenv++] = buf + o;
  }
}

/* A uid or gid: runc's range, so that no value wraps around to root in uid_t. */
static long id_number(const char *s, const char *what) {
  long v = number(s, what);
  if (v < 0 || v > 2147483647) {
    errno = 0;
    fail("uids and gids must be in range 0-2147483647: %s", s);
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

/* The options that only name a path or a value, those that only switch something on, and those that add to a list. */
static const struct {
  const char *name;
  const char **value;
} values[] = {
    {"--join-net", &opt.join_net}, {"--join-ipc", &opt.join_ipc}, {"--join-uts", &opt.join_uts}, {"--join-pid", &opt.join_pid},
    {"--hostname", &opt.hostname}, {"--rootfs", &opt.rootfs},     {"--shm", &opt.shm},           {"--cwd", &opt.cwd},
    {"--device-cgroup", &opt.device_cgroup},
};
static const struct {
  const char *name;
  int *flag;
} switches[] = {
    {"--unshare-pid", &opt.unshare_pid}, {"--unshare-ipc", &opt.unshare_ipc}, {"--unshare-uts", &opt.unshare_uts},
    {"--reaper", &opt.reaper},           {"--rootfs-ro", &opt.rootfs_ro},     {"--nnp", &opt.nnp},
    {"--sys-rw", &opt.sys_rw},
};
/* The options that may be given again and again, each adding one value to a list. */
static const struct {
  const char *name;
  const char **list;
  int *count;
  const char *what;
} lists[] = {
    {"--mask", opt.masked, &opt.nmasked, "masked paths"},
    {"--readonly", opt.readonly, &opt.nreadonly, "read-only paths"},
    {"--join-cgroup", opt.join_cgroups, &opt.njoin_cgroups, "cgroups"},
    {"--cgroup-view", opt.cgroup_views, &opt.ncgroup_views, "cgroup views"},
    {"--device", opt.devices, &opt.ndevices, "device rules"},
};

/* Takes argv[*i] if it is one of the tables' options (and its value); whether it was. */
static int table_option(int argc, char **argv, int *i) {
  const char *a = argv[*i];
  for (size_t k = 0; k < sizeof switches / sizeof *switches; k++)
    if (!strcmp(a, switches[k].name)) return *switches[k].flag = 1;
  for (size_t k = 0; k < sizeof values / sizeof *values; k++) {
    if (strcmp(a, values[k].name)) continue;
    if (*i + 1 >= argc) fail("%s needs 1 argument(s)", a);
    *values[k].value = argv[++*i];
    return 1;
  }
  for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) {
    if (strcmp(a, lists[k].name)) continue;
    if (*i + 1 >= argc) fail("%s needs 1 argument(s)", a);
    if (*lists[k].count == MAX_ITEMS) fail("too many %s", lists[k].what);
    lists[k].list[(*lists[k].count)++] = argv[++*i];
    return 1;
  }
  return 0;
}

void parse_args(int argc, char **argv) {
  int i = 1;
#define NEED(n) \
  if (i + (n) >= argc) fail("%s needs %d argument(s)", a, n)
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (table_option(argc, argv, &i)) continue;
    if (!strcmp(a, "--version")) {
      printf("nodelet-launch 1\n");
      exit(0);
    } else if (!strcmp(a, "--")) {
      i++;
      break;
    } else if (!strcmp(a, "--status-fd")) {
      NEED(1);
      opt.status_fd = (int)number(argv[++i], a);
    } else if (!strcmp(a, "--enter")) {
      NEED(1);
      opt.enter_pid = (int)number(argv[++i], a);
    } else if (!strcmp(a, "--rootfs-propagation")) {
      NEED(1);
      opt.rootfs_prop = parse_prop(argv[++i]);
    } else if (!strcmp(a, "--bind")) {
      NEED(3);
      if (opt.nbinds == MAX_ITEMS) fail("too many binds");
      struct bind *b = &opt.binds[opt.nbinds++];
      b->src = argv[++i];
      b->dst = argv[++i];
      parse_bind_opts(b, argv[++i]);
    } else if (!strcmp(a, "--caps")) {
      NEED(1);
      opt.has_caps = 1;
      opt.caps = strtoull(argv[++i], NULL, 16);
    } else if (!strcmp(a, "--uid")) {
      NEED(1);
      opt.uid = (uid_t)id_number(argv[++i], a);
    } else if (!strcmp(a, "--gid")) {
      NEED(1);
      opt.gid = (gid_t)id_number(argv[++i], a);
    } else if (!strcmp(a, "--groups")) {
      NEED(1);
      char *copy = strdup(argv[++i]), *save = NULL;
      for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (opt.ngroups == MAX_ITEMS) fail("too many groups");
        opt.groups[opt.ngroups++] = (gid_t)id_number(t, a);
      }
      free(copy);
    } else if (!strcmp(a, "--oom-score-adj")) {
      NEED(1);
      long adj = number(argv[++i], a);
      if (adj < -1000 || adj > 1000) {
        errno = 0;
        fail("%s must be in range -1000-1000: %ld", a, adj);
      }
      opt.has_oom_score_adj = 1;
      opt.oom_score_adj = (int)adj;
    } else if (!strcmp(a, "--seccomp")) {
      NEED(1);
      opt.seccomp_fd = (int)number(argv[++i], a);
    } else if (!strcmp(a, "--env")) {
      NEED(1);
      if (opt.nenv == MAX_ITEMS * 4 - 1) fail("too many environment variables");
      opt.env[opt.nenv++] = argv[++i];
    } else if (!strcmp(a, "--env-file")) {
      NEED(1);
      read_env_file(argv[++i]);
    } else {
      fail("unknown argument: %s", a);
    }
  }
  opt.argv = argv + i;
  if (!opt.reaper && !opt.argv[0]) fail("no command");
}
