// /exec, /attach and /portForward: the query read as the kubelet reads it, the runtime asked for a
// streaming URL (CRI Exec/Attach/PortForward), and the caller's upgraded connection (SPDY or
// WebSocket) relayed byte for byte to the runtime's streaming server, as the kubelet's
// upgrade-aware proxy does. The caller's credentials are not passed on to the runtime.
import http, { type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { HttpError } from './container-logs.js';

export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** The kubelet's reading of input/output/error/tty ("1" is true; a tty has no separate stderr). */
export function parseStreamOptions(q: URLSearchParams): StreamOptions {
  const flag = (n: string) => q.get(n) === '1';
  const tty = flag('tty');
  const opts = { stdin: flag('input'), stdout: flag('output'), stderr: flag('error'), tty };
  if (tty) opts.stderr = false;
  if (!opts.stdin && !opts.stdout && !opts.stderr) throw new HttpError(400, 'you must specify at least 1 of stdin, stdout, stderr');
  return opts;
}

/** Ports named in a port-forward query (the WebSocket protocol names them there; SPDY per stream). */
export function parsePorts(q: URLSearchParams): number[] {
  const ports: number[] = [];
  for (const raw of q.getAll('port')) {
    for (const p of raw.split(',')) {
      const n = Number(p);
      if (!/^\d+$/.test(p) || n < 1 || n > 65535) throw new HttpError(400, `unable to parse "${p}" as a port: invalid port`);
      ports.push(n);
    }
  }
  return ports;
}

/** Writes a complete HTTP error response on a connection that was never upgraded, and closes it. */
export function rawError(socket: Duplex, code: number, message: string): void {
  const body = Buffer.from(message);
  const head = `HTTP/1.1 ${code} ${http.STATUS_CODES[code] ?? ''}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
  if (!socket.writable) return void socket.destroy();
  socket.end(Buffer.concat([Buffer.from(head), body]));
}

const DROPPED = new Set(['authorization', 'proxy-authorization', 'host', 'x-remote-user', 'x-remote-group']);

/** Relays an upgrade request to `target` and, once the runtime upgrades, the two connections to each other. */
export function proxyUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: string, onDone: () => void): void {
  const url = new URL(target);
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !DROPPED.has(k)) headers[k] = v;
  headers.host = url.host;
  let finished = false;
  const done = () => {
    if (finished) return;
    finished = true;
    onDone();
  };
  const upstream = http.request({ hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: req.method, headers });
  upstream.on('upgrade', (res, upSocket, upHead) => {
    let response = `HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? ''}\r\n`;
    for (let i = 0; i < res.rawHeaders.length; i += 2) response += `${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}\r\n`;
    socket.write(`${response}\r\n`);
    if (upHead.length) socket.write(upHead);
    if (head.length) upSocket.write(head);
    const close = () => {
      socket.destroy();
      upSocket.destroy();
      done();
    };
    upSocket.on('error', close).on('close', close);
    socket.on('error', close).on('close', close);
    upSocket.pipe(socket);
    socket.pipe(upSocket);
  });
  upstream.on('response', (res) => {
    // The runtime refused to upgrade: its answer goes back as it came.
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      rawError(socket, res.statusCode ?? 500, Buffer.concat(chunks).toString() || 'the runtime refused the stream');
      done();
    });
  });
  upstream.on('error', (err) => {
    rawError(socket, 500, `error dialing the runtime's streaming server: ${err.message}`);
    done();
  });
  socket.on('close', () => {
    upstream.destroy();
    done();
  });
  upstream.end();
}
