// The image manager: makes sure a container's image is present according to its pull policy, with
// the pod's pull secrets and per-image pull backoff, and reports as the kubelet does
// (Pulling/Pulled/Failed/BackOff events; ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
// InvalidImageName errors). A present image that was pulled with credentials is used by a pod
// only if its own secrets could have pulled it (PullRecords); otherwise it is pulled again.
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { ImageService } from '../cri/services.js';
import type { PodSandboxConfig } from '../cri/types.js';
import { containerRef, EventReasons, type EventRecorder } from '../kube/object-ref.js';
import { Backoff } from '../runtime/backoff.js';
import { Reasons, SyncError, type Reason } from '../runtime/errors.js';
import type { Clock } from '../util/clock.js';
import { goDuration } from '../util/duration.js';
import { Keyring, PullSecretError, type Credential } from './keyring.js';
import type { PullRecords } from './pull-records.js';
import { imageNameProblem, invalidImageNameMessage } from './image-name.js';
import { ImagePuller } from './puller.js';

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

/** Whether the reference parses as the kubelet parses it (image-name.ts). */
export function validImageName(image: string): boolean {
  return imageNameProblem(image) === undefined;
}

export interface ImageManagerOptions {
  images: ImageService;
  recorder: EventRecorder;
  clock: Clock;
  /** Pull one image at a time (the kubelet's serializeImagePulls, default true). */
  serializePulls?: boolean;
  /** With serializePulls off, at most this many pulls at once (maxParallelImagePulls; 0 = no limit). */
  maxParallelPulls?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Pulls started per second on average, with bursts up to pullBurst (registryPullQPS/Burst); 0 = unlimited. */
  pullQPS?: number;
  pullBurst?: number;
  /** What each image was pulled with; without it any pod may use any present image (the kubelet with KubeletEnsureSecretPulledImages off). */
  pullRecords?: PullRecords;
}

/** The runtime's errors that name their own reason (CRI's crierrors), as the kubelet reads them off the message. */
const CRI_PULL_REASONS: Array<[Reason, string]> = [
  [Reasons.RegistryUnavailable, 'because the registry is unavailable'],
  [Reasons.SignatureValidationFailed, 'because the signature validation failed'],
];

/** The waiting reason and message of a failed pull (the kubelet's evalCRIPullErr). */
function evalPullError(image: string, message: string): { reason: Reason; message: string } {
  for (const [reason, why] of CRI_PULL_REASONS) {
    if (message.startsWith(reason)) return { reason, message: `image pull failed for ${image} ${why}${message.slice(reason.length)}` };
  }
  return { reason: Reasons.ImagePull, message };
}

export class ImageManager {
  private readonly backoff: Backoff;
  private readonly puller: ImagePuller;
  /** The last pull error per back-off key, so the back-off's message says what failed. */
  private readonly lastPullError = new Map<string, string>();

  constructor(private readonly opts: ImageManagerOptions) {
    this.backoff = new Backoff(opts.clock, opts.backoffInitialMs ?? 10_000, opts.backoffMaxMs ?? 300_000);
    this.puller = new ImagePuller({
      images: opts.images,
      clock: opts.clock,
      serialize: opts.serializePulls ?? true,
      maxParallel: opts.maxParallelPulls ?? 0,
      qps: opts.pullQPS ?? 5,
      burst: opts.pullBurst ?? 10,
    });
  }

