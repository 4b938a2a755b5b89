// The image manager: makes sure a container's image is present according to its pull policy, with
// per-image pull backoff, and reports as the kubelet does (Pulling/Pulled/Failed/BackOff events;
// ErrImagePull, ImagePullBackOff, ErrImageNeverPull, InvalidImageName errors).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { Mutex } from 'async-mutex';
import type { ImageService } from '../cri/services.js';
import type { AuthConfig, PodSandboxConfig } from '../cri/types.js';
import { containerRef, EventReasons, type EventRecorder } from '../kube/object-ref.js';
import { Backoff } from '../runtime/backoff.js';
import { Reasons, SyncError } from '../runtime/errors.js';
import type { Clock } from '../util/clock.js';

export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

/** The API server's defaulting: Always for `:latest` or an untagged image, IfNotPresent otherwise. */
export function effectivePullPolicy(container: V1Container): PullPolicy {
  const p = container.imagePullPolicy;
  if (p === 'Always' || p === 'IfNotPresent' || p === 'Never') return p;
  const image = container.image ?? '';
  if (image.includes('@')) return 'IfNotPresent';
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const tag = lastSegment.includes(':') ? lastSegment.slice(lastSegment.indexOf(':') + 1) : '';
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** A reference the runtime could parse: no spaces or upper-case repository, as docker's reference grammar. */
export function validImageName(image: string): boolean {
  if (!image || /\s/.test(image)) return false;
  const at = image.indexOf('@');
  const nameAndTag = at >= 0 ? image.slice(0, at) : image;
  const lastSlash = nameAndTag.lastIndexOf('/');
  const colon = nameAndTag.indexOf(':', lastSlash + 1);
  const name = colon >= 0 ? nameAndTag.slice(0, colon) : nameAndTag;
  const tag = colon >= 0 ? nameAndTag.slice(colon + 1) : '';
  if (tag && !/^[\w][\w.-]{0,127}$/.test(tag)) return false;
  const path = name.split('/').slice(name.includes('.') || name.includes(':') || name.startsWith('localhost') ? 1 : 0).join('/');
  return /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/.test(path || name);
}

export interface ImageManagerOptions {
  images: ImageService;
  recorder: EventRecorder;
  clock: Clock;
  /** Pull one image at a time (the kubelet's serializeImagePulls, default true). */
  serializePulls?: boolean;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Pulls started per second on average, with bursts up to pullBurst (the kubelet's registryPullQPS/Burst); 0 = unlimited. */
  pullQPS?: number;
  pullBurst?: number;
}

/** A token bucket on an injected clock: take() waits for a token. */
export class TokenBucket {
  private tokens: number;
  private updated: number;

  constructor(
    private readonly clock: Clock,
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
    this.updated = clock.now();
  }

  async take(): Promise<void> {
    if (this.qps <= 0) return;
    for (;;) {
      const now = this.clock.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.updated) / 1000) * this.qps);
      this.updated = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await this.clock.sleep(Math.ceil(((1 - this.tokens) / this.qps) * 1000));
    }
  }
}

export class ImageManager {
  private readonly pullLock = new Mutex();
  private readonly backoff: Backoff;
  private readonly serialize: boolean;
  private readonly limiter: TokenBucket;
  /** The last pull error per back-off key, so the back-off's message says what failed. */
  private readonly lastPullError = new Map<string, string>();

  constructor(private readonly opts: ImageManagerOptions) {
    this.backoff = new Backoff(opts.clock, opts.backoffInitialMs ?? 10_000, opts.backoffMaxMs ?? 300_000);
    this.serialize = opts.serializePulls ?? true;
    this.limiter = new TokenBucket(opts.clock, opts.pullQPS ?? 5, opts.pullBurst ?? 10);
  }

  /** Returns the image reference (ID) to create the container from, or throws a SyncError with the kubelet's reason. */
  async ensureImageExists(pod: V1Pod, container: V1Container, sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string> {
    const image = container.image ?? '';
    const ref = containerRef(pod, container.name);
    const recorder = this.opts.recorder;
    if (!validImageName(image)) {
      const msg = `Failed to apply default image tag "${image}": couldn't parse image name "${image}": invalid reference format`;
      recorder.event(ref, 'Warning', EventReasons.FailedToInspectImage, msg);
      throw new SyncError(Reasons.InvalidImageName, msg);
    }
    const policy = effectivePullPolicy(container);
    let present: string | undefined;
    try {
      const st = await this.opts.images.imageStatus({ image });
      present = st.image?.id || undefined;
    } catch (err) {
      const msg = `Failed to inspect image "${image}": ${(err as Error).message}`;
      recorder.event(ref, 'Warning', EventReasons.FailedToInspectImage, msg);
      throw new SyncError(Reasons.ImageInspect, msg, { cause: err });
    }
    if (present && policy !== 'Always') {
      recorder.event(ref, 'Normal', EventReasons.PulledImage, `Container image "${image}" already present on machine`);
      return present;
    }
    if (policy === 'Never') {
      const msg = `Container image "${image}" is not present with pull policy of Never`;
      recorder.event(ref, 'Warning', EventReasons.ErrImageNeverPullPolicy, msg);
      throw new SyncError(Reasons.ImageNeverPull, msg);
    }
    const key = `${pod.metadata?.uid ?? ''}_${image}`;
    if (this.backoff.isInBackOffSinceUpdate(key, this.opts.clock.now())) {
      const msg = `Back-off pulling image "${image}"`;
      recorder.event(ref, 'Normal', EventReasons.BackOffPullImage, msg);
      const last = this.lastPullError.get(key);
      const retryAfterMs = this.backoff.remainingSinceUpdate(key, this.opts.clock.now());
      throw new SyncError(Reasons.ImagePullBackOff, last === undefined ? msg : `${msg}: ${Reasons.ImagePull}: ${last}`, { retryAfterMs });
    }
    this.lastPullError.delete(key);
    recorder.event(ref, 'Normal', EventReasons.PullingImage, `Pulling image "${image}"`);
    const started = this.opts.clock.now();
    try {
      const pull = async () => {
        await this.limiter.take();
        return this.opts.images.pullImage({ image }, auth, sandboxConfig);
      };
      const imageRef = this.serialize ? await this.pullLock.runExclusive(pull) : await pull();
      const seconds = (this.opts.clock.now() - started) / 1000;
      recorder.event(ref, 'Normal', EventReasons.PulledImage, `Successfully pulled image "${image}" in ${seconds.toFixed(3)}s`);
      this.backoff.reset(key);
      return imageRef;
    } catch (err) {
      const cause = (err as Error).message;
      recorder.event(ref, 'Warning', EventReasons.FailedToPullImage, `Failed to pull image "${image}": ${cause}`);
      this.backoff.next(key, this.opts.clock.now());
      this.lastPullError.set(key, cause);
      throw new SyncError(Reasons.ImagePull, cause, { cause: err });
    }
  }

  /** Forgets back-offs (and their last errors) quiet for twice the maximum: housekeeping calls it. */
  gc(): void {
    this.backoff.gc();
    for (const key of this.lastPullError.keys()) if (this.backoff.get(key) === 0) this.lastPullError.delete(key);
  }

  backoffEntries(): number {
    return this.backoff.size();
  }
}
