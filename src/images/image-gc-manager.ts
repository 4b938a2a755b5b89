// Image garbage collection, as the kubelet's image GC manager: every image is tracked from when it
// was first seen and when a container last used it; when the image filesystem is at or above the
// high threshold, unused images old enough are removed, least recently used first, until usage is
// back at the low threshold; with a maximum age, images unused for longer go whatever the usage.
// The decisions are pure (updateImageRecords .. planImageGC); ImageGCManager carries them out on
// the injected clock and records the kubelet's Node events (FreeDiskSpaceFailed, ImageGCFailed,
// InvalidDiskCapacity).
import { statfs } from 'node:fs/promises';
import type { V1ObjectReference } from '@kubernetes/client-node';
import { isNotFound } from '../cri/errors.js';
import type { ImageService, RuntimeService } from '../cri/services.js';
import type { Container, ContainerStatusResponse, Image } from '../cri/types.js';
import { EventReasons, type EventRecorder } from '../kube/object-ref.js';
import type { Logger } from '../observability/logger.js';
import type { Clock, Timer } from '../util/clock.js';
import { goDuration } from '../util/duration.js';
import { aggregateErrors } from '../util/errors.js';

export interface ImageGCPolicy {
  /** At or above this usage of the image filesystem, images are removed (imageGCHighThresholdPercent). */
  highThresholdPercent: number;
  /** ... down to this usage (imageGCLowThresholdPercent). */
  lowThresholdPercent: number;
  /** An image first seen more recently than this is never removed for space (imageMinimumGCAge). */
  minAgeMs: number;
  /** An image unused for longer than this is removed whatever the usage; 0 turns it off (imageMaximumGCAge). */
  maxAgeMs: number;
}

export const defaultImageGCPolicy: ImageGCPolicy = { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 };

/** The kubelet's ImageGCPeriod, and the period of its image detection. */
export const IMAGE_GC_PERIOD_MS = 300_000;
export const IMAGE_DETECT_PERIOD_MS = 300_000;

/** Throws the kubelet's error (NewImageGCManager's checks) for a policy it would refuse. */
export function validateImageGCPolicy(p: ImageGCPolicy): void {
  if (p.highThresholdPercent < 0 || p.highThresholdPercent > 100) throw new Error(`invalid HighThresholdPercent ${p.highThresholdPercent}, must be in range [0-100]`);
  if (p.lowThresholdPercent < 0 || p.lowThresholdPercent > 100) throw new Error(`invalid LowThresholdPercent ${p.lowThresholdPercent}, must be in range [0-100]`);
  if (p.lowThresholdPercent > p.highThresholdPercent) throw new Error(`LowThresholdPercent ${p.lowThresholdPercent} can not be higher than HighThresholdPercent ${p.highThresholdPercent}`);
}

/** What is known of one image (by image ID). Times are ms since the epoch; lastUsed 0 = never seen in use. */
export interface ImageRecord {
  firstDetected: number;
  lastUsed: number;
  size: number;
  pinned: boolean;
}

export type EvictionCandidate = ImageRecord & { id: string };

export type FsCapacity = { capacityBytes: number; availableBytes: number };

/** The image filesystem as last read: the runtime's ImageFsInfo and statfs of its mountpoint. */
export interface ImageFsStats extends FsCapacity {
  mountpoint: string;
  usedBytes: number;
  /** When it was read (clock ms). */
  time: number;
}

/** capacity and available of the filesystem holding `path`, as cadvisor reads them (blocks and bavail). */
export async function statfsCapacity(path: string): Promise<FsCapacity> {
  const s = await statfs(path, { bigint: true });
  return { capacityBytes: Number(s.blocks * s.bsize), availableBytes: Number(s.bavail * s.bsize) };
}

/**
 * The image IDs containers use, as the kubelet counts them: every container the runtime lists, in
 * any state (its image_id, else its image_ref), and each image a container mounts as a volume.
 * Containers without metadata or image are skipped, as the kubelet cannot convert them.
 */
