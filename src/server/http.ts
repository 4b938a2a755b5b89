// The agent's HTTP endpoints: /healthz, /metrics, /pods.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from '../observability/metrics.js';

export interface ServerDeps {
  metrics: Metrics;
  healthy: () => { ok: boolean; detail: string };
  pods: () => unknown[];
}

export class AgentServer {
  private server?: Server;

  constructor(private readonly deps: ServerDeps) {}

  async listen(address: string, port: number): Promise<number> {
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://agent');
      if (url.pathname === '/healthz' || url.pathname === '/readyz') {
        const h = this.deps.healthy();
        res.writeHead(h.ok ? 200 : 503, { 'content-type': 'text/plain' }).end(h.ok ? 'ok' : h.detail);
      } else if (url.pathname === '/metrics') {
        void this.deps.metrics.registry.metrics().then(
          (text) => res.writeHead(200, { 'content-type': this.deps.metrics.registry.contentType }).end(text),
          (err) => res.writeHead(500).end(String(err)),
        );
      } else if (url.pathname === '/pods') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: this.deps.pods() }));
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      }
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, address, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections?.();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
}
