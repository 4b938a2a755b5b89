// HTTPS for a pull: node:https with the system CAs plus the registry's certs.d ones, redirects
// followed (blob storage answers blobs with 307s), and a stall guard, so that a registry that
// stops sending fails the pull with a clear message instead of hanging it forever.
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { Transform, type Readable } from 'node:stream';
import { NODELET_VERSION } from '../../version.js';
import { hostCAs, trustedCAs } from './certs.js';

export interface TransportOptions {
  /** docker/containerd certs.d layout: `<dir>/<host:port>/*.crt`. */
  certsDir?: string;
  /** The registry as the reference names it; its CAs are also trusted for its token realm and blob storage (containerd does the same). */
  registryDomain: string;
  /** A response that sends nothing for this long is aborted. */
  progressTimeoutMs: number;
}

export interface HttpResponse {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  /** The URL that answered, after redirects. */
  url: string;
  body: Readable;
}

/** No bytes for the progress timeout. */
export class StallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StallError';
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const TLS_UNKNOWN_CA = new Set(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT']);

/** Go's spelling of a method in an error ("Get"), which is what users of containerd know. */
const goMethod = (m: string) => m.charAt(0) + m.slice(1).toLowerCase();

export class Transport {
  private readonly agents = new Map<string, https.Agent>();

  constructor(private readonly opts: TransportOptions) {}

  async request(method: string, url: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<HttpResponse> {
    let current = new URL(url);
    let hdrs: Record<string, string> = { 'user-agent': `nodelet/${NODELET_VERSION}`, ...headers };
    for (let hop = 0; ; hop++) {
      const res = await this.once(method, current, hdrs, body);
      const location = res.headers.location;
      if (!REDIRECTS.has(res.status) || !location) return res;
      res.body.resume();
      if (hop >= 10) throw new Error(`failed to do request: ${goMethod(method)} "${current.href}": stopped after 10 redirects`);
      const next = new URL(location, current);
      if (next.protocol !== 'https:') throw new Error(`failed to do request: ${goMethod(method)} "${current.href}": refusing a redirect to ${next.href}: only https is supported`);
      // Credentials are for the registry: blob storage has them in its signed URL and refuses others.
      if (next.origin !== current.origin) hdrs = Object.fromEntries(Object.entries(hdrs).filter(([k]) => k.toLowerCase() !== 'authorization'));
      if (res.status === 303) {
        method = 'GET';
        body = undefined;
      }
      current = next;
    }
  }

  /** Frees the connections kept alive for this pull. */
  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }

  private async agentFor(host: string): Promise<https.Agent> {
    let agent = this.agents.get(host);
    if (!agent) {
      const extra = await hostCAs(this.opts.certsDir, [this.opts.registryDomain, host]);
      agent = new https.Agent({ keepAlive: true, maxSockets: 8, ca: trustedCAs(extra) });
      this.agents.set(host, agent);
    }
    return agent;
  }

  private async once(method: string, url: URL, headers: Record<string, string>, body?: string | Buffer): Promise<HttpResponse> {
    const agent = await this.agentFor(url.host);
    const limit = this.opts.progressTimeoutMs;
    const secs = `${limit / 1000}s`;
    return new Promise<HttpResponse>((resolve, reject) => {
      const req = https.request(url, { method, headers, agent });
      let timer: NodeJS.Timeout | undefined;
      let stream: Transform | undefined;
      const arm = (what: () => string) => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          const err = new StallError(`no progress in ${secs} ${what()}: the registry stopped sending (the pull progress timeout)`);
          if (stream) stream.destroy(err);
          else reject(err);
          req.destroy(err);
        }, limit);
      };
      arm(() => `waiting for a response to ${goMethod(method)} "${url.href}"`);
      req.on('error', (err) => {
        clearTimeout(timer);
        // Once answered, a broken connection is the body's failure (a short read), not the request's.
        if (stream) stream.destroy(new Error(bodyError(err)));
        else reject(new Error(`failed to do request: ${goMethod(method)} "${url.href}": ${this.describe(err, url)}`));
      });
      req.on('response', (res) => {
        let received = 0;
        const waiting = () => `receiving "${url.href}" (${received} bytes so far)`;
        const s = (stream = new Transform({
          transform(chunk: Buffer, _enc, cb) {
            received += chunk.length;
            arm(waiting);
            cb(null, chunk);
          },
        }));
        arm(waiting);
        res.on('error', (err) => s.destroy(new Error(bodyError(err))));
        res.on('aborted', () => s.destroy(new Error('unexpected EOF: the connection was closed mid-response')));
        s.on('close', () => {
          clearTimeout(timer);
          // A body dropped before its end must not keep the connection (nor a half-read response) around.
          if (!res.complete) req.destroy();
        });
        res.pipe(s);
        resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers: res.headers, url: url.href, body: s });
      });
      req.end(body);
    });
  }

  /** A connection failure as Go's net/http words it (what users of containerd recognise), with a hint. */
  private describe(err: NodeJS.ErrnoException, url: URL): string {
    const port = url.port || '443';
    const code = err.code ?? '';
    if (code === 'ECONNREFUSED') return `dial tcp ${url.hostname}:${port}: connect: connection refused`;
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `dial tcp: lookup ${url.hostname}: no such host`;
    if (code === 'ETIMEDOUT') return `dial tcp ${url.hostname}:${port}: i/o timeout`;
    if (code === 'ECONNRESET') return 'read: connection reset by peer';
    const where = this.opts.certsDir ? `a *.crt in ${this.opts.certsDir}/${url.host}/` : 'no registry certs directory is configured';
    if (TLS_UNKNOWN_CA.has(code)) return `tls: failed to verify certificate: x509: certificate signed by unknown authority (${err.message}; trusted: the system CAs and ${where})`;
    if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') return `tls: failed to verify certificate: x509: certificate has expired or is not yet valid (${err.message})`;
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `tls: failed to verify certificate: x509: ${err.message}`;
    return err.message;
  }
}

function bodyError(err: NodeJS.ErrnoException): string {
  if (err.message === 'aborted') return 'unexpected EOF: the connection was closed mid-response';
  if (err.code === 'ECONNRESET') return 'read: connection reset by peer';
  return err.message;
}

/** Reads a (small) body whole; `max` guards against a registry sending a huge "manifest". */
export async function readBody(res: HttpResponse, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of res.body as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > max) {
      res.body.destroy();
      throw new Error(`response from ${res.url} is larger than ${max} bytes`);
    }
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

/** Reads an error body for its message, never failing (the status is the error then). */
export async function readErrorBody(res: HttpResponse): Promise<string> {
  try {
    return (await readBody(res, 64 * 1024)).toString('utf8');
  } catch {
    return '';
  }
}
