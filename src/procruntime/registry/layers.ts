// Unpacked layers (`layers/<diff ID hex>`): each unpacked once into a temporary directory and
// renamed into place only once its diff ID verified, shared by every image that has it.
import { existsSync, renameSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ownerAlive, tempTag } from './blobs.js';
import type { Compression } from './manifest.js';
import { extractLayer } from './unpack.js';

export class LayerStore {
  private readonly unpacking = new Map<string, Promise<void>>();

  constructor(readonly dir: string) {}

  /** Makes the directory and removes what a crash left half-unpacked or half-deleted. */
  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    for (const name of await readdir(this.dir)) {
      if (/\.(tmp|trash)-/.test(name) && !ownerAlive(name)) await rm(join(this.dir, name), { recursive: true, force: true });
    }
  }

  path(diffId: string): string {
    return join(this.dir, diffId.replace('sha256:', ''));
  }

  has(diffId: string): boolean {
    return existsSync(this.path(diffId));
  }

  /** Unpacks a layer once even when pulls want it at once; a waiter whose unpack failed tries itself. */
  async unpack(diffId: string, blob: string, compression: Compression): Promise<void> {
    const running = this.unpacking.get(diffId);
    if (running) {
      try {
        return await running;
      } catch {
        /* that pull's blob was not this one: try with ours */
      }
    }
    if (this.has(diffId)) return;
    let p = this.unpacking.get(diffId);
    if (!p) {
      p = this.unpackInto(diffId, blob, compression).finally(() => this.unpacking.delete(diffId));
      this.unpacking.set(diffId, p);
    }
    return p;
  }

  private async unpackInto(diffId: string, blob: string, compression: Compression): Promise<void> {
    const dir = this.path(diffId);
    const tmp = `${dir}.tmp-${tempTag()}`;
    await mkdir(tmp, { recursive: true });
    try {
      await extractLayer(blob, compression, diffId, tmp);
      await rename(tmp, dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * Removes a layer: renamed away at once (synchronously, so that the caller's check that nothing
   * uses it still holds, and no pull sees it from then on); the promise is of its deletion.
   */
  remove(diffId: string): Promise<void> {
    const dir = this.path(diffId);
    const trash = `${dir}.trash-${tempTag()}`;
    try {
      renameSync(dir, trash);
    } catch {
      return Promise.resolve(); // not there
    }
    return rm(trash, { recursive: true, force: true });
  }
}
