// The store's blobs (`blobs/sha256/<hex>`): each downloaded to a temporary file and renamed into
// place only once its size and sha256 are the ones the manifest named, so that a blob present is
// a verified one, and a pull cut short leaves only a temporary file (removed on the next start).
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, rmSync } from 'node:fs';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FailedPreconditionError } from '../errors.js';
import { unexpectedCommit, withContext } from './errors.js';
import type { HttpResponse } from './transport.js';

/** `<pid>-<random>`: names a temporary file by the process writing it. */
export function tempTag(): string {
  return `${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** Whether the process whose tempTag starts `name` (or follows `.tmp-` in it) still runs. */
export function ownerAlive(name: string): boolean {
  const m = /(?:^|\.tmp-)(\d+)-[0-9a-f]{8}/.exec(name);
  if (!m) return false;
  const pid = Number(m[1]);
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface BlobRef {
  digest: string;
  size: number;
  /** containerd's name for the content in errors: `layer-sha256:…`, `config-sha256:…` */
  ref: string;
}

export class BlobStore {
  private readonly downloads = new Map<string, Promise<string>>();
  readonly tmpDir: string;

  constructor(readonly dir: string) {
    this.tmpDir = join(dir, '.tmp');
  }

  /**
   * Makes the directories and removes what interrupted downloads left: temporary files of a
   * process that is gone (a `nodelet images import` may load the store while the runtime pulls).
   */
  async init(): Promise<void> {
    await mkdir(this.tmpDir, { recursive: true });
    await mkdir(join(this.dir, 'sha256'), { recursive: true });
    for (const name of await readdir(this.tmpDir)) if (!ownerAlive(name)) await rm(join(this.tmpDir, name), { recursive: true, force: true });
  }

  path(digest: string): string {
    return join(this.dir, 'sha256', digest.replace(/^sha256:/, ''));
  }

  /** Synchronous: the caller checks that no pull claims the blob, and nothing may come between. */
  removeSync(digest: string): void {
    rmSync(this.path(digest), { force: true });
  }

  /**
   * The blob's path, downloading it with `openBlob` unless it is here. Pulls that want the same blob
   * at once share one download; one that fails is tried again by a waiter (whose credentials
   * may differ).
   */
  async fetch(blob: BlobRef, openBlob: () => Promise<HttpResponse>): Promise<string> {
    const final = this.path(blob.digest);
    const running = this.downloads.get(blob.digest);
    if (running) {
      try {
        return await running;
      } catch {
        /* that pull's failure is its own; try ourselves */
      }
    }
    if (existsSync(final)) return final;
    let p = this.downloads.get(blob.digest);
    if (!p) {
      p = this.download(blob, openBlob).finally(() => this.downloads.delete(blob.digest));
      this.downloads.set(blob.digest, p);
    }
    return p;
  }

  private async download(blob: BlobRef, openBlob: () => Promise<HttpResponse>): Promise<string> {
    if (!blob.digest.startsWith('sha256:')) throw new Error(`failed to fetch ${blob.ref}: unsupported digest algorithm`);
    const tmp = join(this.tmpDir, `${tempTag()}-${blob.digest.slice(7)}`);
    const hash = createHash('sha256');
    let received = 0;
    let opened = false;
    try {
      const res = await openBlob();
      opened = true;
      const verify = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          received += chunk.length;
          // Stop at once a registry sends more than the manifest said, rather than fill the disk.
          if (received > blob.size) return cb(unexpectedCommit(blob.ref, 'size', `${received} (at least)`, blob.size));
          hash.update(chunk);
          cb(null, chunk);
        },
      });
      await pipeline(res.body, verify, createWriteStream(tmp, { flags: 'wx' }));
      if (received !== blob.size) throw unexpectedCommit(blob.ref, 'size', received, blob.size);
      const got = `sha256:${hash.digest('hex')}`;
      if (got !== blob.digest) throw unexpectedCommit(blob.ref, 'digest', got, blob.digest);
      // On disk before it is named: a crash must not leave a verified name over unwritten data.
      const fh = await open(tmp, 'r+');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.path(blob.digest));
      return this.path(blob.digest);
    } catch (err) {
      await rm(tmp, { force: true });
      if (err instanceof FailedPreconditionError) throw err;
      if (!opened) throw withContext(err, `failed to fetch ${blob.ref}`);
      throw withContext(err, `failed to copy: reading ${blob.ref} (${received} of ${blob.size} bytes)`);
    }
  }
}
