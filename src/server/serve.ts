// Starting the node API from the config: the authenticated HTTPS port with its serving
// certificate (files, else one issued through a CSR with serverTLSBootstrap, else a self-signed
// one), and the plain-HTTP healthz and read-only ports when they are asked for.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { NodeletConfig } from '../config/config.js';
import type { KubeClient } from '../kube/client.js';
import { NodeAuth } from './auth.js';
import type { CertificateManager } from '../kube/certificate-manager.js';
import { selfSigned, servingCertificateManager } from './certificates.js';
import { configz } from './configz.js';
import { NodeServer, type NodeServerHost } from './node-server.js';

export interface NodeApi {
  server: NodeServer;
  certificates?: CertificateManager;
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

export async function startNodeApi(config: NodeletConfig, host: Omit<NodeServerHost, 'configz' | 'splitLogStreams'>, kube: KubeClient | undefined, nodeIP: string): Promise<NodeApi> {
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
  const api: NodeApi = { server, ports };
  const clientCA = a.x509.clientCAFile ? readPem('authentication.x509.clientCAFile', a.x509.clientCAFile) : undefined;
  const certDir = config.certDir || join(config.rootDir, 'pki');
  // The names the API server may dial this node by: its Hostname and InternalIP addresses.
  const sans = () => [...new Set([os.hostname(), nodeIP].filter(Boolean))];
  try {
    if (config.tlsCertFile) {
      ports.port = await server.listenSecure(config.address, config.port, { cert: readPem('tlsCertFile', config.tlsCertFile), key: readPem('tlsPrivateKeyFile', config.tlsPrivateKeyFile), clientCA });
    } else if (config.serverTLSBootstrap && kube) {
      // The port opens with the first certificate; renewals replace it for new connections.
      api.certificates = servingCertificateManager({
        api: kube,
        nodeName: config.nodeName,
        sans,
        certDir,
        clock: host.clock,
        logger: host.logger,
        onCertificate: (c) => {
          if (ports.port) return server.setCertificate(c.cert, c.key, clientCA);
          void server.listenSecure(config.address, config.port, { ...c, clientCA }).then(
            (p) => (ports.port = p),
            (err: Error) => host.logger.error('node API: cannot listen', { error: err.message }),
          );
        },
      });
      api.certificates.start();
    } else {
      const c = selfSigned(certDir, os.hostname(), sans(), host.clock.now());
      ports.port = await server.listenSecure(config.address, config.port, { ...c, clientCA });
    }
    if (config.healthzPort) ports.healthzPort = await server.listenPlain(config.healthzBindAddress, config.healthzPort, 'healthz');
    if (config.readOnlyPort) ports.readOnlyPort = await server.listenPlain(config.address, config.readOnlyPort, 'readonly');
  } catch (err) {
    await server.close();
    if (err instanceof NodeApiError) throw err;
    throw new NodeApiError(`node API: ${(err as Error).message}`);
  }
  return api;
}
