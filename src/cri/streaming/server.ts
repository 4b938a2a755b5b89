// A CRI streaming server (the process runtime's; containerd has its own): CRI Exec, Attach and
// PortForward each register a request and answer a one-time URL on this server, valid for a
// minute, as the kubelet's streaming library does; the node agent relays the caller's SPDY (or,
// for exec and attach, WebSocket) upgrade there, and the request is served on that connection.
import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type Server } from 'node:http';
import { Socket, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { PORTFORWARD_PROTOCOLS, servePortForward, type PortDialer } from './portforward.js';
import { REMOTECOMMAND_PROTOCOLS, serveRemoteCommand, type ExecOutcome, type StreamIO, type StreamOptions } from './remotecommand.js';
import { SpdyConnection } from './spdy.js';
import { isWebSocketUpgrade, serveRemoteCommandWs, WebSocketConn, websocketProtocol } from './websocket.js';

export type StreamRequest =
  | { kind: 'exec' | 'attach'; opts: StreamOptions; run: (io: StreamIO) => Promise<ExecOutcome> }
  | { kind: 'portforward'; podName: string; podUID: string; dial: PortDialer };

const TOKEN_TTL_MS = 60_000;
const WEBSOCKET_LIST = 'v4.channel.k8s.io, v4.base64.channel.k8s.io, channel.k8s.io, base64.channel.k8s.io';
const MAX_IN_FLIGHT = 1000;
/** containerd's stream_idle_timeout (the kubelet's streamingConnectionIdleTimeout default): 4 h without a byte either way ends a stream. */
export const STREAM_IDLE_TIMEOUT_MS = 4 * 3600_000;

function rawResponse(socket: Duplex, code: number, message: string, headers: Record<string, string> = {}): void {
  const body = Buffer.from(message);
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 ${code} ${http.STATUS_CODES[code] ?? ''}\r\nContent-Type: text/plain; charset=utf-8\r\n${extra}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`), body]));
}

/** The protocol both ends speak, as the kubelet's handshake picks it (the client's order of preference). */
export function negotiate(header: string | string[] | undefined, server: string[]): { protocol?: string; error?: { code: number; message: string } } {
  if (header === undefined) return { error: { code: 400, message: 'unable to upgrade: header X-Stream-Protocol-Version does not exist in request' } };
  const client = (Array.isArray(header) ? header : [header]).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
  if (client.length === 0) return { error: { code: 400, message: 'unable to upgrade: header X-Stream-Protocol-Version is empty' } };
  const protocol = client.find((p) => server.includes(p));
  if (!protocol) return { error: { code: 403, message: `unable to upgrade: unable to negotiate protocol: client supports [${client.join(' ')}], server accepts [${server.join(' ')}]` } };
  return { protocol };
}

export class StreamingServer {
  constructor(private readonly idleTimeoutMs = STREAM_IDLE_TIMEOUT_MS) {}

  private server?: Server;
  private port = 0;
  private readonly requests = new Map<string, { req: StreamRequest; until: number }>();
  private readonly connections = new Set<SpdyConnection>();

  async start(address = '127.0.0.1'): Promise<void> {
    const server = http.createServer((_req, res) => res.writeHead(400, { 'content-type': 'text/plain' }).end('Upgrade request required'));
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, address, () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Registers a request; answers the URL it is served at. */
  register(req: StreamRequest): string {
    const now = Date.now();
    for (const [t, r] of this.requests) if (r.until <= now) this.requests.delete(t);
    if (this.requests.size >= MAX_IN_FLIGHT) throw new Error('maximum number of in-flight requests exceeded');
    const token = randomBytes(6).toString('base64url');
    this.requests.set(token, { req, until: now + TOKEN_TTL_MS });
    const path = req.kind === 'portforward' ? 'portforward' : req.kind;
    return `http://127.0.0.1:${this.port}/${path}/${token}`;
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.close();
    if (!this.server) return;
    this.server.closeAllConnections?.();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const m = /^\/(exec|attach|portforward)\/([\w-]+)$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    const entry = m ? this.requests.get(m[2]!) : undefined;
    if (!m || !entry || entry.until <= Date.now() || (entry.req.kind === 'portforward' ? 'portforward' : entry.req.kind) !== m[1]) {
      return rawResponse(socket, 404, 'Not Found');
    }
    // One use per URL.
    this.requests.delete(m[2]!);
    // A stream left idle is closed, as containerd's are: a forgotten exec or port-forward does not hold its relay for ever.
    if (socket instanceof Socket) socket.setTimeout(this.idleTimeoutMs, () => socket.destroy());
    const r = entry.req;
    if (isWebSocketUpgrade(req) && r.kind !== 'portforward') {
      const protocol = websocketProtocol(req);
      if (protocol === undefined) return rawResponse(socket, 400, `unable to upgrade: none of the offered WebSocket protocols is served (${WEBSOCKET_LIST})`);
      const ws = WebSocketConn.accept(req, socket, head, protocol);
      void serveRemoteCommandWs(ws, protocol, r.opts, r.run);
      return;
    }
    if (String(req.headers.upgrade ?? '').toLowerCase() !== 'spdy/3.1') return rawResponse(socket, 400, 'unable to upgrade: the protocol is not SPDY/3.1');
    const { protocol, error } = negotiate(req.headers['x-stream-protocol-version'], r.kind === 'portforward' ? PORTFORWARD_PROTOCOLS : REMOTECOMMAND_PROTOCOLS);
    if (error) return rawResponse(socket, error.code, error.message, error.code === 403 ? { 'X-Accepted-Stream-Protocol-Versions': (r.kind === 'portforward' ? PORTFORWARD_PROTOCOLS : REMOTECOMMAND_PROTOCOLS).join(', ') } : {});
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`);
    const conn = new SpdyConnection(socket);
    this.connections.add(conn);
    conn.once('close', () => this.connections.delete(conn));
    conn.on('error', () => undefined);
    if (head.length) socket.unshift(head);
    if (r.kind === 'portforward') servePortForward(conn, r.podName, r.podUID, r.dial);
    else void serveRemoteCommand(conn, protocol!, r.opts, r.run);
  }
}
