// Image pulls as the kubelet runs them: through a rate limit that refuses rather than waits
// (registryPullQPS/registryBurst: "pull QPS exceeded"), one at a time in arrival order
// (serializeImagePulls) or in parallel up to maxParallelImagePulls, each credential that matches
// the image tried in turn. A pull's duration is its own; its wait in the queue is the caller's.
import { Mutex, Semaphore } from 'async-mutex';
import type { ImageService } from '../cri/services.js';
import type { PodSandboxConfig } from '../cri/types.js';
import { criErrorText } from '../cri/errors.js';
import type { Clock } from '../util/clock.js';
import { toAuthConfig, type Credential } from './keyring.js';
import { aggregateErrors } from '../util/errors.js';

/** A token bucket on an injected clock; tryAccept never waits. */
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

  tryAccept(): boolean {
    if (this.qps <= 0) return true;
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.updated) / 1000) * this.qps);
    this.updated = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export interface PullResult {
  imageRef: string;
  /** Bytes, as the runtime reports the pulled image (0 when it could not say). */
  size: number;
  /** From the pull's start to its end, the size lookup included (the kubelet's pullDuration). */
  pullMs: number;
  /** The credential that worked; undefined for an anonymous pull. */
  credential?: Credential;
}

/** A pull that failed with every credential: the runtime's messages, joined as Go's error aggregates are. */
export class PullError extends Error {
  constructor(readonly messages: string[]) {
    super(aggregateErrors(messages) ?? 'pull failed');
    this.name = 'PullError';
  }
}

export interface PullerOptions {
  images: ImageService;
  clock: Clock;
  serialize: boolean;
  /** With serialize off: at most this many pulls at once (0: no limit). */
  maxParallel: number;
  qps: number;
  burst: number;
}

export class ImagePuller {
  private readonly gate: Mutex | Semaphore | undefined;
  private readonly limiter: TokenBucket;

  constructor(private readonly opts: PullerOptions) {
    this.gate = opts.serialize ? new Mutex() : opts.maxParallel > 0 ? new Semaphore(opts.maxParallel) : undefined;
    this.limiter = new TokenBucket(opts.clock, opts.qps, opts.burst);
  }

  pull(image: string, credentials: Credential[], sandboxConfig?: PodSandboxConfig): Promise<PullResult> {
    const run = () => this.pullNow(image, credentials, sandboxConfig);
    return this.gate ? this.gate.runExclusive(run) : run();
  }

  private async pullNow(image: string, credentials: Credential[], sandboxConfig?: PodSandboxConfig): Promise<PullResult> {
    const started = this.opts.clock.now();
    if (!this.limiter.tryAccept()) throw new PullError(['pull QPS exceeded']);
    const attempts: Array<Credential | undefined> = credentials.length > 0 ? credentials : [undefined];
    const errors: string[] = [];
    for (const credential of attempts) {
      let imageRef: string;
      try {
        imageRef = await this.opts.images.pullImage({ image }, credential && toAuthConfig(credential), sandboxConfig);
      } catch (err) {
        errors.push(criErrorText(err));
        continue;
      }
      let size = 0;
      try {
        const st = await this.opts.images.imageStatus({ image: imageRef || image });
        size = Number(st.image?.size ?? 0) || 0;
      } catch {
        /* the size is best effort, as the kubelet's */
      }
      return { imageRef, size, pullMs: this.opts.clock.now() - started, credential };
    }
    throw new PullError(errors);
  }
}
