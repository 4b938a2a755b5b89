// Who may call the node API, as the kubelet decides it: a client certificate verified against the
// configured CA, else a bearer token the API server vouches for (TokenReview), else anonymous only
// when the config allows it. Every request is then authorized by the API server (a
// SubjectAccessReview on nodes/<subresource> of this node), or allowed outright under AlwaysAllow.
// Both answers are cached for the configured TTLs.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Clock } from '../util/clock.js';

export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export interface NodeAuthConfig {
  anonymousEnabled: boolean;
  webhookEnabled: boolean;
  webhookCacheTTLMs: number;
  /** '' when client certificates are not accepted. */
  clientCAFile: string;
  mode: 'Webhook' | 'AlwaysAllow';
  cacheAuthorizedTTLMs: number;
  cacheUnauthorizedTTLMs: number;
}

/** The API server's two review calls. */
export interface ReviewApi {
  tokenReview(token: string): Promise<{ authenticated: boolean; user?: UserInfo; error?: string }>;
  subjectAccessReview(user: UserInfo, attrs: { verb: string; resource: string; subresource: string; name: string }): Promise<{ allowed: boolean; reason?: string }>;
}

export interface RequestAttributes {
  verb: string;
  resource: 'nodes';
  subresource: string;
  name: string;
  path: string;
}

const VERBS: Record<string, string> = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

function isSubpath(path: string, prefix: string): boolean {
  const p = prefix.replace(/\/$/, '');
  return path === p || path.startsWith(`${p}/`);
}

/**
 * The kubelet's mapping of a request to the attributes it is authorized by: one per subresource
 * tried in order (fine-grained pods/healthz/configz first, then the coarse one; any allows).
 */
export function requestAttributes(method: string, path: string, nodeName: string): RequestAttributes[] {
  const verb = VERBS[method] ?? '';
  const subs: string[] = [];
  if (isSubpath(path, '/pods') || isSubpath(path, '/runningpods')) subs.push('pods');
  else if (isSubpath(path, '/healthz')) subs.push('healthz');
  else if (isSubpath(path, '/configz')) subs.push('configz');
  if (isSubpath(path, '/stats')) subs.push('stats');
  else if (isSubpath(path, '/metrics')) subs.push('metrics');
  else if (isSubpath(path, '/logs')) subs.push('log');
  else if (isSubpath(path, '/checkpoint')) subs.push('checkpoint');
  else if (isSubpath(path, '/statusz')) subs.push('statusz');
  else if (isSubpath(path, '/flagz')) subs.push('configz');
  else subs.push('proxy');
  return subs.map((subresource) => ({ verb, resource: 'nodes', subresource, name: nodeName, path }));
}

export type AuthDecision = { ok: true; user: UserInfo } | { ok: false; code: 401 | 403 | 500; message: string };

class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  /** Loads under way: a burst of calls with one new key is one review. */
  private readonly loading = new Map<string, Promise<V>>();
  constructor(private readonly clock: Clock) {}

  /** The cached value, else what `load` gives (one load at a time per key), kept for the TTL it says. */
  getOrLoad(key: string, load: () => Promise<{ value: V; ttlMs: number }>): Promise<V> {
    const hit = this.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    let p = this.loading.get(key);
    if (!p) {
      p = load()
        .then(({ value, ttlMs }) => {
          this.set(key, value, ttlMs);
          return value;
        })
        .finally(() => this.loading.delete(key));
      this.loading.set(key, p);
    }
    return p;
  }

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= this.clock.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    // Bounded: a flood of distinct tokens must not grow the agent without end.
    if (this.entries.size >= 10_000) this.entries.clear();
    this.entries.set(key, { value, until: this.clock.now() + ttlMs });
  }
}

/** Groups every authenticated user has, as the API server's authenticators add it. */
const AUTHENTICATED = 'system:authenticated';

