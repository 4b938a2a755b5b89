// Abort signals shared by many waits (one per pod kill): each wait listens only while it waits.

/** Runs `fn` once `signal` aborts (at once if it has); returns what stops the listening. */
export function onAbort(signal: AbortSignal | undefined, fn: () => void): () => void {
  if (!signal) return () => undefined;
  if (signal.aborted) {
    fn();
    return () => undefined;
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}

/** `work`, or 'aborted' if `signal` aborts first; the listener goes either way. */
export async function raceAbort<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | 'aborted'> {
  let stop = () => undefined as void;
  const aborted = new Promise<'aborted'>((resolve) => (stop = onAbort(signal, () => resolve('aborted'))));
  try {
    return await Promise.race([work, aborted]);
  } finally {
    stop();
  }
}
