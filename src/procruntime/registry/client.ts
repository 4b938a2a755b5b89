// The distribution API as a pull uses it: GET a manifest (by tag or digest) and GET a blob, each
// authorized as the registry's challenge asks, and each failure carrying the registry's own words.
import { createHash } from 'node:crypto';
import { parseWwwAuthenticate, type Authorizer } from './auth.js';
import { UnexpectedStatusError, serverMessage } from './errors.js';
import { MANIFEST_ACCEPT } from './manifest.js';
import { registryHost, type Reference } from './reference.js';
import { readBody, readErrorBody, type HttpResponse, type Transport } from './transport.js';

/** Manifests are small; a registry sending more is broken or hostile (containerd's limit too). */
const MAX_MANIFEST = 4 * 1024 * 1024;

export interface FetchedManifest {
  bytes: Buffer;
  contentType: string | undefined;
  /** sha256 of the bytes as received: what the reference's digest must be. */
  digest: string;
}

/** A 401 that credentials did not cure (containerd's wording, which users search for). */
export class PullAccessDeniedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PullAccessDeniedError';
  }
}

export class RegistryClient {
  private readonly host: string;
  private readonly base: string;
  private readonly scope: string;

  constructor(
    ref: Reference,
    private readonly transport: Transport,
    private readonly auth: Authorizer,
  ) {
    this.host = registryHost(ref.domain);
    this.base = `https://${this.host}/v2/${ref.path}`;
    this.scope = `repository:${ref.path}:pull`;
  }

  async manifest(tagOrDigest: string): Promise<FetchedManifest> {
    const res = await this.get(`${this.base}/manifests/${tagOrDigest}`, MANIFEST_ACCEPT);
    const bytes = await readBody(res, MAX_MANIFEST);
    return { bytes, contentType: res.headers['content-type'], digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}` };
  }

  blob(digest: string): Promise<HttpResponse> {
    return this.get(`${this.base}/blobs/${digest}`);
  }

  /** A GET answered 2xx; on a 401 it asks the authorizer and tries again (twice at most). */
  private async get(url: string, accept?: string): Promise<HttpResponse> {
    let sent = this.auth.header(this.host, this.scope);
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = {};
      if (accept) headers.accept = accept;
      if (sent) headers.authorization = sent;
      const res = await this.transport.request('GET', url, headers);
      if (res.status >= 200 && res.status < 300) return res;
      const text = await readErrorBody(res);
      const challenge = res.headers['www-authenticate'];
      if (res.status === 401 && attempt < 2 && challenge && (await this.auth.challenged(this.host, this.scope, challenge, sent))) {
        sent = this.auth.header(this.host, this.scope);
        continue;
      }
      const msg = serverMessage(text);
      const status = new UnexpectedStatusError('GET', res.url, res.status, res.statusText, msg);
      // A token refused for want of scope: on Docker Hub, what a private or absent repository answers.
      const bearerError = res.status === 401 && sent?.startsWith('Bearer ') ? parseWwwAuthenticate(challenge ?? '').find((c) => c.scheme === 'bearer')?.params.error : undefined;
      if (bearerError) {
        throw new PullAccessDeniedError(
          `pull access denied, repository does not exist or may require authorization: server message: ${bearerError}: authorization failed (${status.message})`,
        );
      }
      throw status;
    }
  }
}
