// Service-account tokens for projected volumes, through the TokenRequest API, bound to the pod.
// As the kubelet's token manager: a token is kept until 80% of its lifetime (or 24 h) has passed,
// then requested again; a failed refresh keeps a token that is still valid.
import type { Clock } from '../util/clock.js';

export interface TokenRequestSpec {
  audiences?: string[];
  expirationSeconds: number;
  boundObjectRef: { apiVersion: 'v1'; kind: 'Pod'; name: string; uid: string };
}

export interface TokenApi {
  /** POST serviceaccounts/<name>/token; the token and when it expires. */
  requestToken(namespace: string, serviceAccount: string, spec: TokenRequestSpec): Promise<{ token: string; expirationTimestamp: string }>;
}

interface Cached {
  token: string;
  issuedAt: number;
  expiresAt: number;
}

const MAX_AGE_MS = 24 * 3600_000;

export class TokenManager {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly api: TokenApi,
    private readonly clock: Clock,
  ) {}

  async getToken(namespace: string, serviceAccount: string, spec: TokenRequestSpec): Promise<string> {
    const k = JSON.stringify([namespace, serviceAccount, spec.audiences ?? [], spec.expirationSeconds, spec.boundObjectRef.uid]);
    const have = this.cache.get(k);
    const now = this.clock.now();
    if (have && !this.needsRefresh(have, now)) return have.token;
    try {
      const res = await this.api.requestToken(namespace, serviceAccount, spec);
      const expiresAt = Date.parse(res.expirationTimestamp);
      this.cache.set(k, { token: res.token, issuedAt: now, expiresAt: Number.isFinite(expiresAt) ? expiresAt : now + spec.expirationSeconds * 1000 });
      return res.token;
    } catch (err) {
      if (!have) throw new Error(`failed to fetch token: ${(err as Error).message}`, { cause: err });
      if (have.expiresAt <= now) throw new Error(`token ${namespace}/${serviceAccount} expired and refresh failed: ${(err as Error).message}`, { cause: err });
      return have.token;
    }
  }

  get size(): number {
    return this.cache.size;
  }

  /** Tokens of pods that are gone are dropped. */
  forgetPod(uid: string): void {
    for (const k of this.cache.keys()) if ((JSON.parse(k) as unknown[])[4] === uid) this.cache.delete(k);
  }

  private needsRefresh(t: Cached, now: number): boolean {
    const ttl = t.expiresAt - t.issuedAt;
    return now > t.expiresAt - ttl * 0.2 || now - t.issuedAt > MAX_AGE_MS;
  }
}
