// Manifests and indexes (OCI's and docker's schema 2 alike): what they may hold, which of an
// index's manifests is this node's platform, and how each layer is compressed.
import { arch } from 'node:process';
import { InvalidArgumentError } from '../errors.js';
import { notFound } from './errors.js';

export const MEDIA = {
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
} as const;

/** What a manifest GET accepts: the two image manifests and the two indexes. */
export const MANIFEST_ACCEPT = [MEDIA.ociManifest, MEDIA.ociIndex, MEDIA.dockerManifest, MEDIA.dockerList].join(', ');

export type Compression = 'none' | 'gzip' | 'zstd';

const LAYERS: Record<string, Compression> = {
  'application/vnd.oci.image.layer.v1.tar': 'none',
  'application/vnd.oci.image.layer.v1.tar+gzip': 'gzip',
  'application/vnd.oci.image.layer.v1.tar+zstd': 'zstd',
  'application/vnd.docker.image.rootfs.diff.tar.gzip': 'gzip',
};

/** A layer's compression from its media type; other media types cannot be unpacked. */
export function layerCompression(mediaType: string): Compression {
  const c = LAYERS[mediaType];
  if (!c) throw new InvalidArgumentError(`unsupported layer media type ${JSON.stringify(mediaType)} (supported: ${Object.keys(LAYERS).join(', ')})`);
  return c;
}

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: Platform;
  annotations?: Record<string, string>;
}

export interface ImageManifest {
  kind: 'manifest';
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
}

export interface ImageIndex {
  kind: 'index';
  mediaType: string;
  manifests: Descriptor[];
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

function descriptor(v: unknown, where: string): Descriptor {
  const d = v as Partial<Descriptor> | null;
  if (!d || typeof d !== 'object' || typeof d.digest !== 'string' || typeof d.size !== 'number' || !Number.isSafeInteger(d.size) || d.size < 0) {
    throw new InvalidArgumentError(`invalid manifest: ${where} is not a descriptor with a digest and a size`);
  }
  if (!DIGEST.test(d.digest)) throw new InvalidArgumentError(`invalid manifest: ${where} has digest ${JSON.stringify(d.digest)}, not a sha256 one`);
  return { ...d, mediaType: typeof d.mediaType === 'string' ? d.mediaType : '' } as Descriptor;
}

/**
 * Parses a manifest or index. The kind comes from the Content-Type the registry sent, else from
 * the document's own mediaType, else from its shape (OCI makes mediaType optional).
 */
export function parseManifest(bytes: Buffer, contentType: string | undefined): ImageManifest | ImageIndex {
  let doc: { mediaType?: unknown; schemaVersion?: unknown; manifests?: unknown; config?: unknown; layers?: unknown };
  try {
    doc = JSON.parse(bytes.toString('utf8')) as typeof doc;
  } catch {
    throw new InvalidArgumentError('invalid manifest: not JSON');
  }
  const declared = typeof doc.mediaType === 'string' ? doc.mediaType : '';
  const header = (contentType ?? '').split(';')[0]!.trim();
  const known = new Set<string>([MEDIA.ociManifest, MEDIA.ociIndex, MEDIA.dockerManifest, MEDIA.dockerList]);
  let mediaType = known.has(header) ? header : declared;
  if (!mediaType) mediaType = Array.isArray(doc.manifests) ? MEDIA.ociIndex : MEDIA.ociManifest;
  if (mediaType === 'application/vnd.docker.distribution.manifest.v1+json' || mediaType === 'application/vnd.docker.distribution.manifest.v1+prettyjws' || doc.schemaVersion === 1) {
    throw new InvalidArgumentError('unsupported manifest: docker schema 1 manifests are deprecated and not supported; push the image again with a current client');
  }
  if (mediaType === MEDIA.ociIndex || mediaType === MEDIA.dockerList) {
    if (!Array.isArray(doc.manifests)) throw new InvalidArgumentError('invalid index: no manifests');
    return { kind: 'index', mediaType, manifests: doc.manifests.map((m, i) => descriptor(m, `manifests[${i}]`)) };
  }
  if (mediaType === MEDIA.ociManifest || mediaType === MEDIA.dockerManifest) {
    if (!Array.isArray(doc.layers)) throw new InvalidArgumentError('invalid manifest: no layers');
    return { kind: 'manifest', mediaType, config: descriptor(doc.config, 'config'), layers: doc.layers.map((l, i) => descriptor(l, `layers[${i}]`)) };
  }
  throw new InvalidArgumentError(`unsupported manifest media type ${JSON.stringify(mediaType)}`);
}

/** This node's platform as images name it (Node's x64 is amd64). */
export function hostPlatform(): Platform {
  const names: Record<string, Platform> = {
    x64: { os: 'linux', architecture: 'amd64' },
    arm64: { os: 'linux', architecture: 'arm64', variant: 'v8' },
    arm: { os: 'linux', architecture: 'arm', variant: 'v7' },
    ia32: { os: 'linux', architecture: '386' },
    ppc64: { os: 'linux', architecture: 'ppc64le' },
    s390x: { os: 'linux', architecture: 's390x' },
    riscv64: { os: 'linux', architecture: 'riscv64' },
  };
  return names[arch] ?? { os: 'linux', architecture: arch };
}

export const platformString = (p: Platform) => `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ''}`;

/** arm64's only variant is v8, which indexes may or may not write. */
function variantMatches(want: Platform, got: Platform): boolean {
  const norm = (p: Platform) => (p.architecture === 'arm64' && (p.variant ?? 'v8') === 'v8' ? 'v8' : p.variant);
  if (!want.variant || !got.variant) return want.architecture !== 'arm64' || norm(got) === 'v8';
  return norm(want) === norm(got);
}

/**
 * The index entry for `want`: same OS and architecture, and variant when both name one. An entry
 * that names a variant exactly is preferred to one that names none.
 */
export function selectPlatform(index: ImageIndex, digest: string, want: Platform = hostPlatform()): Descriptor {
  const candidates = index.manifests.filter((m) => m.platform && m.platform.os === want.os && m.platform.architecture === want.architecture && variantMatches(want, m.platform));
  const exact = candidates.find((m) => m.platform!.variant === want.variant);
  const chosen = exact ?? candidates[0];
  if (!chosen) {
    const offered = index.manifests.map((m) => (m.platform ? platformString(m.platform) : 'unknown')).join(', ');
    throw notFound(`no match for platform ${platformString(want)} in manifest ${digest} (it has ${offered || 'no manifests'}): not found`);
  }
  return chosen;
}
