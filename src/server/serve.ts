// Starting the node API from the config: the authenticated HTTPS port when a serving certificate
// is configured, and the plain-HTTP healthz and read-only ports when they are asked for.
import { readFileSync } from 'node:fs';
import type { NodeletConfig } from '../config/config.js';
import type { KubeClient } from '../kube/client.js';
import { NodeAuth } from './auth.js';
import { configz } from './configz.js';
import { NodeServer, type NodeServerHost } from './node-server.js';

export interface NodeApi {
  server: NodeServer;
  /** Ports bound (0: not served). */
  ports: { port: number; healthzPort: number; readOnlyPort: number };
}

export class NodeApiError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NodeApiError';
  }
}

function readPem(field: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new NodeApiError(`${field}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export async function startNodeApi(config: NodeletConfig, host: Omit<NodeServerHost, 'configz' | 'splitLogStreams'>, kube: KubeClient | undefined): Promise<NodeApi> {
  const a = config.authentication;
  const auth = new NodeAuth(
    {
      anonymousEnabled: a.anonymous.enabled,
      webhookEnabled: a.webhook.enabled,
      webhookCacheTTLMs: a.webhook.cacheTTLMs,
      clientCAFile: a.x509.clientCAFile,
      mode: config.authorization.mode,
      cacheAuthorizedTTLMs: config.authorization.webhook.cacheAuthorizedTTLMs,
      cacheUnauthorizedTTLMs: config.authorization.webhook.cacheUnauthorizedTTLMs,
    },
    config.nodeName,
    kube,
    host.clock,
  );
  const server = new NodeServer({ ...host, configz: () => configz(config), splitLogStreams: config.featureGates.PodLogsQuerySplitStreams }, auth);
  const ports = { port: 0, healthzPort: 0, readOnlyPort: 0 };
  try {
    if (config.tlsCertFile) {
      const tls = {
        cert: readPem('tlsCertFile', config.tlsCertFile),
        key: readPem('tlsPrivateKeyFile', config.tlsPrivateKeyFile),
        clientCA: a.x509.clientCAFile ? readPem('authentication.x509.clientCAFile', a.x509.clientCAFile) : undefined,
      };
      ports.port = await server.listenSecure(config.address, config.port, tls);
    } else {
      host.logger.warn('node API not served: no serving certificate (tlsCertFile, tlsPrivateKeyFile); kubectl logs/exec will not reach this node');
    }
    if (config.healthzPort) ports.healthzPort = await server.listenPlain(config.healthzBindAddress, config.healthzPort, 'healthz');
    if (config.readOnlyPort) ports.readOnlyPort = await server.listenPlain(config.address, config.readOnlyPort, 'readonly');
  } catch (err) {
    await server.close();
    if (err instanceof NodeApiError) throw err;
    throw new NodeApiError(`node API: ${(err as Error).message}`);
  }
  return { server, ports };
}
