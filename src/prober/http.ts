// httpGet probes (and httpGet hooks' requests), judged as the kubelet's prober judges them: a
// status from 200 to 399 succeeds; a redirect is followed while it stays on the same host (at most
// 10), and one to another host ends the probe as a success with a warning; anything else fails.
// TLS certificates are not verified, no proxy is used, connections are not kept.
import http from 'node:http';
import https from 'node:https';
import type { V1Container, V1HTTPGetAction } from '@kubernetes/client-node';
import { resolveContainerPort } from './port.js';
import { dialErrorText, joinHostPort, MAX_OUTPUT_BYTES, PROBE_USER_AGENT, type Attempt } from './types.js';

export interface HttpProbeRequest {
  url: URL;
  /** Header names as given; values in order. */
  headers: Array<[string, string]>;
}

/** The request an httpGet action makes against a container of a pod at podIP (a probe's, or a hook's). */
export function httpGetRequest(action: V1HTTPGetAction, container: V1Container, podIP: string, userAgent = PROBE_USER_AGENT): HttpProbeRequest {
  const scheme = (action.scheme ?? 'HTTP').toLowerCase() || 'http';
  const host = action.host || podIP;
  const port = resolveContainerPort(action.port, container);
  const path = action.path ?? '';
  const url = new URL(`${scheme}://${joinHostPort(host, port)}`);
  if (path) {
    // As Go's url.Parse of the path: a query and a fragment are the path's own.
    const q = path.indexOf('?');
    url.pathname = q < 0 ? path : path.slice(0, q);
    if (q >= 0) url.search = path.slice(q);
  }
  const headers: Array<[string, string]> = (action.httpHeaders ?? []).map((h) => [h.name, h.value]);
  return { url, headers: withDefaultHeaders(headers, userAgent) };
}

function withDefaultHeaders(given: Array<[string, string]>, userAgent: string): Array<[string, string]> {
  const has = (name: string) => given.some(([k]) => k.toLowerCase() === name);
  let headers = [...given];
  if (!has('user-agent')) headers.push(['User-Agent', userAgent]);
  if (!has('accept')) headers.push(['Accept', '*/*']);
  // An Accept header given empty means none at all.
  else if (headers.filter(([k]) => k.toLowerCase() === 'accept').every(([, v]) => v === '')) headers = headers.filter(([k]) => k.toLowerCase() !== 'accept');
  return headers;
}

/** How Go's HTTP client words a URL in its errors. */
function goURL(u: URL): string {
  return u.pathname === '/' && !u.search && !u.href.endsWith('/') ? u.href.replace(/\/$/, '') : u.href;
}

interface Response {
  status: number;
  location?: string;
  body: string;
}

function once(req: HttpProbeRequest, url: URL, deadline: number, signal?: AbortSignal): Promise<Response> {
  const lib = url.protocol === 'https:' ? https : http;
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of req.headers) {
    const key = k.toLowerCase();
    const prev = headers[key];
    headers[key] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const addr = joinHostPort(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || (url.protocol === 'https:' ? 443 : 80)));
  return new Promise((resolve, reject) => {
    const r = lib.request(
      url,
      { method: 'GET', headers, agent: false, rejectUnauthorized: false, signal },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (b: Buffer) => {
          if (size >= MAX_OUTPUT_BYTES) return;
          chunks.push(b.subarray(0, MAX_OUTPUT_BYTES - size));
          size += b.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    const timer = setTimeout(() => r.destroy(Object.assign(new Error('context deadline exceeded (Client.Timeout exceeded while awaiting headers)'), { code: 'NODELET_TIMEOUT' })), Math.max(1, deadline - Date.now()));
    r.on('close', () => clearTimeout(timer));
    r.on('error', (err: NodeJS.ErrnoException) => reject(new Error(err.code === 'NODELET_TIMEOUT' ? err.message : dialErrorText(err, addr))));
    r.end();
  });
}

export async function httpProbe(req: HttpProbeRequest, timeoutMs: number, signal?: AbortSignal): Promise<Attempt> {
  const deadline = Date.now() + timeoutMs;
  let url = req.url;
  for (let redirects = 0; ; redirects++) {
    let res: Response;
    try {
      res = await once(req, url, deadline, signal);
    } catch (err) {
      return { result: 'failure', output: `Get "${goURL(url)}": ${(err as Error).message}` };
    }
    const redirect = [301, 302, 303, 307, 308].includes(res.status) && res.location;
    if (redirect) {
      const next = new URL(res.location!, url);
      // To another host: the redirect itself is the answer (a warning, not a failure).
      if (next.hostname === req.url.hostname) {
        if (redirects + 1 >= 10) return { result: 'failure', output: `Get "${goURL(next)}": stopped after 10 redirects` };
        url = next;
        continue;
      }
    }
    if (res.status >= 200 && res.status < 400) {
      if (res.status >= 300) return { result: 'warning', output: `Probe terminated redirects, Response body: ${res.body}` };
      return { result: 'success', output: res.body };
    }
    return { result: 'failure', output: `HTTP probe failed with statuscode: ${res.status}` };
  }
}