export function imagesInUse(containers: Container[], statuses: ReadonlyArray<ContainerStatusResponse['status']> = [], images: Image[] = []): Set<string> {
  const used = new Set<string>();
  for (const c of containers) if (c.metadata && c.image) used.add(c.image_id || c.image_ref);
  const ids = new Set(images.map((i) => i.id));
  for (const st of statuses) for (const m of st?.mounts ?? []) if (m.image && ids.has(m.image.image)) used.add(m.image.image);
  return used;
}

/**
 * The records after a detection at `detectTime`: new images first detected then, those in use last
 * used `now`, sizes and pins refreshed, images no longer listed forgotten.
 */
export function updateImageRecords(records: ReadonlyMap<string, ImageRecord>, images: Image[], inUse: ReadonlySet<string>, detectTime: number, now: number): Map<string, ImageRecord> {
  const next = new Map<string, ImageRecord>();
  for (const img of images) {
    const prev = next.get(img.id) ?? records.get(img.id);
    next.set(img.id, {
      firstDetected: prev?.firstDetected ?? detectTime,
      lastUsed: inUse.has(img.id) ? now : (prev?.lastUsed ?? 0),
      size: Number(img.size ?? 0),
      pinned: Boolean(img.pinned),
    });
  }
  return next;
}

/** Images that may be removed at all (neither in use nor pinned), least recently used first, ties by first detection. */
export function evictionOrder(records: ReadonlyMap<string, ImageRecord>, inUse: ReadonlySet<string>): EvictionCandidate[] {
  const list: EvictionCandidate[] = [];
  for (const [id, r] of records) if (!inUse.has(id) && !r.pinned) list.push({ id, ...r });
  return list.sort((a, b) => (a.lastUsed === b.lastUsed ? a.firstDetected - b.firstDetected : a.lastUsed - b.lastUsed));
}

/**
 * The images the maximum age removes: unused for longer than maxAge. Nothing while maxAge is 0, nor
 * until maxAge has passed since GC began (before that, last uses are not known well enough).
 */
export function imagesOverMaxAge(candidates: EvictionCandidate[], freeTime: number, beganGC: number, policy: ImageGCPolicy): EvictionCandidate[] {
  if (policy.maxAgeMs === 0 || freeTime - beganGC <= policy.maxAgeMs) return [];
  return candidates.filter((c) => freeTime - c.lastUsed > policy.maxAgeMs);
}

/** The candidates that may go for space at freeTime: not used at or after it, and first detected at least minAge before. */
export function eligibleForSpace(candidates: EvictionCandidate[], freeTime: number, policy: ImageGCPolicy): EvictionCandidate[] {
  return candidates.filter((c) => c.lastUsed < freeTime && freeTime - c.firstDetected >= policy.minAgeMs);
}

export interface SpaceNeed {
  /** 100 - available*100/capacity, in whole percent (rounded down as the kubelet's integer arithmetic). */
  usagePercent: number;
  /** Whether usage is at or above the high threshold. */
  over: boolean;
  /** capacity*(100-low)/100 - available: what must go to be back at the low threshold. */
  bytesToFree: number;
}

/** Undefined for capacity 0 (the kubelet's InvalidDiskCapacity). */
export function spaceToFree(fs: FsCapacity, policy: ImageGCPolicy): SpaceNeed | undefined {
  const capacity = BigInt(Math.max(0, Math.trunc(fs.capacityBytes)));
  if (capacity === 0n) return undefined;
  let available = BigInt(Math.max(0, Math.trunc(fs.availableBytes)));
  if (available > capacity) available = capacity;
  const usagePercent = 100 - Number((available * 100n) / capacity);
  const bytesToFree = Number((capacity * BigInt(100 - policy.lowThresholdPercent)) / 100n - available);
  return { usagePercent, over: usagePercent >= policy.highThresholdPercent, bytesToFree };
}

export interface ImageGCInput {
  records: ReadonlyMap<string, ImageRecord>;
  inUse: ReadonlySet<string>;
  /** The image filesystem as read after the maximum-age removals. */
  fs: FsCapacity;
  now: number;
  beganGC: number;
  policy: ImageGCPolicy;
}

