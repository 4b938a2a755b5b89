// Container log rotation, as the kubelet's container log manager does it: every monitor period,
// each running container whose log has reached containerLogMaxSize has its rotated files tidied
// (temporary and already-compressed leftovers removed, the oldest dropped so that at most
// containerLogMaxFiles remain with the new one, every older rotated file gzipped), then its log
// renamed to <log>.<YYYYMMDD-hhmmss> and the runtime asked to reopen it (renamed back if it
// cannot). Readers of /containerLogs follow a rotated file into its successor.
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { RuntimeService } from '../cri/services.js';
import { NodeNameLabel } from '../runtime/labels.js';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../util/clock.js';

export interface LogRotationPolicy {
  maxSizeBytes: number;
  maxFiles: number;
}

const COMPRESSED = '.gz';
const TMP = '.tmp';

/** The kubelet's suffix time: local time as 20060102-150405. */
export function rotationStamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/**
 * Of the rotated files of a log: which to delete (temporary ones, and plain ones whose compressed
 * copy exists), which to keep (the newest maxFiles-2, oldest first), and which of those to compress.
 */
export function planRotation(rotated: string[], maxFiles: number): { remove: string[]; keep: string[]; compress: string[] } {
  const names = new Set(rotated);
  const remove: string[] = [];
  const inUse: string[] = [];
  for (const f of rotated) {
    if (f.endsWith(TMP) || (!f.endsWith(COMPRESSED) && names.has(`${f}${COMPRESSED}`))) remove.push(f);
    else inUse.push(f);
  }
  inUse.sort();
  // The new log and the one rotated now count too: at most maxFiles-2 older ones stay.
  const excess = Math.max(0, inUse.length - Math.max(0, maxFiles - 2));
  remove.push(...inUse.slice(0, excess));
  const keep = inUse.slice(excess);
  return { remove, keep, compress: keep.filter((f) => !f.endsWith(COMPRESSED)) };
}

async function gzipFile(path: string): Promise<void> {
  const mode = (await stat(path)).mode & 0o777;
  const tmp = `${path}${TMP}`;
  try {
    await pipeline(createReadStream(path), createGzip(), createWriteStream(tmp, { mode }));
    await rename(tmp, `${path}${COMPRESSED}`);
    await rm(path, { force: true });
  } finally {
    await rm(tmp, { force: true });
  }
}

export class ContainerLogManager {
  private timer?: NodeJS.Timeout;
  private running = false;
  /** Each running container's log path (it never changes): a pass is one list and a stat each. */
  private readonly logPaths = new Map<string, string>();

  constructor(
    private readonly runtime: Pick<RuntimeService, 'listContainers' | 'containerStatus' | 'reopenContainerLog'>,
    private readonly policy: LogRotationPolicy,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly monitorMs = 10_000,
    /** Only this node's containers: a runtime shared with other agents keeps theirs to them. */
    private readonly nodeName?: string,
  ) {}

  /** Containers whose log path is remembered (for /metrics). */
  get trackedContainers(): number {
    return this.logPaths.size;
  }

  start(): void {
    this.timer = setInterval(() => void this.rotateAll(), this.monitorMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One pass over the running containers (a pass still going is not overlapped). */
  async rotateAll(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const containers = await this.runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' }, ...(this.nodeName ? { label_selector: { [NodeNameLabel]: this.nodeName } } : {}) });
      const listed = new Set(containers.map((c) => c.id));
      for (const id of this.logPaths.keys()) if (!listed.has(id)) this.logPaths.delete(id);
      for (const c of containers) {
        try {
          await this.rotateIfNeeded(c.id);
        } catch (err) {
          this.logger.warn('container log rotation failed', { containerID: c.id, error: (err as Error).message });
        }
      }
    } catch (err) {
      this.logger.warn('container log rotation: cannot list containers', { error: (err as Error).message });
    } finally {
      this.running = false;
    }
  }

  private async rotateIfNeeded(id: string): Promise<void> {
    let log = this.logPaths.get(id);
    if (log === undefined) {
      const st = await this.runtime.containerStatus(id);
      if (st.status?.state !== 'CONTAINER_RUNNING') return;
      log = st.status.log_path ?? '';
      this.logPaths.set(id, log);
    }
    if (!log) return;
    let size: number;
    try {
      size = (await stat(log)).size;
    } catch (err) {
      // A log renamed while the runtime did not reopen it: ask again.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') await this.runtime.reopenContainerLog(id);
      return;
    }
    if (size < this.policy.maxSizeBytes) return;
    const dir = dirname(log);
    const prefix = `${basename(log)}.`;
    const rotated = (await readdir(dir)).filter((f) => f.startsWith(prefix)).map((f) => join(dir, f));
    const plan = planRotation(rotated, this.policy.maxFiles);
    for (const f of plan.remove) await rm(f, { force: true });
    for (const f of plan.compress) await gzipFile(f);
    const target = `${log}.${rotationStamp(this.clock.now())}`;
    await rename(log, target);
    try {
      await this.runtime.reopenContainerLog(id);
    } catch (err) {
      // Renamed back, so that the next pass tries again.
      await rename(target, log).catch(() => undefined);
      throw err;
    }
  }
}
