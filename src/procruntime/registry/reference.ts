// Image references as the kubelet passes them (`busybox`, `quay.io/a/b:1`, `host:5000/x@sha256:…`),
// normalised the way docker and containerd do, so that the same image is named the same everywhere.
import { InvalidArgumentError } from '../errors.js';

export interface Reference {
  /** The registry as the reference names it: `docker.io`, `127.0.0.1:5000`. */
  domain: string;
  /** The repository inside the registry: `library/busybox`. */
  path: string;
  tag?: string;
  /** `sha256:<hex>` */
  digest?: string;
}

const DOCKER_HUB = 'docker.io';
// Docker's grammar: lowercase components joined by '/', each made of alphanumerics separated by
// one '.', one or two '_', or any number of '-'.
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;
const DOMAIN = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

function invalid(ref: string, why?: string): InvalidArgumentError {
  return new InvalidArgumentError(`parse image name "${ref}": invalid reference format${why ? `: ${why}` : ''}`);
}

/** Parses and normalises a reference; `busybox` -> docker.io/library/busybox:latest. */
export function parseReference(ref: string): Reference {
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw invalid(ref, /^[a-z0-9]+:/.test(digest) && !digest.startsWith('sha256:') ? `unsupported digest algorithm in ${digest}` : undefined);
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.indexOf(':', lastSlash + 1);
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw invalid(ref);
  }
  if (!rest) throw invalid(ref);
  // The first component is a registry when it looks like a host (a dot, a port, localhost, or
  // capitals, which a repository may not have); otherwise the image is on Docker Hub.
  const slash = rest.indexOf('/');
  const first = slash >= 0 ? rest.slice(0, slash) : '';
  let domain: string;
  let path: string;
  if (slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase())) {
    domain = first;
    path = rest.slice(slash + 1);
  } else {
    domain = DOCKER_HUB;
    path = rest;
  }
  if (domain === 'index.docker.io') domain = DOCKER_HUB;
  if (domain === DOCKER_HUB && !path.includes('/')) path = `library/${path}`;
  if (!DOMAIN.test(domain)) throw invalid(ref);
  if (path !== path.toLowerCase()) throw invalid(ref, 'repository name must be lowercase');
  if (!path.split('/').every((c) => PATH_COMPONENT.test(c))) throw invalid(ref);
  if (`${domain}/${path}`.length > 255) throw invalid(ref, 'repository name must not be more than 255 characters');
  if (!tag && !digest) tag = 'latest';
  return { domain, path, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** Parses, or undefined when `ref` is not a valid reference (lookups by ID, by old names). */
export function tryParseReference(ref: string): Reference | undefined {
  try {
    return parseReference(ref);
  } catch {
    return undefined;
  }
}

/** `docker.io/library/busybox` */
export function repositoryName(r: Reference): string {
  return `${r.domain}/${r.path}`;
}

/** The full normalised form: name[:tag][@digest]. */
export function referenceString(r: Reference): string {
  return `${repositoryName(r)}${r.tag ? `:${r.tag}` : ''}${r.digest ? `@${r.digest}` : ''}`;
}

/** The host to connect to: Docker Hub's API is not served at docker.io itself. */
export function registryHost(domain: string): string {
  return domain === DOCKER_HUB ? 'registry-1.docker.io' : domain;
}
