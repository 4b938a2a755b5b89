/*
 * nodelet-launch --dial NETNS PORT SANDBOX: one port-forward connection of the node agent's, as
 * containerd makes it: inside the pod's network namespace, to localhost:PORT (IPv4, then IPv6).
 * Connected, it says so with one byte on stdout and copies stdin to the socket and the socket to
 * stdout until the pod's side ends; not connected, its one line on stderr is containerd's words.
 * A process this small per connection, where a Node.js relay took ~40 MB of the agent's memory.
 */
#include "launch.h"
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

/* A connection to the loopback address of one family; -1 with `why` (Go's dial error) when none. */
static int dial(int family, int port, char *why, size_t whylen) {
  int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  if (family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  }
  if (s >= 0 && connect(s, (struct sockaddr *)&ss, len) == 0) return s;
  const char *what = family == AF_INET ? "dial tcp4 127.0.0.1" : "dial tcp6 [::1]";
  /* Go's words for an errno are strerror's, in lower case. */
  char text[128];
  snprintf(text, sizeof text, "%s", strerror(errno));
  text[0] = (char)tolower((unsigned char)text[0]);
  snprintf(why, whylen, "%s:%d: connect: %s", what, port, text);
  if (s >= 0) close(s);
  return -1;
}

int dial_relay(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: nodelet-launch --dial NETNS PORT SANDBOX\n");
    return 2;
  }
  char *end;
  long port = strtol(argv[3], &end, 10);
  if (*end || port < 1 || port > 65535) {
    fprintf(stderr, "invalid port %s\n", argv[3]);
    return 2;
  }
  int ns = open(argv[2], O_RDONLY | O_CLOEXEC);
  if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
    fprintf(stderr, "failed to enter the network namespace %s of sandbox %s: %s\n", argv[2], argv[4], strerror(errno));
    return 1;
  }
  close(ns);
  char why4[256], why6[256];
  int s = dial(AF_INET, (int)port, why4, sizeof why4);
  if (s < 0) s = dial(AF_INET6, (int)port, why6, sizeof why6);
  if (s < 0) {
    fprintf(stderr, "failed to connect to localhost:%ld inside namespace \"%s\", IPv4: %s IPv6 %s ", port, argv[4], why4, why6);
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  if (write_all(1, "+", 1) < 0) return 0;
  static char buf[65536];
  struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = s, .events = POLLIN}};
  for (;;) {
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (p[0].revents) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        /* The agent's side is done sending: the pod sees end of stream and may still answer. */
        shutdown(s, SHUT_WR);
        p[0].fd = -1;
      } else if (write_all(s, buf, (size_t)n) < 0) {
        return 0;
      }
    }
    if (p[1].revents) {
      ssize_t n = read(s, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || write_all(1, buf, (size_t)n) < 0) return 0;
    }
  }
}
