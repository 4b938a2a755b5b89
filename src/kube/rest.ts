// A small Kubernetes REST client: the kubeconfig (or in-cluster service account) for where and
// who, JSON over one keep-alive HTTPS agent, and watches as line-delimited JSON. The agent makes
// a dozen kinds of call; client-node's generated code for every API group cost ~70 MB of memory
// and a type-driven (de)serialisation of every object, so the agent does without it.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** An API call that failed: the HTTP status (0 without a response) and the server's Status body. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly body?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ApiError';
  }
}

/** Where the API server is and how to authenticate to it. */
export interface KubeConnection {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  insecureSkipTLSVerify?: boolean;
  /** The bearer token, read again when it comes from a file (service account tokens rotate). */
  token?: () => string | undefined;
}

export class KubeconfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeconfigError';
  }
}

/** An entry of a kubeconfig's contexts, clusters or users list. */
interface NamedEntry {
  name: string;
  [key: string]: unknown;
}

function fileToken(path: string): () => string | undefined {
  let cached: { at: number; token: string } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > 60_000) cached = { at: Date.now(), token: readFileSync(path, 'utf8').trim() };
    return cached.token;
  };
}

/** Reads a kubeconfig file: its current context's cluster and user. */
export function loadKubeconfig(path: string): KubeConnection {
  let doc: Record<string, unknown>;
  try {
    doc = parseYaml(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new KubeconfigError(`kubeconfig ${path}: ${(err as Error).message}`);
  }
  const base = dirname(path);
  const rel = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const find = (list: unknown, name: string, what: string, field: string) => {
    const e = (Array.isArray(list) ? (list as NamedEntry[]) : []).find((x) => x?.name === name);
    if (!e || typeof e[field] !== 'object') throw new KubeconfigError(`kubeconfig ${path}: no ${what} named ${JSON.stringify(name)}`);
    return e[field] as Record<string, unknown>;
  };
  const ctxName = String(doc['current-context'] ?? '');
  if (!ctxName) throw new KubeconfigError(`kubeconfig ${path}: no current-context`);
  const ctx = find(doc.contexts, ctxName, 'context', 'context');
  const cluster = find(doc.clusters, String(ctx.cluster ?? ''), 'cluster', 'cluster');
  const user = ctx.user ? find(doc.users, String(ctx.user), 'user', 'user') : {};
  if (user.exec || user['auth-provider']) {
    throw new KubeconfigError(`kubeconfig ${path}: user ${JSON.stringify(ctx.user)} uses exec or auth-provider credentials, which nodelet does not support (use a client certificate or a token)`);
  }
  const data = (inline: unknown, file: unknown): Buffer | undefined =>
    typeof inline === 'string' ? Buffer.from(inline, 'base64') : typeof file === 'string' ? readFileSync(rel(file)) : undefined;
  const server = String(cluster.server ?? '');
  if (!server) throw new KubeconfigError(`kubeconfig ${path}: cluster ${JSON.stringify(ctx.cluster)} has no server`);
  const token = typeof user.token === 'string' ? user.token : undefined;
  return {
    server,
    ca: data(cluster['certificate-authority-data'], cluster['certificate-authority']),
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    cert: data(user['client-certificate-data'], user['client-certificate']),
    key: data(user['client-key-data'], user['client-key']),
    token: token !== undefined ? () => token : typeof user.tokenFile === 'string' ? fileToken(rel(user.tokenFile)) : undefined,
  };
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The pod's service account, as client-go's rest.InClusterConfig. */
export function inClusterConnection(env = process.env, dir = SA_DIR): KubeConnection {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) throw new KubeconfigError('not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set');
  return { server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, ca: readFileSync(join(dir, 'ca.crt')), token: fileToken(join(dir, 'token')) };
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** Silence after which this request fails (default REQUEST_IDLE_TIMEOUT_MS). */
  timeoutMs?: number;
}

/**
 * A request whose connection has been silent this long fails (and its caller retries on a new
 * connection): a connection a middlebox has dropped without a reset would otherwise hold a status
 * update or a lease renewal forever. Idle time, not total: a long list streaming in is not cut.
 */
export const REQUEST_IDLE_TIMEOUT_MS = 30_000;

/** The message of a failed call: the server's Status message where there is one. */
function failure(code: number, text: string, method: string, path: string): ApiError {
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  const msg = (body as { message?: string })?.message ?? (text.trim().split('\n')[0] || `HTTP ${code}`);
  return new ApiError(code, `${method} ${path}: ${code} ${msg}`, body);
}

/** The whole body of a response, as text. */
function readText(res: http.IncomingMessage, onText: (text: string) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => onText(Buffer.concat(chunks).toString('utf8')));
}

/** The connections of one set of credentials, and what is open on them. */
interface Generation {
  agent: http.Agent;
  /** Requests not finished yet (watches included). */
  inFlight: number;
  /** Replaced by newer credentials: closed once its last request is done. */
  retired: boolean;
  /** Watches opened on it: ended when it is retired, so that their owners open them again. */
  watches: Set<() => void>;
}

/** Told of every request once: its method and HTTP status ('<error>' when none came). */
export type RequestObserver = (method: string, code: string) => void;

export class RestClient {
  private gen: Generation;
  /** Counts requests (client-go's rest_client_requests_total); set once by the agent. */
  observer?: RequestObserver;
  private readonly base: URL;
  private connection: KubeConnection;

