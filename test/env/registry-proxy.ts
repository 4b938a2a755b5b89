// Networks that misbehave on purpose, in front of a test registry: a TCP proxy that cuts or stalls
// a connection after so many bytes of answer (TLS passes through it untouched), and an HTTPS front
// that answers blob GETs with a 307 to a separate "blob storage" server, as S3-backed registries do.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createConnection, createServer, type Socket } from 'node:net';
import type { Certs } from './registry.js';

export type ProxyMode = { kind: 'pass' } | { kind: 'cut' | 'stall'; afterBytes: number };

export interface CutProxy {
  host: string;
  /** Applies to connections made from now on. */
  mode: ProxyMode;
  /** How many connections were cut or stalled. */
  tripped: number;
  stop(): Promise<void>;
}

/**
 * A TCP proxy to 127.0.0.1:`targetPort`. In `cut` mode a connection is closed once the server has
 * sent `afterBytes` through it; in `stall` mode it is left open but nothing more is passed on.
 */
export async function startCutProxy(targetPort: number): Promise<CutProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    sockets.add(client).add(upstream);
    const mode = proxy.mode;
    let sent = 0;
    let tripped = false;
    client.on('data', (d: Buffer) => upstream.write(d));
    upstream.on('data', (d: Buffer) => {
      if (tripped) return;
      if (mode.kind === 'pass' || sent + d.length <= mode.afterBytes) {
        sent += d.length;
        client.write(d);
        return;
      }
      tripped = true;
      proxy.tripped++;
      client.write(d.subarray(0, mode.afterBytes - sent));
      if (mode.kind === 'cut') {
        client.destroy();
        upstream.destroy();
      }
    });
    const close = () => {
      if (mode.kind === 'stall' && tripped) return; // held open on purpose
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => {
      upstream.destroy();
      sockets.delete(client);
    });
    upstream.on('close', () => {
      close();
      sockets.delete(upstream);
    });
    client.on('error', close);
    upstream.on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: CutProxy = {
    host: `127.0.0.1:${(server.address() as { port: number }).port}`,
    mode: { kind: 'pass' },
    tripped: 0,
    stop: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return proxy;
}

export interface RedirectFront {
  host: string;
  /** Blob GETs redirected, and how many of those reached storage with an Authorization header. */
  redirected: number;
  storageWithAuth: number;
  stop(): Promise<void>;
}

/**
 * An HTTPS front to a registry: everything is passed through, except that a blob GET the registry
 * would answer 200 (asked with a HEAD, credentials and all) is answered 307 to a storage server on
 * another port, which serves the registry's blob file for a signed URL and, like S3, refuses a
 * request that also carries an Authorization header.
 */
export async function startRedirectFront(registryHost: string, storageBlob: (digest: string) => string, certs: Certs): Promise<RedirectFront> {
  const tls = { key: readFileSync(certs.keyFile), cert: readFileSync(certs.certFile) };
  const ca = readFileSync(certs.caFile);
  const [rh, rp] = registryHost.split(':') as [string, string];
  const front: RedirectFront = { host: '', redirected: 0, storageWithAuth: 0, stop: async () => undefined };
  const storage = https.createServer(tls, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    if (req.headers.authorization) {
      front.storageWithAuth++;
      res.writeHead(400, { 'content-type': 'application/xml' }).end('<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed</Message></Error>');
      return;
    }
    const digest = url.pathname.replace('/blobs/', '');
    if (url.searchParams.get('sig') !== 'ok') return void res.writeHead(403).end('bad signature');
    try {
      const data = readFileSync(storageBlob(digest));
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(data.length) }).end(data);
    } catch {
      res.writeHead(404).end('no such blob');
    }
  });
  const forward = (req: IncomingMessage, res: ServerResponse, method: string, onAnswer: (up: IncomingMessage) => boolean) => {
    const headers = { ...req.headers, host: registryHost };
    const up = https.request({ host: rh, port: Number(rp), path: req.url, method, headers, ca, agent: false }, (u) => {
      if (onAnswer(u)) return;
      res.writeHead(u.statusCode ?? 502, u.headers);
      u.pipe(res);
    });
    up.on('error', () => res.writeHead(502).end());
    if (req.method === 'GET' || req.method === 'HEAD') up.end();
    else req.pipe(up);
  };
  const server = https.createServer(tls, (req, res) => {
    const blob = req.method === 'GET' ? /^\/v2\/.+\/blobs\/(sha256:[0-9a-f]{64})$/.exec(req.url ?? '') : null;
    if (!blob) return forward(req, res, req.method ?? 'GET', () => false);
    forward(req, res, 'HEAD', (u) => {
      u.resume();
      // Anything but a 200 is the registry's to answer, with its body: ask again with the GET.
      if (u.statusCode !== 200) {
        forward(req, res, 'GET', () => false);
        return true;
      }
      front.redirected++;
      res.writeHead(307, { location: `https://127.0.0.1:${storagePort}/blobs/${blob[1]}?sig=ok` }).end();
      return true;
    });
  });
  await new Promise<void>((resolve) => storage.listen(0, '127.0.0.1', resolve));
  const storagePort = (storage.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  front.host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  front.stop = async () => {
    for (const s of [server, storage]) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
  };
  return front;
}
