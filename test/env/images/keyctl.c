/* keyctl-probe: makes one keyctl(2) call (the session keyring's ID) and says whether the kernel
 * let it through; the seccomp tests run it under RuntimeDefault (refused) and Unconfined. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
  long r = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* KEY_SPEC_SESSION_KEYRING */, 0);
  if (r < 0) {
    printf("keyctl: %s\n", strerror(errno));
    return 1;
  }
  printf("keyctl: allowed\n");
  return 0;
}
