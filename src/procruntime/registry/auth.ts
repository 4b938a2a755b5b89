// Registry authentication as the distribution spec has it: anonymous first; on a 401, the
// `WWW-Authenticate` challenge says how: Basic (the pull's credentials sent as they are) or Bearer
// (a token fetched from the challenge's realm for the repository's scope, then cached until it
// expires, so that every blob of a pull, and the next pulls, do not each fetch one).
import { createHash } from 'node:crypto';
import type { AuthConfig } from '../../cri/types.js';
import { serverMessage, UnexpectedStatusError, withContext } from './errors.js';
import { readBody, readErrorBody, type Transport } from './transport.js';

export interface Challenge {
  /** lower case: `basic`, `bearer` */
  scheme: string;
  params: Record<string, string>;
}

const TOKEN = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;

/**
 * Parses a WWW-Authenticate value (RFC 7235): one or more challenges, each a scheme and
 * comma-separated `key=value` or `key="quoted, value"` parameters. Node joins repeated headers with
 * ", ", which this reads as further challenges.
 */
export function parseWwwAuthenticate(header: string): Challenge[] {
  const out: Challenge[] = [];
  let i = 0;
  const skip = () => {
    while (i < header.length && /[\s,]/.test(header[i]!)) i++;
  };
  const token = () => {
    const start = i;
    while (i < header.length && TOKEN.test(header[i]!)) i++;
    return header.slice(start, i);
  };
  const spaces = () => {
    while (i < header.length && /\s/.test(header[i]!)) i++;
  };
  for (;;) {
    skip();
    const scheme = token();
    if (!scheme) break;
    const ch: Challenge = { scheme: scheme.toLowerCase(), params: {} };
    out.push(ch);
    for (;;) {
      const save = i;
      skip();
      const name = token();
      spaces();
      if (!name || header[i] !== '=') {
        // Not a parameter: the start of the next challenge (or the end).
        i = save;
        break;
      }
      i++;
      if (header[i] === '=') {
        // A token68 (`Negotiate abc==`), not a parameter: no scheme of a registry's has one.
        while (header[i] === '=') i++;
        continue;
      }
      spaces();
      let value = '';
      if (header[i] === '"') {
        i++;
        while (i < header.length && header[i] !== '"') {
          if (header[i] === '\\' && i + 1 < header.length) i++;
          value += header[i++];
        }
        i++;
      } else {
        value = token();
      }
      ch.params[name.toLowerCase()] = value;
    }
    if (i >= header.length) break;
    // Something that is neither a parameter nor a scheme (a token68, stray text): skip a character.
    if (!TOKEN.test(header[i]!) && !/[\s,]/.test(header[i]!)) i++;
  }
  return out;
}

export interface Credentials {
  username?: string;
  password?: string;
  identityToken?: string;
  registryToken?: string;
}

/** CRI's AuthConfig: username/password, or `auth` (base64 of user:pass), or tokens. */
export function credentialsFrom(auth?: AuthConfig | null): Credentials {
  if (!auth) return {};
  const c: Credentials = {};
  if (auth.username) {
    c.username = auth.username;
    c.password = auth.password ?? '';
  } else if (auth.auth) {
    const decoded = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) {
      c.username = decoded.slice(0, colon);
      c.password = decoded.slice(colon + 1);
    }
  }
  if (auth.identity_token) c.identityToken = auth.identity_token;
  if (auth.registry_token) c.registryToken = auth.registry_token;
  return c;
}

const basic = (c: Credentials) => `Basic ${Buffer.from(`${c.username}:${c.password ?? ''}`).toString('base64')}`;

/** What outlives one pull: each host's challenge and the tokens fetched, by scope and credentials. */
export class TokenCache {
  readonly challenges = new Map<string, Challenge>();
  private readonly tokens = new Map<string, { token: string; expires: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  get(key: string): string | undefined {
    const t = this.tokens.get(key);
    if (t && t.expires > this.now()) return t.token;
    this.tokens.delete(key);
    return undefined;
  }

  set(key: string, token: string, lifetimeSec: number): void {
    // Renewed a little early, so that a token does not expire between being read and used.
    const margin = Math.min(10, lifetimeSec / 10);
    this.tokens.set(key, { token, expires: this.now() + (lifetimeSec - margin) * 1000 });
  }

  drop(key: string): void {
    this.tokens.delete(key);
  }
}

interface TokenAnswer {
  token?: unknown;
  access_token?: unknown;
  expires_in?: unknown;
}

/** One pull's authorization: the Authorization header for each request, and what to do on a 401. */
export class Authorizer {
  /** Tokens this pull fetched itself: when one of those is refused, asking again will not help. */
  private readonly fresh = new Set<string>();
  private readonly credKey: string;

