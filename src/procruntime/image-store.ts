// A local store of OCI images for the process runtime. Archives are imported (from a file, or by
// "pulling" a reference whose archive lies in the images directory as <name>_<tag>.tar); each
// layer is unpacked once into a directory named by its diff ID and shared; an image's root
// filesystem is its layers applied in order, whiteouts honoured, built once.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { InvalidArgumentError, NotFoundError } from './errors.js';

const run = promisify(execFile);

export interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  WorkingDir?: string;
  User?: string;
}

export interface StoredImage {
  /** sha256:<config digest> */
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  config: ImageConfig;
  /** diff IDs, bottom first */
  layers: string[];
}

/** `nodelet.test/busybox:1` -> `busybox_1.tar`: the archive name a pull looks for. */
export function archiveNameFor(ref: string): string {
  const at = ref.indexOf('@');
  const noDigest = at >= 0 ? ref.slice(0, at) : ref;
  const lastSlash = noDigest.lastIndexOf('/');
  const last = noDigest.slice(lastSlash + 1);
  const colon = last.indexOf(':');
  const name = colon >= 0 ? last.slice(0, colon) : last;
  const tag = colon >= 0 ? last.slice(colon + 1) : 'latest';
  return `${name}_${tag}.tar`;
}

/** Adds the default tag as image references are normalised (no registry is assumed). */
export function normalizeRef(ref: string): string {
  if (ref.includes('@')) return ref;
  const last = ref.slice(ref.lastIndexOf('/') + 1);
  return last.includes(':') ? ref : `${ref}:latest`;
}

async function dirSize(path: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(path, { withFileTypes: true })) {
    const p = join(path, e.name);
    if (e.isDirectory()) total += await dirSize(p);
    else if (e.isFile()) total += (await stat(p)).size;
  }
  return total;
}

export class ImageStore {
  private images = new Map<string, StoredImage>();
  private readonly index: string;
  private building = new Map<string, Promise<string>>();

  constructor(
    readonly root: string,
    /** Where pulls look for `<name>_<tag>.tar` archives. */
    readonly imagesDir?: string,
  ) {
    this.index = join(root, 'images.json');
  }

  async load(): Promise<void> {
    await mkdir(join(this.root, 'layers'), { recursive: true });
    await mkdir(join(this.root, 'rootfs'), { recursive: true });
    if (existsSync(this.index)) {
      const list = JSON.parse(await readFile(this.index, 'utf8')) as StoredImage[];
      this.images = new Map(list.map((i) => [i.id, i]));
    }
  }

  private async save(): Promise<void> {
    const tmp = `${this.index}.${randomBytes(4).toString('hex')}`;
    await writeFile(tmp, JSON.stringify([...this.images.values()], null, 1));
    await rename(tmp, this.index);
  }

  list(): StoredImage[] {
    return [...this.images.values()];
  }

  /** By ID (with or without sha256:), by a repo tag, or by a repo digest. */
  find(ref: string): StoredImage | undefined {
    const id = ref.startsWith('sha256:') ? ref : `sha256:${ref}`;
    if (this.images.has(id)) return this.images.get(id);
    const norm = normalizeRef(ref);
    for (const img of this.images.values()) if (img.repoTags.includes(norm) || img.repoDigests.includes(ref)) return img;
    return undefined;
  }

  /** "Pulls" a reference from the images directory. */
  async pull(ref: string): Promise<StoredImage> {
    if (!this.imagesDir) throw new NotFoundError(`image ${ref} (no images directory is configured to pull from)`);
    const file = join(this.imagesDir, archiveNameFor(ref));
    if (!existsSync(file)) throw new NotFoundError(`image ${ref}: no archive ${file}`);
    const imported = await this.importArchive(file);
    const found = this.find(ref);
    if (!found) throw new NotFoundError(`image ${ref}: ${file} holds ${imported.map((i) => i.repoTags.join(',')).join('; ')}`);
    return found;
  }

