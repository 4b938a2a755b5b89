// Pull credentials from a pod's imagePullSecrets, matched to an image as the kubelet's credential
// keyring matches them: a key is a registry host (globs allowed per dot-separated part, the port
// exact) with an optional path prefix; every key that matches gives its credentials, the most
// specific key first, and a pull tries them in that order.
import { createHash } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import type { AuthConfig } from '../cri/types.js';

export interface Credential {
  username: string;
  password: string;
  /** The key (registry host and path) the credential was stored under. */
  key: string;
  /** The secret it came from: a pod that names the same secret may use what it pulled. */
  source: { uid: string; namespace: string; name: string };
  /** Identifies the credential itself, so another secret holding the same one is recognised. */
  hash: string;
}

/** docker.io's index, as the keyring keys it (`https://index.docker.io/v1/` becomes this). */
const DEFAULT_REGISTRY_HOST = 'index.docker.io';

interface DockerConfigEntry {
  username?: string;
  password?: string;
  auth?: string;
  email?: string;
}

/** A location without a scheme, as `host[:port][/path]`: the v1/v2 API prefixes of docker's keys are not part of the path. */
function keyOf(location: string): string | undefined {
  const value = /^https?:\/\//.test(location) ? location : `https://${location}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  let path = url.pathname;
  if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
  return path.length > 0 && path !== '/' ? url.host + path : url.host;
}

function entryCredential(key: string, e: DockerConfigEntry, source: Credential['source']): Credential {
  let username = e.username ?? '';
  let password = e.password ?? '';
  // `auth` is base64 of "user:password" and wins over the separate fields, as in docker's config.
  if (e.auth) {
    const decoded = Buffer.from(e.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) {
      username = decoded.slice(0, colon);
      password = decoded.slice(colon + 1);
    }
  }
  const hash = createHash('sha256').update(JSON.stringify([username, password])).digest('hex');
  return { username, password, key, source, hash };
}

/** A pull secret whose data is not the JSON its type says: the pull cannot go on, as the kubelet's keyring refuses it. */
export class PullSecretError extends Error {}

/** The entries of a dockercfg or dockerconfigjson secret; a secret of another type, or without its key, gives none. */
export function secretEntries(secret: V1Secret): Record<string, DockerConfigEntry> {
  const data = secret.data ?? {};
  const decode = (k: string) => (data[k] ? Buffer.from(data[k]!, 'base64').toString('utf8') : undefined);
  const parse = (text: string) => {
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new PullSecretError(`pull secret ${secret.metadata?.namespace}/${secret.metadata?.name}: ${(err as Error).message}`);
    }
  };
  const object = (v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, DockerConfigEntry>) : {});
  if (secret.type === 'kubernetes.io/dockerconfigjson') {
    const text = decode('.dockerconfigjson');
    return text ? object((parse(text) as { auths?: unknown } | null)?.auths) : {};
  }
  if (secret.type === 'kubernetes.io/dockercfg') {
    const text = decode('.dockercfg');
    return text ? object(parse(text)) : {};
  }
  return {};
}

/** Whether a key's host glob matches the image's host: same number of parts, each a glob match; same port; the key's path a prefix. */
export function keyMatches(key: string, image: string): boolean {
  const split = (s: string) => {
    const slash = s.indexOf('/');
    const hostPort = slash >= 0 ? s.slice(0, slash) : s;
    const path = slash >= 0 ? s.slice(slash) : '';
    const colon = hostPort.lastIndexOf(':');
    return colon >= 0 ? { host: hostPort.slice(0, colon), port: hostPort.slice(colon + 1), path } : { host: hostPort, port: '', path };
  };
  const k = split(key);
  const t = split(image);
  if (k.port !== t.port || !t.path.startsWith(k.path)) return false;
  const kParts = k.host.split('.');
  const tParts = t.host.split('.');
  return kParts.length === tParts.length && kParts.every((p, i) => globMatch(p, tParts[i]!));
}

/** filepath.Match within one host label: `*` any run, `?` one character, `[...]` a class. */
function globMatch(pattern: string, text: string): boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) return false;
      re += `[${pattern.slice(i + 1, end).replace(/^\^/, '^').replace(/\\/g, '\\\\')}]`;
      i = end;
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`).test(text);
}

/** The repository a pull names (registry host and path, no tag or digest), docker.io's names expanded. */
export function repositoryOf(image: string): string {
  let name = image;
  const at = name.indexOf('@');
  if (at >= 0) name = name.slice(0, at);
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) name = name.slice(0, colon);
  const first = name.split('/')[0]!;
  const hasRegistry = name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasRegistry) return name;
  return `docker.io/${name.includes('/') ? name : `library/${name}`}`;
}

export class Keyring {
  /** Keys in the order a lookup tries them: reverse lexical, so a longer path comes before its prefix. */
  private readonly keys: string[] = [];
  private readonly creds = new Map<string, Credential[]>();

  static fromSecrets(secrets: V1Secret[]): Keyring {
    const ring = new Keyring();
    for (const s of secrets) {
      const source = { uid: s.metadata?.uid ?? '', namespace: s.metadata?.namespace ?? '', name: s.metadata?.name ?? '' };
      for (const [loc, entry] of Object.entries(secretEntries(s))) ring.add(loc, entry ?? {}, source);
    }
    return ring;
  }

  private add(location: string, entry: DockerConfigEntry, source: Credential['source']): void {
    const key = keyOf(location);
    if (key === undefined) return;
    const list = this.creds.get(key) ?? [];
    list.push(entryCredential(key, entry, source));
    this.creds.set(key, list);
    if (!this.keys.includes(key)) this.keys.push(key);
    this.keys.sort().reverse();
  }

  /** Every credential for an image, most specific key first; none when no key matches. */
  lookup(image: string): Credential[] {
    const repo = repositoryOf(image);
    const out = this.keys.filter((k) => keyMatches(k, repo)).flatMap((k) => this.creds.get(k)!);
    if (out.length > 0) return out;
    // docker.io's images also take the credentials stored under its index's name.
    return repo.startsWith('docker.io/') ? (this.creds.get(DEFAULT_REGISTRY_HOST) ?? []) : [];
  }
}

/** What CRI PullImage is sent: the user and password alone, as the kubelet sends a secret's credential. */
export function toAuthConfig(c: Credential): AuthConfig {
  return { username: c.username, password: c.password, auth: '', server_address: '', identity_token: '', registry_token: '' };
}
