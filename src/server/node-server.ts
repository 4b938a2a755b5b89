// The node API (the kubelet's port 10250): HTTPS, every request authenticated and authorized
// (src/server/auth.ts), serving /pods, /healthz, /configz, /metrics, /containerLogs, /run and the
// streams /exec, /attach and /portForward. Beside it, plain-HTTP ports that exist only when
// configured: the healthz port (/healthz) and the read-only port (/healthz, /pods, /metrics), as
// the kubelet's healthzPort and readOnlyPort.
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { isNotFound, isUnavailable } from '../cri/errors.js';
import type { RuntimeService, StreamingService } from '../cri/services.js';
import { readContainerLog, LogReadError } from '../logs/reader.js';
import type { Metrics } from '../observability/metrics.js';
import type { Logger } from '../observability/logger.js';
import { podNamed } from '../pods/mirror-pods.js';
import type { RunningPod } from '../runtime/types.js';
import type { Clock } from '../util/clock.js';
import type { NodeAuth } from './auth.js';
import { buildSummary, NodeCpu, resourceMetrics, type StatsSources } from './stats.js';
import { checkStreamGate, HttpError, logContainerID, parseLogQuery, podContainerSpec } from './container-logs.js';
import { parsePorts, parseStreamOptions, proxyUpgrade, rawError, type StreamOptions } from './streaming.js';
import { isWebSocketUpgrade } from '../cri/streaming/websocket.js';
import { DEBUG_KINDS, serveDebug, type DebugSource } from './debug.js';
import { offeredProtocols, PORTFORWARD_TUNNEL, translateRemoteCommand, tunnelPortForward, V5 } from './websocket-translator.js';

export interface NodeServerHost {
  pods(): V1Pod[];
  /** The status this agent last computed for a pod (else the API's is used). */
  podStatus(uid: string): V1PodStatus | undefined;
  runtime(): Pick<RuntimeService, 'containerStatus' | 'execSync'> & StreamingService;
  /** What /stats/summary and /metrics/resource are made of. */
  stats: StatsSources;
  /** Pods with their running containers and ready sandboxes, as the runtime lists them. */
  runningPods(): Promise<RunningPod[]>;
  healthy(): { ok: boolean; detail: string };
  configz(): object;
  /** The PodLogsQuerySplitStreams gate: stream=Stdout|Stderr in /containerLogs. */
  splitLogStreams: boolean;
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
  /** Plans, sync history and the live summary (/debug). */
  debug?: DebugSource;
}

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
  /** Client CA bundle; undefined when client certificates are not accepted. */
  clientCA?: Buffer;
}

interface PodTarget {
  namespace: string;
  pod: string;
  uid?: string;
}

interface ContainerTarget extends PodTarget {
  container: string;
}

type Route =
  | { kind: 'healthz' | 'pods' | 'configz' | 'metrics' | 'summary' | 'metricsResource' | 'metricsProbes' }
  | { kind: 'debugPage' | 'debugScript' | 'debugPods' | 'debugStream' }
  | ({ kind: 'debugHistory' | 'debugPlan' } & PodTarget)
  | ({ kind: 'logs' } & ContainerTarget)
  | ({ kind: 'exec' | 'attach' | 'run' } & ContainerTarget)
  | ({ kind: 'portForward' } & PodTarget);

/** Which handler a path names (undefined: 404). */
export function route(path: string): Route | undefined {
  const parts = path.split('/').filter((p) => p !== '').map(decodeURIComponent);
  const [head, ...rest] = parts;
  switch (head) {
    case 'healthz':
    case 'pods':
    case 'configz':
      return rest.length === 0 ? { kind: head } : undefined;
    case 'metrics':
      if (rest.length === 0) return { kind: 'metrics' };
      if (rest.length === 1 && rest[0] === 'probes') return { kind: 'metricsProbes' };
      return rest.length === 1 && rest[0] === 'resource' ? { kind: 'metricsResource' } : undefined;
    case 'stats':
      return rest.length === 1 && rest[0] === 'summary' ? { kind: 'summary' } : undefined;
    case 'debug':
      return debugRoute(rest);
    case 'containerLogs':
      return rest.length === 3 ? { kind: 'logs', namespace: rest[0], pod: rest[1], container: rest[2] } : undefined;
    case 'exec':
    case 'attach':
    case 'run':
      if (rest.length === 3) return { kind: head as 'exec', namespace: rest[0], pod: rest[1], container: rest[2] };
      if (rest.length === 4) return { kind: head as 'exec', namespace: rest[0], pod: rest[1], uid: rest[2], container: rest[3] };
      return undefined;
    case 'portForward':
      if (rest.length === 2) return { kind: 'portForward', namespace: rest[0], pod: rest[1] };
      if (rest.length === 3) return { kind: 'portForward', namespace: rest[0], pod: rest[1], uid: rest[2] };
      return undefined;
    default:
      return undefined;
  }
}

