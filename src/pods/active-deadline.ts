// The kubelet's active deadline handler: a pod active on the node longer than its
// activeDeadlineSeconds (counted from its startTime) is ended, Failed with DeadlineExceeded.

export interface ActiveDeadline {
  exceeded?: { reason: 'DeadlineExceeded'; message: string };
  /** Time left, for a pod that has a deadline not reached yet. */
  remainingMs?: number;
}

export function activeDeadline(activeDeadlineSeconds: number | undefined, startTime: Date | string | undefined, now: number): ActiveDeadline {
  if (activeDeadlineSeconds == null || !startTime) return {};
  const remainingMs = new Date(startTime).getTime() + activeDeadlineSeconds * 1000 - now;
  if (remainingMs > 0) return { remainingMs };
  return { exceeded: { reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' } };
}