export interface ImageGCPlan {
  /** Removed for age, then for space, in order. */
  byAge: string[];
  bySpace: string[];
  /** Undefined for capacity 0: InvalidDiskCapacity, nothing removed for space. */
  need?: SpaceNeed;
  /** Bytes (image sizes) the space step frees; enough false is FreeDiskSpaceFailed. */
  freed: number;
  enough: boolean;
}

/** One GC round, every removal succeeding: what garbageCollect does with these inputs. */
export function planImageGC(input: ImageGCInput): ImageGCPlan {
  const candidates = evictionOrder(input.records, input.inUse);
  const byAge = imagesOverMaxAge(candidates, input.now, input.beganGC, input.policy);
  const plan: ImageGCPlan = { byAge: byAge.map((c) => c.id), bySpace: [], freed: 0, enough: true, need: spaceToFree(input.fs, input.policy) };
  if (!plan.need?.over) return plan;
  const rest = candidates.filter((c) => !byAge.includes(c));
  for (const c of eligibleForSpace(rest, input.now, input.policy)) {
    plan.bySpace.push(c.id);
    plan.freed += c.size;
    if (plan.freed >= plan.need.bytesToFree) break;
  }
  plan.enough = plan.freed >= plan.need.bytesToFree;
  return plan;
}

