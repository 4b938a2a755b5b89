// A local store of OCI images for the process runtime. Images are pulled from registries (the
// distribution API, src/procruntime/registry/) or imported from OCI layout archives (from a file,
// or by pulling a reference whose archive lies in the images directory as <name>_<tag>.tar). Each
// layer is unpacked once into a directory named by its diff ID and shared; blobs pulled are kept
// by digest; an image's root filesystem is its layers applied in order, whiteouts honoured, built once.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import type { AuthConfig } from '../cri/types.js';
import { InvalidArgumentError } from './errors.js';
import { TokenCache } from './registry/auth.js';
import { BlobStore, ownerAlive, tempTag } from './registry/blobs.js';
import { Claims, type ContentKind } from './registry/claims.js';
import { LayerStore } from './registry/layers.js';
import { layerCompression, type Compression, type Platform } from './registry/manifest.js';
import { pullFromRegistry, type PullTarget } from './registry/pull.js';
import { parseReference, repositoryName, tryParseReference } from './registry/reference.js';

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
  /** Digests of the blobs kept for it (config and layers; pulled images only). */
  blobs?: string[];
}

export interface ImageStoreOptions {
  /** docker/containerd certs.d layout for registries' CAs: `<dir>/<host:port>/*.crt`. */
  certsDir?: string;
  /** A pull that receives nothing for this long fails (default 60 s). */
  progressTimeoutMs?: number;
  /** Which platform an index resolves to (default: this node's). */
  platform?: Platform;
  /** Milliseconds now (tests pass their own). */
  now?: () => number;
}

/** How long a measured disk usage stands while the store does not change (cadvisor's du period). */
export const USAGE_CACHE_MS = 60_000;

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

/** `host:5000/a/b:1` -> `host:5000/a/b` (a port is not a tag). */
function withoutTag(name: string): string {
  const at = name.indexOf('@');
  const base = at >= 0 ? name.slice(0, at) : name;
  const colon = base.indexOf(':', base.lastIndexOf('/') + 1);
  return colon >= 0 ? base.slice(0, colon) : base;
}

/** Whether an archive's image name (and manifest digest) is the image `ref` names. */
function namesImage(name: string, digest: string, ref: string): boolean {
  if (!ref.includes('@') && normalizeRef(name) === normalizeRef(ref)) return true;
  const r = tryParseReference(ref);
  const n = tryParseReference(name);
  if (!r || !n || repositoryName(r) !== repositoryName(n)) return false;
  return r.digest ? r.digest === digest : r.tag === n.tag;
}

/** Disk used under `path`: allocated blocks, each inode once (hard links are not space twice). */
async function diskUsage(path: string, seen = new Set<string>()): Promise<number> {
  const st = await lstat(path);
  const key = `${st.dev}:${st.ino}`;
  if (seen.has(key)) return 0;
  seen.add(key);
  let total = st.blocks * 512;
  if (st.isDirectory()) {
    for (const name of await readdir(path)) total += await diskUsage(join(path, name), seen).catch(() => 0);
  }
  return total;
}

/** An archive's index.json, or undefined when it has none (tar members may be `./index.json`). */
async function archiveIndex(file: string): Promise<ArchiveIndex | undefined> {
  for (const member of ['index.json', './index.json']) {
    try {
      const { stdout } = await run('tar', ['-xOf', file, member], { maxBuffer: 16 * 1024 * 1024 });
      return JSON.parse(stdout) as ArchiveIndex;
    } catch {
      /* the other spelling, or not an archive */
    }
  }
  return undefined;
}

interface ArchiveIndex {
  manifests: Array<{ digest: string; annotations?: Record<string, string> }>;
}

const imageName = (a?: Record<string, string>) => a?.['io.containerd.image.name'] ?? a?.['org.opencontainers.image.ref.name'];