function debugRoute(rest: string[]): Route | undefined {
  if (rest.length === 0) return { kind: 'debugPage' };
  if (rest.length === 1 && rest[0] === 'app.js') return { kind: 'debugScript' };
  if (rest[0] !== 'pods') return undefined;
  if (rest.length === 1) return { kind: 'debugPods' };
  if (rest.length === 2 && rest[1] === 'stream') return { kind: 'debugStream' };
  if (rest.length === 3) return { kind: 'debugHistory', namespace: rest[1]!, pod: rest[2]! };
  if (rest.length === 4 && rest[3] === 'plan') return { kind: 'debugPlan', namespace: rest[1]!, pod: rest[2]! };
  return undefined;
}

export class NodeServer {
  private secure?: https.Server;
  private readonly plain: Server[] = [];
  private readonly streams = new Set<Duplex>();
  private readonly cpu = new NodeCpu();

  constructor(
    private readonly host: NodeServerHost,
    private readonly auth: NodeAuth,
  ) {}

  /** Serves the authenticated API on address:port; answers the port bound. */
  async listenSecure(address: string, port: number, tls: TlsFiles): Promise<number> {
    const server = https.createServer({ cert: tls.cert, key: tls.key, ca: tls.clientCA, requestCert: !!tls.clientCA, rejectUnauthorized: false, minVersion: 'TLSv1.2' });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void this.authenticated(req, res));
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.authenticatedUpgrade(req, socket, head));
    this.secure = server;
    return listen(server, address, port);
  }

  /** A new serving certificate for connections from now on (rotation). */
  setCertificate(cert: Buffer, key: Buffer, clientCA?: Buffer): void {
    this.secure?.setSecureContext({ cert, key, ca: clientCA });
  }

  /** A plain-HTTP port without authentication: 'healthz' serves /healthz, 'readonly' also /pods and /metrics. */
  async listenPlain(address: string, port: number, what: 'healthz' | 'readonly'): Promise<number> {
    // The read-only port also shows /debug: it already serves every pod's spec and status, and it
    // is what the standalone agent of `make run` has.
    const allowed = what === 'healthz' ? ['healthz'] : ['healthz', 'pods', 'metrics', 'summary', 'metricsResource', 'metricsProbes', ...DEBUG_KINDS];
    const server = http.createServer((req, res) => {
      const r = route(new URL(req.url ?? '/', 'http://node').pathname);
      if (!r || !allowed.includes(r.kind)) return void text(res, 404, '404 page not found\n');
      void this.serve(r, req, res);
    });
    this.plain.push(server);
    return listen(server, address, port);
  }

  async close(): Promise<void> {
    for (const s of this.streams) s.destroy();
    const all: Server[] = [...this.plain, ...(this.secure ? [this.secure] : [])];
    await Promise.all(
      all.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.closeAllConnections?.();
            s.close(() => resolve());
          }),
      ),
    );
  }

  private async authenticated(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const d = await this.auth.check(req);
      if (!d.ok) return void text(res, d.code, d.message);
      const r = route(new URL(req.url ?? '/', 'https://node').pathname);
      if (!r) return void text(res, 404, '404 page not found\n');
      if (r.kind === 'exec' || r.kind === 'attach' || r.kind === 'portForward') return void text(res, 500, 'Upgrade request required\n');
      await this.serve(r, req, res);
    } catch (err) {
      this.fail(res, err);
    }
  }

  private async authenticatedUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    try {
      const d = await this.auth.check(req);
      if (!d.ok) return rawError(socket, d.code, d.message);
      const url = new URL(req.url ?? '/', 'https://node');
      const r = route(url.pathname);
      if (!r || (r.kind !== 'exec' && r.kind !== 'attach' && r.kind !== 'portForward')) return rawError(socket, 404, '404 page not found\n');
      const { url: target, opts } = await this.streamTarget(r.kind, r, url.searchParams);
      this.streams.add(socket);
      const done = () => this.streams.delete(socket);
      // WebSocket as the kubelet takes it: v5 commands translated to SPDY, port-forward's tunnel
      // relayed; older WebSocket protocols and SPDY go to the runtime's server as they came.
      const offered = isWebSocketUpgrade(req) ? offeredProtocols(req) : [];
      if (r.kind !== 'portForward' && offered.includes(V5)) return void translateRemoteCommand(req, socket, head, target, opts!, done);
      if (r.kind === 'portForward' && offered.includes(PORTFORWARD_TUNNEL)) return void tunnelPortForward(req, socket, head, target, done);
      proxyUpgrade(req, socket, head, target, done);
    } catch (err) {
      const code = err instanceof HttpError ? err.code : 500;
      rawError(socket, code, (err as Error).message);
    }
  }

  private fail(res: ServerResponse, err: unknown): void {
    const code = err instanceof HttpError ? err.code : 500;
    if (!res.headersSent) text(res, code, (err as Error).message);
    else res.destroy();
  }

  private async serve(r: Route, req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      switch (r.kind) {
        case 'healthz': {
          const h = this.host.healthy();
          return void text(res, h.ok ? 200 : 500, h.ok ? 'ok' : h.detail);
        }
        case 'pods':
          return void json(res, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: this.host.pods() });
        case 'configz':
          return void json(res, this.host.configz());
        case 'metrics':
        case 'metricsProbes': {
          const registry = r.kind === 'metrics' ? this.host.metrics.registry : this.host.metrics.probesRegistry;
          const body = await registry.metrics();
          return void res.writeHead(200, { 'content-type': registry.contentType }).end(body);
        }
        case 'summary':
          return void json(res, await buildSummary(this.host.stats, this.cpu));
        case 'metricsResource': {
          const text = resourceMetrics(await buildSummary(this.host.stats, this.cpu));
          return void res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(text);
        }
        case 'logs':
          return await this.containerLogs(r, req, res);
        case 'run':
          // POST only, as the kubelet registers it: a GET (a link, an img tag) runs nothing.
          if (req.method !== 'POST') return void text(res, 405, '405: Method Not Allowed');
          return await this.run(r, req, res);
        case 'debugPage':
        case 'debugScript':
        case 'debugPods':
        case 'debugStream':
        case 'debugHistory':
        case 'debugPlan':
          if (!this.host.debug) return void text(res, 404, '404 page not found\n');
          return await serveDebug(this.host.debug, r, req, res, this.streams);
        default:
          return void text(res, 404, '404 page not found\n');
      }
    } catch (err) {
      this.fail(res, err);
    }
  }

  /** The pod of that namespace and name as this agent runs it (a static pod, not its mirror). */
  private pod(namespace: string, name: string): V1Pod | undefined {
    return podNamed(this.host.pods(), namespace, name);
  }

  private async containerLogs(r: ContainerTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const opts = parseLogQuery(new URL(req.url ?? '/', 'https://node').searchParams, this.host.clock.now());
    const pod = this.pod(r.namespace, r.pod);
    if (!pod) throw new HttpError(404, `pod "${r.pod}" does not exist`);
    if (!podContainerSpec(pod, r.container)) throw new HttpError(404, `container "${r.container}" not found in pod "${r.pod}"`);
    checkStreamGate(opts, this.host.splitLogStreams);
    const status = this.host.podStatus(pod.metadata?.uid ?? '') ?? pod.status;
    const fullID = logContainerID(r.pod, status, r.container, opts.previous);
    const id = fullID.replace(/^[^:]*:\/\//, '');
    const runtime = this.host.runtime();
    let logPath: string;
    try {
      logPath = (await runtime.containerStatus(id)).status?.log_path ?? '';
    } catch {
      throw new HttpError(400, `unable to retrieve container logs for ${fullID}`);
    }
    if (!logPath) throw new HttpError(400, `unable to retrieve container logs for ${fullID}`);
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const isRunning = async () => {
      try {
        return (await runtime.containerStatus(id)).status?.state === 'CONTAINER_RUNNING';
      } catch (err) {
        // A runtime that is down for a moment does not end a follower (the kubelet's rule).
        return isUnavailable(err);
      }
    };
    let started = false;
    const begin = () => {
      if (started) return;
      started = true;
      res.writeHead(200, { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' });
      res.flushHeaders();
    };
    try {
      await readContainerLog(
        logPath,
        opts,
        isRunning,
        {
          // The answer starts once the file is open, so that a missing file is still an error status.
          opened: begin,
          write: (chunk) => (begin(), res.write(chunk)),
          drained: () => new Promise<void>((resolve) => (res.writableNeedDrain && !res.destroyed ? res.once('drain', resolve).once('close', resolve) : resolve())),
        },
        abort.signal,
      );
      begin();
      res.end();
    } catch (err) {
      if (err instanceof LogReadError && !started) throw new HttpError(400, err.message);
      throw err;
    }
  }

  /** POST /run: a command's combined output, as the kubelet's RunInContainer. */
  private async run(r: ContainerTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pod = this.pod(r.namespace, r.pod);
    if (!pod) throw new HttpError(404, 'pod does not exist');
    const cmd = (new URL(req.url ?? '/', 'https://node').searchParams.get('cmd') ?? '').split(' ');
    const id = await this.runningContainer(pod, r.uid, r.container, `container not found ("${r.container}")`);
    const out = await this.host.runtime().execSync(id, cmd, 0);
    const body = Buffer.concat([out.stdout ?? Buffer.alloc(0), out.stderr ?? Buffer.alloc(0)]);
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  }

  private async runningContainer(pod: V1Pod, uid: string | undefined, container: string, missing: string): Promise<string> {
    const want = uid || pod.metadata?.uid;
    const running = (await this.host.runningPods()).find((p) => p.uid === want);
    const c = running?.containers.find((x) => x.name === container);
    if (!c) throw new HttpError(500, missing);
    return c.id.id;
  }

  private async streamTarget(kind: 'exec' | 'attach' | 'portForward', r: PodTarget & { container?: string }, q: URLSearchParams): Promise<{ url: string; opts?: StreamOptions }> {
    const pod = this.pod(r.namespace, r.pod);
    if (!pod) throw new HttpError(404, 'pod does not exist');
    const runtime = this.host.runtime();
    // As the kubelet's streaming errors: NotFound is 404, anything else 500.
    const criError = (err: unknown) => new HttpError(isNotFound(err) ? 404 : 500, (err as Error).message);
    if (kind === 'portForward' || r.container === undefined) {
      const ports = parsePorts(q);
      const want = r.uid || pod.metadata?.uid;
      const running = (await this.host.runningPods()).find((p) => p.uid === want);
      const sandbox = running?.sandboxes.find((s) => s.state === 'running');
      if (!sandbox) throw new HttpError(500, `pod not found ("${r.pod}_${r.namespace}")`);
      return { url: await runtime.portForward(sandbox.id.id, ports).catch((e) => Promise.reject(criError(e))) };
    }
    const opts = parseStreamOptions(q);
    if (kind === 'exec') {
      const id = await this.runningContainer(pod, r.uid, r.container, `container not found ("${r.container}")`);
      return { url: await runtime.exec({ containerId: id, cmd: q.getAll('command'), ...opts }).catch((e) => Promise.reject(criError(e))), opts };
    }
    const id = await this.runningContainer(pod, r.uid, r.container, `container ${r.container} not found in pod ${r.pod}_${r.namespace}`);
    // Attach's tty must be the container's own: it cannot change after the process started.
    const spec = podContainerSpec(pod, r.container);
    const attachOpts = { ...opts, tty: opts.tty && spec?.tty === true };
    return { url: await runtime.attach({ containerId: id, ...attachOpts }).catch((e) => Promise.reject(criError(e))), opts: attachOpts };
  }
}

function text(res: ServerResponse, code: number, body: string): void {
  // As written: go-restful's errors end without a newline, Go's http.Error with one.
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(body);
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function listen(server: Server, address: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
