// A pull from a registry: resolve the reference to this platform's manifest (through an index if
// it names one), fetch the config, then each layer not already unpacked, every piece checked
// against the digest that named it. The store decides where things go (the PullTarget).
import { readFile } from 'node:fs/promises';
import type { AuthConfig } from '../../cri/types.js';
import { InvalidArgumentError } from '../errors.js';
import { Authorizer, credentialsFrom, type TokenCache } from './auth.js';
import type { BlobStore } from './blobs.js';
import { RegistryClient, type FetchedManifest } from './client.js';
import { notFound, UnexpectedStatusError, unexpectedCommit, withContext } from './errors.js';
import { layerCompression, MEDIA, parseManifest, selectPlatform, type Compression, type Descriptor, type ImageManifest, type Platform } from './manifest.js';
import { referenceString, repositoryName, type Reference } from './reference.js';
import { Transport } from './transport.js';

export interface PullTarget {
  /** Marks content this pull uses, before it looks at it, so that no failing pull removes it meanwhile. */
  claim(kind: 'blob' | 'layer', id: string): void;
  hasLayer(diffId: string): boolean;
  /** Unpacks a verified blob as the layer `diffId` (checking the diff ID while unpacking). */
  unpackLayer(diffId: string, blobPath: string, compression: Compression): Promise<void>;
}

export interface PullOptions {
  blobs: BlobStore;
  tokens: TokenCache;
  certsDir?: string;
  progressTimeoutMs: number;
  platform?: Platform;
  /** How many layers download and unpack at once. */
  parallel?: number;
}

export interface ImageConfigDocument {
  architecture?: string;
  os?: string;
  config?: Record<string, unknown>;
  rootfs?: { type?: string; diff_ids?: string[] };
}

export interface PulledImage {
  /** `host/path:tag`, when the reference had a tag. */
  repoTag?: string;
  /** `host/path@sha256:…` of what the reference resolved to (the index, for a multi-platform image). */
  repoDigest: string;
  configDigest: string;
  config: ImageConfigDocument;
  diffIds: string[];
  /** The config's and layers' digests: the store's blobs this image holds on to. */
  blobs: string[];
  /** This platform's manifest, config and (compressed) layers, as containerd counts an image's size. */
  size: number;
}

/** The kind of a manifest in containerd's content refs: `index-sha256:…`, `manifest-sha256:…`. */
const refKind = (mediaType: string) => (mediaType === MEDIA.ociIndex || mediaType === MEDIA.dockerList ? 'index' : 'manifest');

/** Fetches a manifest named by a descriptor or a digest, refusing bytes that are not the ones named. */
async function fetchVerified(client: RegistryClient, digest: string, size?: number): Promise<FetchedManifest> {
  const m = await client.manifest(digest);
  // Checked before the bytes are even parsed: they are not to be trusted until then.
  const ref = `${refKind((m.contentType ?? '').split(';')[0]!.trim())}-${digest}`;
  if (m.digest !== digest) throw unexpectedCommit(ref, 'digest', m.digest, digest);
  if (size !== undefined && m.bytes.length !== size) throw unexpectedCommit(ref, 'size', m.bytes.length, size);
  return m;
}

/** Tag or digest -> this platform's image manifest; the top digest is what the reference names. */
async function resolve(client: RegistryClient, ref: Reference, platform: Platform | undefined): Promise<{ top: FetchedManifest; manifest: ImageManifest; manifestSize: number }> {
  const top = ref.digest ? await fetchVerified(client, ref.digest) : await client.manifest(ref.tag!);
  let current = top;
  // An index may name another index (rare); three levels is more than any real image has.
  for (let depth = 0; depth < 3; depth++) {
    const doc = parseManifest(current.bytes, current.contentType);
    if (doc.kind === 'manifest') return { top, manifest: doc, manifestSize: current.bytes.length };
    const chosen: Descriptor = selectPlatform(doc, current.digest, platform);
    current = await fetchVerified(client, chosen.digest, chosen.size);
  }
  throw new InvalidArgumentError(`manifest ${top.digest}: indexes nested too deep`);
}