/** A size in the kubelet's words: 512 B, 1.5 KiB, 10.0 GiB (one decimal, rounded half to even). */
export function formatSize(bytes: number): string {
  const b = BigInt(Math.trunc(bytes));
  if (b < 1024n) return `${b} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (i < units.length - 1 && b >= 1024n ** BigInt(i + 2)) i++;
  const unit = 1024n ** BigInt(i + 1);
  let tenths = (b * 10n) / unit;
  const rem2 = ((b * 10n) % unit) * 2n;
  if (rem2 > unit || (rem2 === unit && tenths % 2n === 1n)) tenths++;
  return `${tenths / 10n}.${tenths % 10n} ${units[i]}`;
}

const aggregate = (errors: Error[]): string => aggregateErrors(errors.map((e) => e.message)) ?? '';

/** The reference the kubelet's Node events carry. */
export function nodeObjectRef(nodeName: string, uid?: string): V1ObjectReference {
  return { apiVersion: 'v1', kind: 'Node', name: nodeName, namespace: '', ...(uid ? { uid } : {}) };
}

export interface ImageGCManagerOptions {
  images: Pick<ImageService, 'listImages' | 'removeImage' | 'imageFsInfo'>;
  runtime: Pick<RuntimeService, 'listContainers' | 'containerStatus'>;
  recorder: EventRecorder;
  /** The Node the events are about (asked for at each event: its UID may become known later). */
  nodeRef: () => V1ObjectReference;
  clock: Clock;
  policy?: ImageGCPolicy;
  /** capacity and available of the filesystem at a mountpoint; default statfs. */
  fsStats?: (mountpoint: string) => FsCapacity | Promise<FsCapacity>;
  logger?: Logger;
  gcPeriodMs?: number;
  detectPeriodMs?: number;
  /** Told of each image removed (what it was pulled with no longer matters). */
  onRemoved?: (imageId: string) => void;
}

export class ImageGCManager {
  readonly policy: ImageGCPolicy;
  private records = new Map<string, ImageRecord>();
  private lastFs?: ImageFsStats;
  private beganGC: number;
  private running = false;
  private readonly timers = new Map<string, Timer>();
  private readonly inFlight = new Set<Promise<void>>();
  private prevGCFailed = false;

  constructor(private readonly opts: ImageGCManagerOptions) {
    this.policy = { ...(opts.policy ?? defaultImageGCPolicy) };
    validateImageGCPolicy(this.policy);
    this.beganGC = opts.clock.now();
  }

  /** A copy of the records by image ID. */
  imageRecords(): Map<string, ImageRecord> {
    return new Map([...this.records].map(([id, r]) => [id, { ...r }]));
  }

  /** The image filesystem as the last GC round (or readImageFs) saw it; undefined before. */
  imageFsStats(): ImageFsStats | undefined {
    return this.lastFs && { ...this.lastFs };
  }

  /** Whether the image filesystem had less than `minAvailableBytes` available when last read; undefined if never read. */
  imageFsUnderPressure(minAvailableBytes: number): boolean | undefined {
    return this.lastFs && this.lastFs.capacityBytes > 0 ? this.lastFs.availableBytes < minAvailableBytes : undefined;
  }

  /** Lists images and containers, updates the records; returns the image IDs in use. */
  async detectImages(detectTime = this.opts.clock.now()): Promise<Set<string>> {
    const images = await this.opts.images.listImages();
    const containers = await this.opts.runtime.listContainers();
    const statuses: Array<ContainerStatusResponse['status']> = [];
    // Image volumes: the kubelet looks at every container's mounts for an image.
    for (const c of containers) {
      if (!c.metadata || !c.image) continue;
      let resp: ContainerStatusResponse;
      try {
        resp = await this.opts.runtime.containerStatus(c.id, false);
      } catch (err) {
        // Removed since the list (GC, a deleted pod): it holds no image any more. The kubelet fails
        // the whole pass here, and under churn image GC then never ran.
        if (isNotFound(err)) continue;
        throw new Error(`get container status: runtime container status: ${(err as Error).message}`, { cause: err });
      }
      if (!resp.status) throw new Error('get container status: container status is nil');
      statuses.push(resp.status);
    }
    const inUse = imagesInUse(containers, statuses, images);
    this.records = updateImageRecords(this.records, images, inUse, detectTime, this.opts.clock.now());
    return inUse;
  }

  /** ImageFsInfo's first image filesystem, with capacity and available from its mountpoint. */
  async readImageFs(): Promise<ImageFsStats> {
    const info = await this.opts.images.imageFsInfo();
    const fs = info.image_filesystems?.[0];
    if (!fs) throw new Error('imageFs information is unavailable');
    let capacity: FsCapacity = { capacityBytes: 0, availableBytes: 0 }; // unknown without a filesystem ID, as with the kubelet
    try {
      if (fs.fs_id) capacity = await (this.opts.fsStats ?? statfsCapacity)(fs.fs_id.mountpoint);
    } catch (err) {
      throw new Error(`get filesystem info: Failed to get the info of the filesystem with mountpoint: ${(err as Error).message}`, { cause: err });
    }
    const { capacityBytes, availableBytes } = capacity;
    this.lastFs = { mountpoint: fs.fs_id?.mountpoint ?? '', usedBytes: Number(fs.used_bytes?.value ?? 0), capacityBytes, availableBytes, time: this.opts.clock.now() };
    return { ...this.lastFs };
  }

  private async remove(c: EvictionCandidate, why: 'age' | 'space'): Promise<void> {
    this.opts.logger?.info('Removing image to free bytes', { imageID: c.id, size: c.size, reason: why });
    await this.opts.images.removeImage({ image: c.id });
    this.opts.onRemoved?.(c.id);
    this.records.delete(c.id);
  }

  /** Removes in order until `bytesToFree` is freed; a failed removal is collected and the next one tried. */
  private async freeSpace(bytesToFree: number, eligible: EvictionCandidate[]): Promise<number> {
    const errors: Error[] = [];
    let freed = 0;
    for (const c of eligible) {
      try {
        await this.remove(c, 'space');
      } catch (err) {
        errors.push(err as Error);
        continue;
      }
      freed += c.size;
      if (freed >= bytesToFree) break;
    }
    if (errors.length > 0) throw new Error(`wanted to free ${bytesToFree} bytes, but freed ${freed} bytes space with errors in image deletion: ${aggregate(errors)}`);
    return freed;
  }

  private async candidates(freeTime: number): Promise<EvictionCandidate[]> {
    const inUse = await this.detectImages(freeTime);
    return evictionOrder(this.records, inUse);
  }

  /** One round: images over the maximum age, then, over the high threshold, space down to the low one. */
  async garbageCollect(beganGC = this.beganGC): Promise<void> {
    const freeTime = this.opts.clock.now();
    let candidates = await this.candidates(freeTime);
    const old = imagesOverMaxAge(candidates, freeTime, beganGC, this.policy);
    if (old.length > 0) {
      const errors: Error[] = [];
      for (const c of old) {
        try {
          await this.remove(c, 'age');
          candidates = candidates.filter((x) => x !== c);
        } catch (err) {
          errors.push(err as Error);
        }
      }
      if (errors.length > 0) throw new Error(`wanted to free images older than ${goDuration(this.policy.maxAgeMs)}, encountered errors in image deletion: ${aggregate(errors)}`);
    }
    const fs = await this.readImageFs();
    const need = spaceToFree(fs, this.policy);
    if (!need) {
      const message = 'invalid capacity 0 on image filesystem';
      this.opts.recorder.event(this.opts.nodeRef(), 'Warning', EventReasons.InvalidDiskCapacity, message);
      throw new Error(message);
    }
    if (!need.over) return;
    const { usagePercent, bytesToFree } = need;
    this.opts.logger?.info('Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold', { usage: usagePercent, amountToFree: bytesToFree });
    const freed = await this.freeSpace(bytesToFree, eligibleForSpace(candidates, freeTime, this.policy));
    if (freed < bytesToFree) {
      const message =
        `Insufficient free disk space on the node's image filesystem (${usagePercent}% of ${formatSize(fs.capacityBytes)} used). ` +
        `Failed to free sufficient space by deleting unused images (freed ${freed} bytes). ` +
        'Investigate disk usage, as it could be used by active images, logs, volumes, or other data.';
      this.opts.recorder.event(this.opts.nodeRef(), 'Warning', EventReasons.FreeDiskSpaceFailed, message);
      throw new Error(message);
    }
  }

  /** Removes every unused image old enough, whatever the usage (the kubelet's DeleteUnusedImages, for eviction). */
  async deleteUnusedImages(): Promise<void> {
    const freeTime = this.opts.clock.now();
    await this.freeSpace(Number.MAX_SAFE_INTEGER, eligibleForSpace(await this.candidates(freeTime), freeTime, this.policy));
  }

  /** One GC round of the loop: a failure twice in a row or more is an ImageGCFailed event on the Node. */
  private async gcRound(): Promise<void> {
    try {
      await this.garbageCollect();
      if (this.prevGCFailed) this.opts.logger?.info('Image garbage collection succeeded');
      this.prevGCFailed = false;
    } catch (err) {
      const message = (err as Error).message;
      if (this.prevGCFailed) {
        this.opts.logger?.error('Image garbage collection failed multiple times in a row', { error: message });
        this.opts.recorder.event(this.opts.nodeRef(), 'Warning', EventReasons.ImageGCFailed, message);
      } else {
        this.opts.logger?.error('Image garbage collection failed once. Stats initialization may not have completed yet', { error: message });
      }
      this.prevGCFailed = true;
    }
  }

  /**
   * Detects images every detectPeriod and collects every gcPeriod, each at once and then a period
   * after the last one ended. With highThresholdPercent 100 and no maxAge, images are only detected.
   */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.beganGC = this.opts.clock.now();
    this.loop('detect', this.opts.detectPeriodMs ?? IMAGE_DETECT_PERIOD_MS, async () => {
      await this.detectImages().catch((err: Error) => this.opts.logger?.info('Failed to monitor images', { error: err.message }));
    });
    if (this.policy.highThresholdPercent === 100 && this.policy.maxAgeMs === 0) {
      this.opts.logger?.info('ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC');
      return;
    }
    this.loop('gc', this.opts.gcPeriodMs ?? IMAGE_GC_PERIOD_MS, () => this.gcRound());
  }

  /** Stops both loops and waits for a round under way. */
  async stop(): Promise<void> {
    this.running = false;
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
    await Promise.all([...this.inFlight]);
  }

  private loop(name: string, periodMs: number, fn: () => Promise<void>): void {
    const run = () => {
      if (!this.running) return;
      const p = fn().catch(() => undefined).finally(() => {
        this.inFlight.delete(p);
        if (this.running) this.timers.set(name, this.opts.clock.setTimer(periodMs, run));
      });
      this.inFlight.add(p);
    };
    run();
  }
}