/** Archives name layers by media type too, some of them not the registry ones: by suffix then. */
function archiveCompression(mediaType: string): Compression {
  try {
    return layerCompression(mediaType);
  } catch {
    return mediaType.endsWith('gzip') ? 'gzip' : mediaType.endsWith('zstd') ? 'zstd' : 'none';
  }
}

export class ImageStore {
  private images = new Map<string, StoredImage>();
  private readonly index: string;
  private building = new Map<string, Promise<string>>();
  readonly blobs: BlobStore;
  private readonly layers: LayerStore;
  private readonly tokens = new TokenCache();
  private readonly claims = new Claims();
  /** The last walk of the store: ImageFsInfo is asked every 10 s, and walking thousands of files each time is most of a node's work at rest. */
  private usage?: { bytes: number; at: number; changes: number };
  /** Bumped by every change to the store's content. */
  private changes = 0;

  constructor(
    readonly root: string,
    /** Where pulls look for `<name>_<tag>.tar` archives. */
    readonly imagesDir?: string,
    private readonly opts: ImageStoreOptions = {},
  ) {
    this.index = join(root, 'images.json');
    this.blobs = new BlobStore(join(root, 'blobs'));
    this.layers = new LayerStore(join(root, 'layers'));
  }

  async load(): Promise<void> {
    await mkdir(join(this.root, 'rootfs'), { recursive: true });
    await this.layers.init();
    await this.blobs.init();
    // What a crash left half-made: root filesystems not yet renamed into place, import work dirs.
    for (const name of await readdir(join(this.root, 'rootfs'))) if (name.includes('.tmp-') && !ownerAlive(name)) await rm(join(this.root, 'rootfs', name), { recursive: true, force: true });
    for (const name of await readdir(this.root)) if (name.startsWith('.import-') && !ownerAlive(name.replace('.import-', '.tmp-'))) await rm(join(this.root, name), { recursive: true, force: true });
    if (existsSync(this.index)) {
      const list = JSON.parse(await readFile(this.index, 'utf8')) as StoredImage[];
      this.images = new Map(list.map((i) => [i.id, i]));
    }
  }

  private async save(): Promise<void> {
    this.changes++;
    const tmp = `${this.index}.${randomBytes(4).toString('hex')}`;
    await writeFile(tmp, JSON.stringify([...this.images.values()], null, 1));
    await rename(tmp, this.index);
  }

  list(): StoredImage[] {
    return [...this.images.values()];
  }

  /**
   * By ID (with or without sha256:), by a repo tag, or by a repo digest; references normalised as
   * containerd does (`busybox` is docker.io/library/busybox:latest).
   */
  find(ref: string): StoredImage | undefined {
    const id = ref.startsWith('sha256:') ? ref : `sha256:${ref}`;
    if (this.images.has(id)) return this.images.get(id);
    const norm = normalizeRef(ref);
    const r = tryParseReference(ref);
    const full = r && (r.digest ? `${repositoryName(r)}@${r.digest}` : `${repositoryName(r)}:${r.tag}`);
    for (const img of this.images.values()) {
      if (img.repoTags.includes(norm) || img.repoDigests.includes(ref)) return img;
      if (full && (img.repoTags.includes(full) || img.repoDigests.includes(full))) return img;
    }
    return undefined;
  }

  /**
   * Pulls a reference: from the images directory when an archive there names it (an offline
   * source), else from its registry, with the CRI credentials given.
   */
  async pull(ref: string, auth?: AuthConfig): Promise<StoredImage> {
    const file = await this.archiveNaming(ref);
    if (file) {
      await this.importArchive(file);
      const found = this.find(ref);
      if (found) return found;
    }
    return this.pullRegistry(ref, auth);
  }

