// The process runtime's CRI ImageService: the image store's images as CRI shapes them. An image
// that a container still uses is not removed (containerd refuses too).
import { statfsSync } from 'node:fs';
import type { ImageService } from '../cri/services.js';
import type { AuthConfig, Image, ImageFsInfoResponse, ImageSpec, ImageStatusResponse } from '../cri/types.js';
import { FailedPreconditionError } from './errors.js';
import type { ImageStore, StoredImage } from './image-store.js';
import { nowNs } from './records.js';


export class ProcessImageService implements ImageService {
  constructor(
    private readonly images: ImageStore,
    /** Whether a container (of any state) was created from this image. */
    private readonly inUse: (imageId: string) => boolean,
  ) {}

  private view(img: StoredImage): Image {
    // The image's USER, as CRI reports it: a numeric user is a uid, a named one a username.
    const user = (img.config.User ?? '').split(':')[0] ?? '';
    const numeric = /^\d+$/.test(user);
    return {
      id: img.id,
      repo_tags: img.repoTags,
      repo_digests: img.repoDigests,
      size: String(img.size),
      uid: numeric ? { value: user } : null,
      username: numeric ? '' : user,
      spec: null,
      pinned: false,
    } as unknown as Image;
  }

  async listImages(): Promise<Image[]> {
    return this.images.list().map((i) => this.view(i));
  }

  async imageStatus(image: ImageSpec): Promise<ImageStatusResponse> {
    const img = this.images.find(image.image ?? '');
    return { image: img ? this.view(img) : null, info: {} } as unknown as ImageStatusResponse;
  }

  /** From the images directory if an archive there names it, else from its registry with `auth`. */
  async pullImage(image: ImageSpec, auth?: AuthConfig): Promise<string> {
    return (await this.images.pull(image.image ?? '', auth)).id;
  }

  async removeImage(image: ImageSpec): Promise<void> {
    const img = this.images.find(image.image ?? '');
    if (img && this.inUse(img.id)) throw new FailedPreconditionError(`image ${image.image} is in use by a container`);
    await this.images.remove(image.image ?? '');
  }

  async imageFsInfo(): Promise<ImageFsInfoResponse> {
    let inodes = '0';
    try {
      const fs = statfsSync(this.images.root);
      inodes = String(fs.files - fs.ffree);
    } catch {
      /* not supported */
    }
    const used = await this.images.usedBytes();
    const usage = { timestamp: nowNs(), fs_id: { mountpoint: this.images.root }, used_bytes: { value: String(used) }, inodes_used: { value: inodes } };
    return { image_filesystems: [usage], container_filesystems: [usage] } as unknown as ImageFsInfoResponse;
  }
}