  constructor(conn: KubeConnection) {
    this.connection = conn;
    this.base = new URL(conn.server);
    this.gen = this.newGeneration();
  }

  /** Where and who, as now (a client certificate may have been replaced since the start). */
  get conn(): KubeConnection {
    return this.connection;
  }

  private newGeneration(): Generation {
    const c = this.connection;
    const opts = { keepAlive: true, ca: c.ca, cert: c.cert, key: c.key, rejectUnauthorized: !c.insecureSkipTLSVerify };
    const agent = this.base.protocol === 'https:' ? new https.Agent(opts) : new http.Agent({ keepAlive: true });
    return { agent, inFlight: 0, retired: false, watches: new Set() };
  }

  /**
   * Calls from now on authenticate with this client certificate: new connections (a TLS agent of
   * their own). Watches open on the old ones end now, and their owners open them again on the new
   * ones, as they do after any watch that ends; other requests finish where they are, and the old
   * connections close after the last of them.
   */
  setClientCertificate(cert: Buffer, key: Buffer): void {
    this.connection = { ...this.connection, cert, key };
    const old = this.gen;
    this.gen = this.newGeneration();
    old.retired = true;
    for (const end of [...old.watches]) end();
    if (old.inFlight === 0) old.agent.destroy();
  }

  private finished(gen: Generation): void {
    gen.inFlight--;
    if (gen.retired && gen.inFlight === 0) gen.agent.destroy();
  }

  private url(path: string, query?: RequestOptions['query']): URL {
    const u = new URL(this.base.pathname.replace(/\/$/, '') + path, this.base);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') u.searchParams.set(k, String(v));
    return u;
  }

  private open(method: string, path: string, opts: RequestOptions, onResponse: (res: http.IncomingMessage) => void, onError: (err: Error) => void, gen = this.gen): http.ClientRequest {
    const u = this.url(path, opts.query);
    const body = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (body) {
      headers['Content-Type'] = opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(body.length);
    }
    const token = this.connection.token?.();
    if (token) headers.Authorization = `Bearer ${token}`;
    const lib = u.protocol === 'https:' ? https : http;
    const req = lib.request(u, { method, agent: gen.agent, headers }, onResponse);
    // Watches are watched for silence by their owners (the reflector's stall timer).
    const idleMs = opts.timeoutMs ?? REQUEST_IDLE_TIMEOUT_MS;
    if (!opts.query?.watch) req.setTimeout(idleMs, () => req.destroy(new Error(`no answer for ${idleMs / 1000} s`)));
    gen.inFlight++;
    // Counted when the answer comes (a watch: when it opens), or when it ends without one.
    let counted = false;
    const count = (code: string) => {
      if (!counted) this.observer?.(method, code);
      counted = true;
    };
    req.once('response', (res) => count(String(res.statusCode ?? '<error>')));
    req.once('close', () => {
      this.finished(gen);
      count('<error>');
    });
    req.once('error', () => count('<error>'));
    req.on('error', onError);
    req.end(body);
    return req;
  }

  /** One call; the parsed JSON body, or an ApiError. */
  request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.open(
        method,
        path,
        opts,
        (res) => {
          res.on('error', reject);
          readText(res, (text) => {
            const code = res.statusCode ?? 0;
            if (code < 200 || code >= 300) return reject(failure(code, text, method, path));
            try {
              resolve((text ? JSON.parse(text) : {}) as T);
            } catch (err) {
              reject(new ApiError(code, `${method} ${path}: the response is not JSON: ${(err as Error).message}`));
            }
          });
        },
        (err) => reject(new ApiError(0, `${method} ${path}: ${err.message}`, undefined, { cause: err })),
      );
    });
  }

  /**
   * A watch: each event to `onEvent` as it arrives; `done` settles when the stream ends (resolved
   * when the server closes it or `abort` was called, rejected on a failure).
   */
  watch(path: string, query: RequestOptions['query'], onEvent: (type: string, obj: unknown) => void): { done: Promise<void>; abort(): void } {
    let req: http.ClientRequest | undefined;
    let aborted = false;
    const gen = this.gen;
    const abort = () => {
      aborted = true;
      gen.watches.delete(abort);
      req?.destroy();
    };
    gen.watches.add(abort);
    const done = new Promise<void>((resolve, reject) => {
      req = this.open(
        'GET',
        path,
        { query: { ...query, watch: true } },
        (res) => {
          const code = res.statusCode ?? 0;
          if (code !== 200) return readText(res, (text) => reject(failure(code, text, 'GET', path)));
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buf += chunk;
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (!line) continue;
              let ev: { type?: string; object?: unknown };
              try {
                ev = JSON.parse(line) as { type?: string; object?: unknown };
              } catch {
                continue; // a torn line: the reflector's resume covers what it held
              }
              onEvent(String(ev.type ?? ''), ev.object);
            }
          });
          res.on('end', () => resolve());
          res.on('close', () => resolve());
          res.on('error', (err) => (aborted ? resolve() : reject(err)));
        },
        (err) => (aborted ? resolve() : reject(new ApiError(0, `watch ${path}: ${err.message}`, undefined, { cause: err }))),
        gen,
      );
    });
    void done.then(
      () => gen.watches.delete(abort),
      () => gen.watches.delete(abort),
    );
    return { done, abort };
  }

  close(): void {
    this.gen.agent.destroy();
  }
}