  /** Returns the image reference (ID) to create the container from, or throws a SyncError with the kubelet's reason. */
  async ensureImageExists(pod: V1Pod, container: V1Container, sandboxConfig?: PodSandboxConfig, pullSecrets: V1Secret[] = []): Promise<string> {
    const image = container.image ?? '';
    const ref = containerRef(pod, container.name);
    const recorder = this.opts.recorder;
    const msg = invalidImageNameMessage(image);
    if (msg !== undefined) {
      recorder.event(ref, 'Warning', EventReasons.FailedToInspectImage, msg);
      throw new SyncError(Reasons.InvalidImageName, msg);
    }
    const policy = effectivePullPolicy(container);
    let present: string | undefined;
    if (policy !== 'Always') {
      try {
        const st = await this.opts.images.imageStatus({ image });
        present = st.image?.id || undefined;
      } catch (err) {
        const msg = `Failed to inspect image "${image}": ${(err as Error).message}`;
        recorder.event(ref, 'Warning', EventReasons.FailedToInspectImage, msg);
        throw new SyncError(Reasons.ImageInspect, msg, { cause: err });
      }
    }
    const neverPull = () => {
      const msg = `Container image "${image}" is not present with pull policy of Never`;
      recorder.event(ref, 'Warning', EventReasons.ErrImageNeverPullPolicy, msg);
      return new SyncError(Reasons.ImageNeverPull, msg);
    };
    if (!present && policy === 'Never') throw neverPull();
    // The credentials are looked up once, and only when needed.
    let credentials: Credential[] | undefined;
    const lookup = (): Credential[] => {
      try {
        return (credentials ??= Keyring.fromSecrets(pullSecrets).lookup(image));
      } catch (err) {
        if (err instanceof PullSecretError) throw new SyncError(Reasons.ImagePull, err.message, { cause: err });
        throw err;
      }
    };
    const records = this.opts.pullRecords;
    if (present) {
      if (!records) {
        recorder.event(ref, 'Normal', EventReasons.PulledImage, `Container image "${image}" already present on machine`);
        return present;
      }
      if (!records.mustAttemptPull(image, present, lookup())) {
        recorder.event(ref, 'Normal', EventReasons.PulledImage, `Container image "${image}" already present on machine and can be accessed by the pod`);
        return present;
      }
      // Present, but not for this pod: Never may not pull, and must not reveal that it is there.
      if (policy === 'Never') throw neverPull();
    }
    return this.pull(ref, pod.metadata?.uid ?? '', image, lookup(), sandboxConfig);
  }

  private async pull(ref: ReturnType<typeof containerRef>, podUID: string, image: string, credentials: Credential[], sandboxConfig?: PodSandboxConfig): Promise<string> {
    const recorder = this.opts.recorder;
    const clock = this.opts.clock;
    const key = `${podUID}_${image}`;
    if (this.backoff.isInBackOffSinceUpdate(key, clock.now())) {
      const msg = `Back-off pulling image "${image}"`;
      recorder.event(ref, 'Normal', EventReasons.BackOffPullImage, msg);
      const last = this.lastPullError.get(key);
      const retryAfterMs = this.backoff.remainingSinceUpdate(key, clock.now());
      throw new SyncError(Reasons.ImagePullBackOff, last === undefined ? msg : `${msg}: ${last}`, { retryAfterMs });
    }
    this.lastPullError.delete(key);
    recorder.event(ref, 'Normal', EventReasons.PullingImage, `Pulling image "${image}"`);
    const started = clock.now();
    const records = this.opts.pullRecords;
    records?.recordIntent(image);
    try {
      const result = await this.puller.pull(image, credentials, sandboxConfig);
      records?.recordPulled(image, result.imageRef, result.credential);
      const total = goDuration(clock.now() - started);
      recorder.event(ref, 'Normal', EventReasons.PulledImage, `Successfully pulled image "${image}" in ${goDuration(result.pullMs)} (${total} including waiting). Image size: ${result.size} bytes.`);
      this.backoff.gc();
      return result.imageRef;
    } catch (err) {
      records?.recordFailed(image);
      const text = (err as Error).message;
      recorder.event(ref, 'Warning', EventReasons.FailedToPullImage, `Failed to pull image "${image}": ${text}`);
      this.backoff.next(key, clock.now());
      const { reason, message } = evalPullError(image, text);
      this.lastPullError.set(key, `${reason}: ${message}`);
      throw new SyncError(reason, message, { cause: err });
    }
  }

  /** Forgets back-offs (and their last errors) quiet for twice the maximum: housekeeping calls it. */
  gc(): void {
    this.backoff.gc();
    for (const key of this.lastPullError.keys()) if (this.backoff.get(key) === 0) this.lastPullError.delete(key);
  }

  /** An image left the runtime (image GC): its pull record goes with it. */
  imageRemoved(imageRef: string): void {
    this.opts.pullRecords?.forget(imageRef);
  }

  backoffEntries(): number {
    return this.backoff.size();
  }
}
