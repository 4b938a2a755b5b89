// A tiny pusher over the distribution API (monolithic blob upload: POST then PUT; manifest PUT),
// and images built from files in memory: layers tarred by `tar`, compressed by zlib or `zstd`,
// as OCI or docker schema 2, optionally under an index of platforms.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** path -> content; null makes a directory. */
export type Files = Record<string, string | Buffer | null>;

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface ImageSpec {
  layers: Files[];
  /** The config's `config` (Cmd, Env, …). */
  config?: object;
  compression?: 'gzip' | 'zstd' | 'none';
  format?: 'oci' | 'docker';
  platform?: Platform;
  /** Diff IDs to write in the config instead of the true ones (an image that lies). */
  diffIds?: string[];
  /** Added to each layer's size in the manifest (a manifest that lies about sizes). */
  sizeDelta?: number;
}

export interface BuiltLayer {
  digest: string;
  size: number;
  diffId: string;
  mediaType: string;
  data: Buffer;
}

export interface BuiltImage {
  manifest: Buffer;
  manifestDigest: string;
  mediaType: string;
  config: Buffer;
  configDigest: string;
  layers: BuiltLayer[];
}

/** An uncompressed tar of `files`, the same bytes whenever the same files are given. */
export function tarOf(files: Files): Buffer {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-layer-'));
  try {
    for (const [p, content] of Object.entries(files)) {
      if (content === null) mkdirSync(join(root, p), { recursive: true });
      else {
        mkdirSync(dirname(join(root, p)), { recursive: true });
        writeFileSync(join(root, p), content);
      }
    }
    return execFileSync('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-cf', '-', '-C', root, '.'], { maxBuffer: 1 << 30 });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

export function compress(tar: Buffer, how: 'gzip' | 'zstd' | 'none'): Buffer {
  if (how === 'gzip') return gzipSync(tar);
  if (how === 'zstd') return execFileSync('zstd', ['-q', '-c', '-3'], { input: tar, maxBuffer: 1 << 30 });
  return tar;
}

/**
 * Writes an OCI image layout archive of a built image, named `ref` as containerd's exports name
 * it (what the images directory holds).
 */
export function writeOciArchive(file: string, ref: string, img: BuiltImage): void {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-oci-'));
  try {
    mkdirSync(join(dir, 'blobs/sha256'), { recursive: true });
    for (const b of [img.manifest, img.config, ...img.layers.map((l) => l.data)]) writeFileSync(join(dir, 'blobs/sha256', sha(b).slice(7)), b);
    writeFileSync(join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
    const desc = { mediaType: img.mediaType, digest: img.manifestDigest, size: img.manifest.length, annotations: { 'io.containerd.image.name': ref } };
    writeFileSync(join(dir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [desc] }));
    execFileSync('tar', ['-cf', file, '-C', dir, '.']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function buildImage(spec: ImageSpec): BuiltImage {
  const how = spec.compression ?? 'gzip';
  const docker = spec.format === 'docker';
  if (docker && how !== 'gzip') throw new Error('docker schema 2 layers are gzip');
  const layerType = docker ? 'application/vnd.docker.image.rootfs.diff.tar.gzip' : `application/vnd.oci.image.layer.v1.tar${how === 'none' ? '' : `+${how}`}`;
  const layers = spec.layers.map((files) => {
    const tar = tarOf(files);
    const data = compress(tar, how);
    return { digest: sha(data), size: data.length, diffId: sha(tar), mediaType: layerType, data };
  });
  const platform = spec.platform ?? { os: 'linux', architecture: 'amd64' };
  const config = Buffer.from(
    JSON.stringify({ ...platform, config: spec.config ?? { Cmd: ['/bin/sh'] }, rootfs: { type: 'layers', diff_ids: spec.diffIds ?? layers.map((l) => l.diffId) } }),
  );
  const mediaType = docker ? 'application/vnd.docker.distribution.manifest.v2+json' : 'application/vnd.oci.image.manifest.v1+json';
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType,
      config: { mediaType: docker ? 'application/vnd.docker.container.image.v1+json' : 'application/vnd.oci.image.config.v1+json', digest: sha(config), size: config.length },
      layers: layers.map((l) => ({ mediaType: l.mediaType, digest: l.digest, size: l.size + (spec.sizeDelta ?? 0) })),
    }),
  );
  return { manifest, manifestDigest: sha(manifest), mediaType, config, configDigest: sha(config), layers };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function call(method: string, url: string, ca: Buffer, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method, ca, headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export interface Creds {
  username: string;
  password: string;
}

/** The Authorization header for pushing to `repo`: Basic, or a token from the challenge's realm. */
async function pushAuth(host: string, repo: string, creds: Creds | undefined, ca: Buffer): Promise<Record<string, string>> {
  const probe = await call('GET', `https://${host}/v2/`, ca);
  if (probe.status === 200) return {};
  const challenge = String(probe.headers['www-authenticate'] ?? '');
  if (!creds) throw new Error(`${host} wants credentials to push (${challenge})`);
  const basic = `Basic ${Buffer.from(`${creds.username}:${creds.password}`).toString('base64')}`;
  if (/^basic/i.test(challenge)) return { authorization: basic };
  const realm = /realm="([^"]+)"/.exec(challenge)?.[1];
  const service = /service="([^"]+)"/.exec(challenge)?.[1];
  if (!realm) throw new Error(`cannot push: challenge ${challenge}`);
  const url = new URL(realm);
  if (service) url.searchParams.set('service', service);
  url.searchParams.set('scope', `repository:${repo}:pull,push`);
  const t = await call('GET', url.href, ca, { authorization: basic });
  if (t.status !== 200) throw new Error(`token for push: ${t.status} ${t.body.toString()}`);
  const answer = JSON.parse(t.body.toString()) as { token?: string; access_token?: string };
  return { authorization: `Bearer ${answer.token ?? answer.access_token}` };
}