/** A blob the registry says it does not have is NotFound, as a missing manifest is. */
function openBlob(client: RegistryClient, digest: string): () => ReturnType<RegistryClient['blob']> {
  return () =>
    client.blob(digest).catch((err: unknown) => {
      throw err instanceof UnexpectedStatusError && err.status === 404 ? notFound(err.message) : err;
    });
}

/** Runs `fn` on each item, `n` at a time; on a failure, starts no more and waits for those running. */
async function eachLimited<T>(items: T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (!failure && next < items.length) {
      const i = next++;
      try {
        await fn(items[i]!, i);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  if (failure) throw failure.err;
}

export async function pullFromRegistry(ref: Reference, auth: AuthConfig | undefined, target: PullTarget, opts: PullOptions): Promise<PulledImage> {
  const name = referenceString(ref);
  const transport = new Transport({ certsDir: opts.certsDir, registryDomain: ref.domain, progressTimeoutMs: opts.progressTimeoutMs });
  const client = new RegistryClient(ref, transport, new Authorizer(credentialsFrom(auth), opts.tokens, transport));
  try {
    let resolved: Awaited<ReturnType<typeof resolve>>;
    try {
      resolved = await resolve(client, ref, opts.platform);
    } catch (err) {
      if (err instanceof UnexpectedStatusError && err.status === 404) {
        throw notFound(`failed to resolve reference "${name}": ${name}: not found${err.serverMessage ? `: ${err.serverMessage}` : ''}`);
      }
      throw withContext(err, `failed to resolve reference "${name}"`);
    }
    const { top, manifest, manifestSize } = resolved;
    const cfgDesc = manifest.config;
    if (cfgDesc.mediaType && cfgDesc.mediaType !== MEDIA.ociConfig && cfgDesc.mediaType !== MEDIA.dockerConfig) {
      throw new InvalidArgumentError(`${name} is not a container image: its config has media type ${JSON.stringify(cfgDesc.mediaType)}`);
    }
    // Known before anything is downloaded, so that an image we could not unpack costs no traffic.
    const compressions = manifest.layers.map((l) => layerCompression(l.mediaType));
    target.claim('blob', cfgDesc.digest);
    const cfgPath = await opts.blobs.fetch({ digest: cfgDesc.digest, size: cfgDesc.size, ref: `config-${cfgDesc.digest}` }, openBlob(client, cfgDesc.digest));
    let config: ImageConfigDocument;
    try {
      config = JSON.parse(await readFile(cfgPath, 'utf8')) as ImageConfigDocument;
    } catch {
      throw new InvalidArgumentError(`config ${cfgDesc.digest} of ${name} is not JSON`);
    }
    const diffIds = config.rootfs?.diff_ids ?? [];
    if (diffIds.length !== manifest.layers.length || !diffIds.every((d) => /^sha256:[0-9a-f]{64}$/.test(d))) {
      throw new InvalidArgumentError(`mismatched image rootfs and manifest layers: ${name} has ${manifest.layers.length} layers but its config lists ${diffIds.length} valid diff IDs`);
    }
    await eachLimited(manifest.layers, opts.parallel ?? 3, async (layer, i) => {
      const diffId = diffIds[i]!;
      target.claim('layer', diffId);
      target.claim('blob', layer.digest);
      if (target.hasLayer(diffId)) return; // unpacked for another image: not fetched again
      const path = await opts.blobs.fetch({ digest: layer.digest, size: layer.size, ref: `layer-${layer.digest}` }, openBlob(client, layer.digest));
      await target.unpackLayer(diffId, path, compressions[i]!);
    });
    const repo = repositoryName(ref);
    return {
      ...(ref.tag ? { repoTag: `${repo}:${ref.tag}` } : {}),
      repoDigest: `${repo}@${top.digest}`,
      configDigest: cfgDesc.digest,
      config,
      diffIds,
      blobs: [cfgDesc.digest, ...manifest.layers.map((l) => l.digest)],
      size: manifestSize + cfgDesc.size + manifest.layers.reduce((s, l) => s + l.size, 0),
    };
  } catch (err) {
    throw withContext(err, `failed to pull and unpack image "${name}"`);
  } finally {
    transport.close();
  }
}