export class NodeAuth {
  private readonly tokens: TtlCache<UserInfo | null>;
  private readonly decisions: TtlCache<boolean>;

  constructor(
    private readonly cfg: NodeAuthConfig,
    private readonly nodeName: string,
    private readonly api: ReviewApi | undefined,
    clock: Clock,
  ) {
    this.tokens = new TtlCache(clock);
    this.decisions = new TtlCache(clock);
  }

  /** Authenticates and authorizes one request. */
  async check(req: IncomingMessage): Promise<AuthDecision> {
    let user: UserInfo | undefined;
    try {
      user = await this.authenticate(req);
    } catch {
      return { ok: false, code: 401, message: 'Unauthorized' };
    }
    if (!user) return { ok: false, code: 401, message: 'Unauthorized' };
    const path = new URL(req.url ?? '/', 'https://node').pathname;
    const attrs = requestAttributes(req.method ?? 'GET', path, this.nodeName);
    for (const a of attrs) {
      let allowed: boolean;
      try {
        allowed = await this.authorize(user, a);
      } catch {
        return { ok: false, code: 500, message: `Authorization error (user=${user.name}, verb=${a.verb}, resource=${a.resource}, subresource=${a.subresource})` };
      }
      if (allowed) return { ok: true, user };
    }
    const subs = attrs.map((a) => a.subresource).join(' ');
    return { ok: false, code: 403, message: `Forbidden (user=${user.name}, verb=${attrs[0].verb}, resource=${attrs[0].resource}, subresource(s)=[${subs}])\n` };
  }

  private async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const fromCert = this.certificateUser(req);
    if (fromCert) return fromCert;
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (m && this.cfg.webhookEnabled && this.api) {
      const key = createHash('sha256').update(m[1]).digest('hex');
      const api = this.api;
      const user = await this.tokens.getOrLoad(key, async () => {
        const r = await api.tokenReview(m[1]!);
        const value = r.authenticated && r.user ? r.user : null;
        // Refusals are kept briefly, so that a wrong token cannot make every call a review.
        return { value, ttlMs: value ? this.cfg.webhookCacheTTLMs : Math.min(this.cfg.webhookCacheTTLMs, 10_000) };
      });
      return user ?? undefined;
    }
    if (!header && this.cfg.anonymousEnabled) return { name: 'system:anonymous', groups: ['system:unauthenticated'] };
    return undefined;
  }

  /** The user a verified client certificate names: CN the name, O the groups. */
  private certificateUser(req: IncomingMessage): UserInfo | undefined {
    if (!this.cfg.clientCAFile) return undefined;
    const sock = req.socket as TLSSocket;
    if (!sock.authorized || typeof sock.getPeerCertificate !== 'function') return undefined;
    const cert = sock.getPeerCertificate();
    if (!cert || !cert.subject) return undefined;
    // A certificate restricted to other uses than client authentication identifies no one here.
    const eku = (cert as { ext_key_usage?: string[] }).ext_key_usage;
    if (eku && eku.length && !eku.includes('1.3.6.1.5.5.7.3.2') && !eku.includes('2.5.29.37.0')) return undefined;
    const cn = cert.subject.CN;
    const name = Array.isArray(cn) ? cn[0] : cn;
    if (!name) return undefined;
    const o = cert.subject.O;
    const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
    return { name, groups: [...groups, AUTHENTICATED] };
  }

  private async authorize(user: UserInfo, a: RequestAttributes): Promise<boolean> {
    if (this.cfg.mode === 'AlwaysAllow') return true;
    if (!this.api) return false;
    const key = JSON.stringify([user.name, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, a.verb, a.subresource]);
    const api = this.api;
    return this.decisions.getOrLoad(key, async () => {
      const { allowed } = await api.subjectAccessReview(user, a);
      return { value: allowed, ttlMs: allowed ? this.cfg.cacheAuthorizedTTLMs : this.cfg.cacheUnauthorizedTTLMs };
    });
  }
}