  /** Imports an OCI image layout archive (.tar); returns the images it held. */
  async importArchive(file: string): Promise<StoredImage[]> {
    const work = join(this.root, `.import-${randomBytes(6).toString('hex')}`);
    await mkdir(work, { recursive: true });
    try {
      await run('tar', ['-xf', file, '-C', work]);
      if (!existsSync(join(work, 'index.json'))) throw new InvalidArgumentError(`${file} is not an OCI image layout archive (no index.json)`);
      const blob = (digest: string) => join(work, 'blobs', ...digest.split(':'));
      const index = JSON.parse(await readFile(join(work, 'index.json'), 'utf8')) as { manifests: Array<{ digest: string; annotations?: Record<string, string> }> };
      const out: StoredImage[] = [];
      for (const desc of index.manifests) {
        const manifest = JSON.parse(await readFile(blob(desc.digest), 'utf8')) as { config: { digest: string }; layers: Array<{ digest: string; mediaType: string }> };
        const configText = await readFile(blob(manifest.config.digest), 'utf8');
        const config = JSON.parse(configText) as { config?: ImageConfig; rootfs?: { diff_ids?: string[] } };
        const diffIds = config.rootfs?.diff_ids ?? [];
        if (diffIds.length !== manifest.layers.length) throw new InvalidArgumentError(`${file}: ${manifest.layers.length} layers but ${diffIds.length} diff IDs`);
        let size = 0;
        for (const [i, layer] of manifest.layers.entries()) size += await this.unpackLayer(blob(layer.digest), layer.mediaType, diffIds[i]!);
        const id = `sha256:${createHash('sha256').update(configText).digest('hex')}`;
        const name = desc.annotations?.['io.containerd.image.name'] ?? desc.annotations?.['org.opencontainers.image.ref.name'];
        const tags = name && name.includes('/') ? [normalizeRef(name)] : [];
        const prev = this.images.get(id);
        // A tag moves to the newest image that claims it.
        for (const other of this.images.values()) if (other.id !== id) other.repoTags = other.repoTags.filter((t) => !tags.includes(t));
        const img: StoredImage = {
          id,
          repoTags: [...new Set([...(prev?.repoTags ?? []), ...tags])],
          repoDigests: [...new Set([...(prev?.repoDigests ?? []), ...(name ? [`${name.split(':')[0]}@${desc.digest}`] : [])])],
          size,
          config: config.config ?? {},
          layers: diffIds,
        };
        this.images.set(id, img);
        out.push(img);
      }
      await this.save();
      return out;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  private async unpackLayer(blobPath: string, mediaType: string, diffId: string): Promise<number> {
    const dir = join(this.root, 'layers', diffId.replace('sha256:', ''));
    if (!existsSync(dir)) {
      const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
      await mkdir(tmp, { recursive: true });
      const flags = mediaType.endsWith('+gzip') || mediaType.endsWith('.gzip') ? ['-xzf'] : mediaType.endsWith('+zstd') ? ['--zstd', '-xf'] : ['-xf'];
      await run('tar', [...flags, blobPath, '-C', tmp, '--numeric-owner', '--same-permissions']);
      await rename(tmp, dir);
    }
    return (await stat(blobPath)).size;
  }

  /** The image's root filesystem (its layers flattened, whiteouts applied), built on first use. */
  rootfs(img: StoredImage): Promise<string> {
    const dir = join(this.root, 'rootfs', img.id.replace('sha256:', ''));
    if (existsSync(dir)) return Promise.resolve(dir);
    let p = this.building.get(img.id);
    if (!p) {
      p = this.flatten(img, dir).finally(() => this.building.delete(img.id));
      this.building.set(img.id, p);
    }
    return p;
  }

  private async flatten(img: StoredImage, dir: string): Promise<string> {
    const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
    await mkdir(tmp, { recursive: true });
    for (const diffId of img.layers) {
      const layer = join(this.root, 'layers', diffId.replace('sha256:', ''));
      await applyWhiteouts(layer, tmp, '');
      await run('cp', ['-a', `${layer}/.`, `${tmp}/`]);
      await removeWhiteoutFiles(tmp);
    }
    await rename(tmp, dir);
    return dir;
  }

  async remove(ref: string): Promise<void> {
    const img = this.find(ref);
    if (!img) return; // RemoveImage is idempotent
    this.images.delete(img.id);
    await rm(join(this.root, 'rootfs', img.id.replace('sha256:', '')), { recursive: true, force: true });
    const used = new Set([...this.images.values()].flatMap((i) => i.layers));
    for (const l of img.layers) if (!used.has(l)) await rm(join(this.root, 'layers', l.replace('sha256:', '')), { recursive: true, force: true });
    await this.save();
  }

  async usedBytes(): Promise<number> {
    return dirSize(this.root).catch(() => 0);
  }
}

/** For each whiteout in `layer` (at `rel`), removes what it hides from `target` before the layer is copied. */
async function applyWhiteouts(layer: string, target: string, rel: string): Promise<void> {
  for (const e of await readdir(join(layer, rel), { withFileTypes: true })) {
    const r = join(rel, e.name);
    if (e.name === '.wh..wh..opq') {
      // Opaque directory: nothing below it from lower layers shows through.
      const d = join(target, rel);
      if (existsSync(d)) for (const child of await readdir(d)) await rm(join(d, child), { recursive: true, force: true });
    } else if (e.name.startsWith('.wh.')) {
      await rm(join(target, rel, e.name.slice(4)), { recursive: true, force: true });
    } else if (e.isDirectory()) {
      await applyWhiteouts(layer, target, r);
    }
  }
}

async function removeWhiteoutFiles(dir: string): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.name.startsWith('.wh.')) await rm(p, { recursive: true, force: true });
    else if (e.isDirectory()) await removeWhiteoutFiles(p);
  }
}
