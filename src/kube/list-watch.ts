// List, then watch from the list's resourceVersion, resuming from the last version seen until the
// server ends the watch with an error (410 Gone: list again); any failure starts over from the list
// after a capped back-off. The caches of ConfigMaps/Secrets (by name) and of Services (by
// namespace) keep themselves current with it.
import { apiErrorMessage, httpCode } from './client.js';
import type { WatchStream } from './reflector.js';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../util/clock.js';

export interface ListWatchOptions<T> {
  list(): Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
  stream: WatchStream;
  /** The collection watched, e.g. /api/v1/namespaces/ns/services. */
  path: string;
  query?: Record<string, string>;
  onList(items: T[]): void;
  onEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T): void;
  clock: Clock;
  logger: Logger;
  /** For the debug line of a failure. */
  what: string;
}

/** Starts the loop; the function returned stops it. */
export function listAndWatch<T extends { metadata?: { resourceVersion?: string } }>(o: ListWatchOptions<T>): () => void {
  let stopped = false;
  let abort: (() => void) | undefined;
  let failures = 0;
  const loop = async (): Promise<void> => {
    while (!stopped) {
      try {
        const list = await o.list();
        if (stopped) return;
        o.onList(list.items);
        let rv = list.metadata?.resourceVersion ?? '';
        for (let failed = false; !failed; ) {
          const w = o.stream.watch(o.path, { ...o.query, resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 300 }, (type, obj) => {
            const x = obj as T;
            if (type === 'ERROR') {
              failed = true;
              w.abort();
              return;
            }
            rv = x.metadata?.resourceVersion ?? rv;
            if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') o.onEvent(type, x);
          });
          abort = w.abort;
          await w.done;
          if (stopped) return;
          failures = 0;
        }
      } catch (err) {
        if (stopped) return;
        if (httpCode(err) !== 410) o.logger.debug('list/watch failed', { what: o.what, error: apiErrorMessage(err) });
        failures++;
        await o.clock.sleep(Math.min(30_000, 500 * 2 ** Math.min(failures, 6)));
      }
    }
  };
  void loop();
  return () => {
    stopped = true;
    abort?.();
  };
}
