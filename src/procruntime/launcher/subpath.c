/*
 * nodelet-launch --subpath-bind BASE SUBPATH PIN MODE|-: a volume's subPath pinned at PIN for the
 * node agent, without the race of resolving a path and then mounting it (CVE-2021-25741). What
 * SUBPATH names is opened beneath BASE (openat2 RESOLVE_BENEATH: no link may lead out of the
 * volume, at any moment), missing directories are made and chmod'ed through descriptors, and the
 * open descriptor itself is bind-mounted: a link swapped in after the open changes nothing.
 * The kubelet does the same with O_NOFOLLOW walks and /proc/<pid>/fd (subpath_linux.go).
 */
#include "launch.h"

static int open_beneath(int base, const char *path, uint64_t flags) {
  struct open_how how = {.flags = flags | O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
  return (int)syscall(SYS_openat2, base, path, &how, sizeof how);
}

/* Test hook: with NODELET_LAUNCH_SUBPATH_PAUSE=FIFO, says "opened" on it and waits for a byte before the bind. */
static void pause_for_test(void) {
  const char *fifo = getenv("NODELET_LAUNCH_SUBPATH_PAUSE");
  if (!fifo) return;
  int fd = open(fifo, O_WRONLY | O_CLOEXEC); /* blocks until the test reads */
  if (fd < 0) fail("open the pause FIFO %s", fifo);
  if (write(fd, "opened\n", 7) != 7) fail("write the pause FIFO");
  close(fd);
  /* The test writes its byte to a second FIFO beside the first. */
  char back[4096];
  snprintf(back, sizeof back, "%s.go", fifo);
  fd = open(back, O_RDONLY | O_CLOEXEC);
  char c;
  if (fd < 0 || read(fd, &c, 1) != 1) fail("wait on %s", back);
  close(fd);
}

/* Opens SUBPATH beneath BASE, making the missing directories (MODE, set past the umask) when create. */
static int open_subpath(int base, const char *subpath, int create, mode_t mode) {
  int fd = open_beneath(base, subpath, 0);
  if (fd >= 0 || errno != ENOENT || !create) return fd;
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", subpath) >= (int)sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int dir = dup(base);
  for (char *part = buf, *next; part && *part; part = next) {
    next = strchr(part, '/');
    if (next) *next++ = 0;
    if (!*part || !strcmp(part, ".")) continue;
    int child = open_beneath(dir, part, 0);
    if (child < 0 && errno == ENOENT) {
      if (mkdirat(dir, part, mode) < 0 && errno != EEXIST) return -1;
      /* Through a descriptor opened without following a link: the chmod lands on what was made. */
      int made = openat(dir, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (made < 0 || fchmod(made, mode) < 0) return -1;
      close(made);
      child = open_beneath(dir, part, 0);
    }
    if (child < 0) return -1;
    close(dir);
    dir = child;
  }
  return dir;
}

int subpath_bind(int argc, char **argv) {
  if (argc != 6) {
    errno = 0;
    fail("usage: nodelet-launch --subpath-bind BASE SUBPATH PIN MODE|-");
  }
  const char *base_path = argv[2], *subpath = argv[3], *pin = argv[4];
  int create = strcmp(argv[5], "-") != 0;
  mode_t mode = create ? (mode_t)strtol(argv[5], NULL, 8) & 07777 : 0;
  int base = open(base_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (base < 0) fail("open the volume %s", base_path);
  int fd = open_subpath(base, subpath, create, mode);
  if (fd < 0) fail("open the subPath %s beneath %s", subpath, base_path);
  struct stat st;
  if (fstat(fd, &st) < 0) fail("stat the subPath %s", subpath);
  /* The pin is the agent's own path: a directory for a directory, an empty file for the rest. */
  if (S_ISDIR(st.st_mode)) {
    if (mkdir(pin, 0750) < 0 && errno != EEXIST) fail("make the pin %s", pin);
  } else {
    int f = open(pin, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (f < 0) fail("make the pin %s", pin);
    close(f);
  }
  pause_for_test();
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
  if (mount(p, pin, NULL, MS_BIND, NULL) < 0) fail("bind the subPath %s at %s", subpath, pin);
  return 0;
}