async function uploadBlob(host: string, repo: string, data: Buffer, auth: Record<string, string>, ca: Buffer): Promise<void> {
  const digest = sha(data);
  if ((await call('HEAD', `https://${host}/v2/${repo}/blobs/${digest}`, ca, auth)).status === 200) return;
  const start = await call('POST', `https://${host}/v2/${repo}/blobs/uploads/`, ca, auth);
  if (start.status !== 202) throw new Error(`upload start: ${start.status} ${start.body.toString()}`);
  const loc = new URL(String(start.headers.location), `https://${host}`);
  loc.searchParams.set('digest', digest);
  const put = await call('PUT', loc.href, ca, { ...auth, 'content-type': 'application/octet-stream' }, data);
  if (put.status !== 201) throw new Error(`upload ${digest}: ${put.status} ${put.body.toString()}`);
}

async function putManifest(host: string, repo: string, ref: string, mediaType: string, body: Buffer, auth: Record<string, string>, ca: Buffer): Promise<void> {
  const res = await call('PUT', `https://${host}/v2/${repo}/manifests/${ref}`, ca, { ...auth, 'content-type': mediaType }, body);
  if (res.status !== 201) throw new Error(`manifest ${repo}:${ref}: ${res.status} ${res.body.toString()}`);
}

export interface PushSpec extends Partial<ImageSpec> {
  /** Makes the tag an index of these images, one per platform. */
  index?: Array<ImageSpec & { platform: Platform }>;
}

export interface Pushed {
  /** What the tag names: the manifest's digest, or the index's. */
  digest: string;
  images: BuiltImage[];
}

/** Pushes an image (or an index of images) as `repo:tag`. */
export async function pushImage(host: string, repo: string, tag: string, spec: PushSpec, creds: Creds | undefined, caFile: string): Promise<Pushed> {
  const ca = readFileSync(caFile);
  const auth = await pushAuth(host, repo, creds, ca);
  const images = spec.index ? spec.index.map(buildImage) : [buildImage({ layers: spec.layers ?? [], ...spec })];
  for (const img of images) {
    for (const l of img.layers) await uploadBlob(host, repo, l.data, auth, ca);
    await uploadBlob(host, repo, img.config, auth, ca);
  }
  if (!spec.index) {
    await putManifest(host, repo, tag, images[0]!.mediaType, images[0]!.manifest, auth, ca);
    return { digest: images[0]!.manifestDigest, images };
  }
  for (const img of images) await putManifest(host, repo, img.manifestDigest, img.mediaType, img.manifest, auth, ca);
  const docker = spec.format === 'docker';
  const mediaType = docker ? 'application/vnd.docker.distribution.manifest.list.v2+json' : 'application/vnd.oci.image.index.v1+json';
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType,
      manifests: images.map((img, i) => ({ mediaType: img.mediaType, digest: img.manifestDigest, size: img.manifest.length, platform: spec.index![i]!.platform })),
    }),
  );
  await putManifest(host, repo, tag, mediaType, index, auth, ca);
  return { digest: sha(index), images };
}