  /** `<imagesDir>/<name>_<tag>.tar` when its index.json names `ref`. */
  private async archiveNaming(ref: string): Promise<string | undefined> {
    if (!this.imagesDir) return undefined;
    const file = join(this.imagesDir, archiveNameFor(ref));
    if (!existsSync(file)) return undefined;
    const index = await archiveIndex(file);
    const names = index?.manifests?.some((d) => {
      const name = imageName(d.annotations);
      return name !== undefined && namesImage(name, d.digest, ref);
    });
    return names ? file : undefined;
  }

  private async pullRegistry(ref: string, auth?: AuthConfig): Promise<StoredImage> {
    const parsed = parseReference(ref);
    const session = this.claims.session();
    const target: PullTarget = {
      claim: (kind, id) => session.claim(kind, id),
      hasLayer: (diffId) => this.layers.has(diffId),
      unpackLayer: (diffId, blob, compression) => this.layers.unpack(diffId, blob, compression),
    };
    try {
      const p = await pullFromRegistry(parsed, auth, target, {
        blobs: this.blobs,
        tokens: this.tokens,
        certsDir: this.opts.certsDir,
        progressTimeoutMs: this.opts.progressTimeoutMs ?? 60_000,
        ...(this.opts.platform ? { platform: this.opts.platform } : {}),
      });
      const img = this.record(p.configDigest, p.repoTag ? [p.repoTag] : [], [p.repoDigest], {
        size: p.size,
        config: (p.config.config ?? {}) as ImageConfig,
        layers: p.diffIds,
        blobs: p.blobs,
      });
      await this.save();
      return img;
    } catch (err) {
      // What it fetched or unpacked that nothing else holds: no image names it, so nothing would
      // ever collect it. Checked and removed with no await between, so no pull claims it meanwhile.
      const removing: Array<Promise<void>> = [];
      for (const [kind, id] of session.entries()) if (!this.inUse(kind, id, 1)) removing.push(this.removeContent(kind, id));
      await Promise.all(removing);
      throw err;
    } finally {
      session.release();
    }
  }

  /** Whether any image, or another pull under way, holds on to a blob or layer. */
  private inUse(kind: ContentKind, id: string, ownClaims: number): boolean {
    if (this.claims.count(kind, id) > ownClaims) return true;
    for (const img of this.images.values()) if (kind === 'layer' ? img.layers.includes(id) : img.blobs?.includes(id)) return true;
    return false;
  }

  /** Gone from view synchronously (see inUse's callers); the promise is of the disk space. */
  private removeContent(kind: ContentKind, id: string): Promise<void> {
    if (kind === 'layer') return this.layers.remove(id);
    this.blobs.removeSync(id);
    return Promise.resolve();
  }

  /** Records an image by config digest; its tags move to it from any other image. */
  private record(configDigest: string, tags: string[], digests: string[], fields: Pick<StoredImage, 'size' | 'config' | 'layers' | 'blobs'>): StoredImage {
    const id = configDigest;
    const prev = this.images.get(id);
    for (const other of this.images.values()) if (other.id !== id) other.repoTags = other.repoTags.filter((t) => !tags.includes(t));
    const blobs = [...new Set([...(prev?.blobs ?? []), ...(fields.blobs ?? [])])];
    const img: StoredImage = {
      id,
      repoTags: [...new Set([...(prev?.repoTags ?? []), ...tags])],
      repoDigests: [...new Set([...(prev?.repoDigests ?? []), ...digests])],
      size: fields.size,
      config: fields.config,
      layers: fields.layers,
      ...(blobs.length ? { blobs } : {}),
    };
    this.images.set(id, img);
    return img;
  }

