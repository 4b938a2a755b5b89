// The agent's own OOM score adjustment, as the kubelet sets its own at start (-999 by default: under
// memory pressure the kernel kills any pod's process before the node's agent). Containers do not
// inherit it: each gets the score the runtime is given for it.
import { writeFileSync } from 'node:fs';

/** Sets this process's oom_score_adj; the error (no CAP_SYS_RESOURCE, a read-only /proc) is the caller's to log. */
export function applyOwnOomScoreAdj(value: number, file = '/proc/self/oom_score_adj'): void {
  writeFileSync(file, String(value));
}