  constructor(
    private readonly creds: Credentials,
    private readonly cache: TokenCache,
    private readonly transport: Transport,
  ) {
    this.credKey = createHash('sha256').update(JSON.stringify(creds)).digest('hex').slice(0, 16);
  }

  /** The header to send to `host` for `scope`, from what an earlier 401 taught (none at first). */
  header(host: string, scope: string): string | undefined {
    const ch = this.cache.challenges.get(host);
    if (!ch) return undefined;
    if (ch.scheme === 'basic') return this.creds.username !== undefined ? basic(this.creds) : undefined;
    if (this.creds.registryToken) return `Bearer ${this.creds.registryToken}`;
    const t = this.cache.get(this.tokenKey(ch, scope));
    return t ? `Bearer ${t}` : undefined;
  }

  /**
   * After a 401 with these challenges: prepares what to send instead, and says whether a retry
   * can succeed (false when the same credentials were already refused).
   */
  async challenged(host: string, scope: string, header: string, sent: string | undefined): Promise<boolean> {
    const chs = parseWwwAuthenticate(header);
    const ch = chs.find((c) => c.scheme === 'bearer') ?? chs.find((c) => c.scheme === 'basic');
    if (!ch) return false;
    this.cache.challenges.set(host, ch);
    if (ch.scheme === 'basic') return this.creds.username !== undefined && sent !== basic(this.creds);
    if (this.creds.registryToken) return sent !== `Bearer ${this.creds.registryToken}`;
    const key = this.tokenKey(ch, scope);
    if (this.fresh.has(key)) return false;
    // A cached token the registry no longer takes (revoked, expired early): fetch a new one.
    this.cache.drop(key);
    await this.fetchToken(ch, scope, key);
    return true;
  }

  private tokenKey(ch: Challenge, scope: string): string {
    return [ch.params.realm ?? '', ch.params.service ?? '', scope, this.credKey].join('|');
  }

  private async fetchToken(ch: Challenge, scope: string, key: string): Promise<void> {
    const realm = ch.params.realm;
    if (!realm) throw new Error('failed to authorize: the registry asked for a bearer token without naming a realm');
    let url: URL;
    try {
      url = new URL(realm);
    } catch {
      throw new Error(`failed to authorize: invalid token realm ${JSON.stringify(realm)}`);
    }
    const service = ch.params.service;
    let method = 'GET';
    let body: string | undefined;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.creds.identityToken) {
      // An identity token is an OAuth2 refresh token, exchanged by a form POST.
      method = 'POST';
      const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: this.creds.identityToken, client_id: 'nodelet', scope });
      if (service) form.set('service', service);
      body = form.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else {
      if (service) url.searchParams.set('service', service);
      url.searchParams.set('scope', scope);
      if (this.creds.username !== undefined) headers.authorization = basic(this.creds);
    }
    const what = this.creds.username !== undefined || this.creds.identityToken ? 'failed to fetch oauth token' : 'failed to fetch anonymous token';
    try {
      const res = await this.transport.request(method, url.href, headers, body);
      if (res.status !== 200) {
        const text = await readErrorBody(res);
        throw new UnexpectedStatusError(method, url.href, res.status, res.statusText, serverMessage(text));
      }
      const answer = JSON.parse((await readBody(res, 1024 * 1024)).toString('utf8')) as TokenAnswer;
      const token = typeof answer.token === 'string' && answer.token ? answer.token : typeof answer.access_token === 'string' ? answer.access_token : '';
      if (!token) throw new Error(`the token server at ${url.origin}${url.pathname} answered no token`);
      // The spec's default lifetime is 60 s when the answer gives none.
      const lifetime = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : 60;
      this.cache.set(key, token, lifetime);
      this.fresh.add(key);
    } catch (err) {
      throw withContext(err, `failed to authorize: ${what}`);
    }
  }
}
