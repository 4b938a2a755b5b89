// A TCP proxy between a drilled nodelet and the API server (TLS passes through untouched), which
// can make every connection open at that moment go silent: held open, nothing forwarded either
// way, as a connection through a stateful middlebox that lost it. New connections work.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';

interface Pair {
  client: Socket;
  upstream: Socket;
  frozen: boolean;
}

export class ApiProxy {
  private server?: Server;
  private readonly pairs = new Set<Pair>();
  port = 0;

  constructor(private readonly upstreamHost: string, private readonly upstreamPort: number) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.upstreamPort, this.upstreamHost);
      const pair: Pair = { client, upstream, frozen: false };
      this.pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      const end = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', () => !pair.frozen && end());
      upstream.on('error', () => !pair.frozen && end()).on('close', () => !pair.frozen && end());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as { port: number }).port;
  }

  /** Every connection open now goes silent; returns how many. */
  freeze(): number {
    for (const p of this.pairs) {
      p.frozen = true;
      p.client.unpipe(p.upstream);
      p.upstream.unpipe(p.client);
      p.client.pause();
      p.upstream.pause();
    }
    return this.pairs.size;
  }

  /** The silent connections are closed (as the middlebox finally resets them). */
  dropFrozen(): void {
    for (const p of [...this.pairs]) {
      if (!p.frozen) continue;
      this.pairs.delete(p);
      p.client.destroy();
      p.upstream.destroy();
    }
  }

  get connections(): number {
    return this.pairs.size;
  }

  async stop(): Promise<void> {
    for (const p of this.pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** A copy of a kubeconfig whose server is the proxy. */
export function proxiedKubeconfig(source: string, target: string, port: number): void {
  const text = readFileSync(source, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${port}`);
  writeFileSync(target, text, { mode: 0o600 });
}