  /** Imports an OCI image layout archive (.tar); returns the images it held. */
  async importArchive(file: string): Promise<StoredImage[]> {
    const work = join(this.root, `.import-${tempTag()}`);
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
        for (const [i, layer] of manifest.layers.entries()) {
          await this.layers.unpack(diffIds[i]!, blob(layer.digest), archiveCompression(layer.mediaType));
          size += (await lstat(blob(layer.digest))).size;
        }
        const id = `sha256:${createHash('sha256').update(configText).digest('hex')}`;
        const name = imageName(desc.annotations);
        const tags = name && name.includes('/') ? [normalizeRef(name)] : [];
        const digests = name ? [`${withoutTag(name)}@${desc.digest}`] : [];
        out.push(this.record(id, tags, digests, { size, config: config.config ?? {}, layers: diffIds }));
      }
      await this.save();
      return out;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
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
    const tmp = `${dir}.tmp-${tempTag()}`;
    await mkdir(tmp, { recursive: true });
    try {
      for (const diffId of img.layers) {
        const layer = this.layers.path(diffId);
        await prepareForLayer(layer, tmp, '');
        await run('cp', ['-a', `${layer}/.`, `${tmp}/`]);
        await removeWhiteoutFiles(tmp);
      }
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
    await rename(tmp, dir);
    this.changes++;
    return dir;
  }

  async remove(ref: string): Promise<void> {
    const img = this.find(ref);
    if (!img) return; // RemoveImage is idempotent
    this.images.delete(img.id);
    await rm(join(this.root, 'rootfs', img.id.replace('sha256:', '')), { recursive: true, force: true });
    // Layers and blobs no other image (nor a pull under way) uses.
    const removing: Array<Promise<void>> = [];
    for (const l of img.layers) if (!this.inUse('layer', l, 0)) removing.push(this.removeContent('layer', l));
    for (const b of img.blobs ?? []) if (!this.inUse('blob', b, 0)) removing.push(this.removeContent('blob', b));
    await Promise.all(removing);
    await this.save();
  }

  /**
   * Bytes the store takes on disk (layers, blobs, root filesystems, downloads under way): walked
   * again after the store changed, else at most once a minute (a download under way is seen late).
   */
  async usedBytes(): Promise<number> {
    const now = (this.opts.now ?? Date.now)();
    if (this.usage && this.usage.changes === this.changes && now - this.usage.at < USAGE_CACHE_MS) return this.usage.bytes;
    const changes = this.changes;
    const bytes = await diskUsage(this.root).catch(() => 0);
    this.usage = { bytes, at: now, changes };
    return bytes;
  }
}

const OPAQUE = '.wh..wh..opq';

/**
 * Makes `target` ready for `layer` to be copied over it, by OCI's layer rules: a whiteout removes
 * what it hides, an opaque directory hides everything below it from the layers before, and what
 * the layer puts at a path replaces whatever is there (a directory over a link included). So the
 * copy never writes through a link an earlier layer left (`e -> /var/lib/nodelet`, then `e/x`),
 * and only real directories of `target` are entered.
 */
async function prepareForLayer(layer: string, target: string, rel: string): Promise<void> {
  const entries = await readdir(join(layer, rel), { withFileTypes: true });
  if (entries.some((e) => e.name === OPAQUE)) for (const child of await readdir(join(target, rel))) await rm(join(target, rel, child), { recursive: true, force: true });
  for (const e of entries) {
    if (e.name === OPAQUE) continue;
    if (e.name.startsWith('.wh.')) {
      const hidden = e.name.slice(4);
      if (hidden === '' || hidden === '.' || hidden === '..') throw new Error(`invalid whiteout ${join(rel, e.name)} in layer ${basename(layer)}`);
      await rm(join(target, rel, hidden), { recursive: true, force: true });
      continue;
    }
    const there = await lstat(join(target, rel, e.name)).catch(() => undefined);
    if (!there) continue;
    if (e.isDirectory() && there.isDirectory()) await prepareForLayer(layer, target, join(rel, e.name));
    else await rm(join(target, rel, e.name), { recursive: true, force: true });
  }
}

async function removeWhiteoutFiles(dir: string): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.name.startsWith('.wh.')) await rm(p, { recursive: true, force: true });
    else if (e.isDirectory()) await removeWhiteoutFiles(p);
  }
}
