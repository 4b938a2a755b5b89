// Who nodelet is to the API server. Without TLS bootstrapping: the kubeconfig's user, or the pod's
// service account, or nobody (standalone). With it, as the kubelet's --bootstrap-kubeconfig: the
// node itself, system:node:<name> in group system:nodes, through a client certificate asked for
// with the bootstrap credentials (a kubeconfig, or the pod's service account) from the
// kube-apiserver-client-kubelet signer. The Node authorizer and the NodeRestriction admission
// plugin then let it read and change only what is its own, and the bootstrap credentials need no
// more than the right to ask for certificates.
//
// The order a start takes, as the kubelet's: a kubeconfig whose client certificate is still valid
// is used as it is; else the pair kept in <certDir> (nodelet-client-current.pem); else a CSR with
// the bootstrap credentials, after which the kubeconfig (if one is configured) is written to point
// at the kept pair. With rotateCertificates the pair is renewed at 70-90% of its life with the
// node's own identity, and the REST client switches to the new one in place.
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import type { NodeletConfig } from '../config/config.js';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../util/clock.js';
import { CertificateManager, CLIENT_KUBELET_SIGNER, CLIENT_USAGES, type BootstrapCredentials, type CsrObject } from './certificate-manager.js';
import { CertificateStore, parsePair, type StoredPair } from './certificate-store.js';
import { KubeClient } from './client.js';
import { inClusterConnection, loadKubeconfig, RestClient, type KubeConnection } from './rest.js';

export interface NodeIdentity {
  /** The API client (undefined: standalone). */
  readonly client?: KubeClient;
  /** The client certificate's manager, when nodelet has one (bootstrapping, or rotating a kubeconfig's). */
  readonly clientCertificates?: CertificateManager;
  /**
   * Makes the client ready to call: at once, unless a bootstrap must first be issued a
   * certificate (it waits for that). Resolves false when stop() came first.
   */
  start(): Promise<boolean>;
  stop(): void;
}

export interface NodeIdentityDeps {
  logger: Logger;
  clock: Clock;
  env?: NodeJS.ProcessEnv;
}

/** The kubeconfig's connection if its client certificate is still valid (the kubelet's isClientConfigStillValid). */
function validKubeconfig(path: string, nowMs: number): { conn: KubeConnection; pair: StoredPair } | undefined {
  if (!path || !existsSync(path)) return undefined;
  try {
    const conn = loadKubeconfig(path);
    if (!conn.cert || !conn.key) return undefined;
    const pair = parsePair({ cert: conn.cert, key: conn.key });
    return pair.notAfter > nowMs ? { conn, pair } : undefined;
  } catch {
    return undefined;
  }
}

/** The node's kubeconfig after a bootstrap: the bootstrap's server and CA, the kept pair as its user. */
export function writeNodeKubeconfig(path: string, server: KubeConnection, pemPath: string): void {
  const cluster: Record<string, unknown> = { server: server.server };
  if (server.ca) cluster['certificate-authority-data'] = server.ca.toString('base64');
  if (server.insecureSkipTLSVerify) cluster['insecure-skip-tls-verify'] = true;
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default-cluster', cluster }],
    users: [{ name: 'default-auth', user: { 'client-certificate': pemPath, 'client-key': pemPath } }],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', user: 'default-auth', namespace: 'default' } }],
    'current-context': 'default-context',
  };
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, stringify(doc), { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

/** What the waiting log lines say about who approves a client CSR. */
function clientApprovalHint(csr: CsrObject, bootstrap: boolean): string {
  const name = csr.metadata?.name ?? '';
  if (!bootstrap) {
    return `the controller-manager's approver approves it only if the group system:nodes may create certificatesigningrequests/selfnodeclient (a binding to the ClusterRole system:certificates.k8s.io:certificatesigningrequests:selfnodeclient, as in deploy/rbac.yaml); else a cluster admin must: kubectl certificate approve ${name}`;
  }
  const who = csr.spec?.username ? ` ${csr.spec.username}` : '';
  return (
    `nodelet-csr-approver (deploy/approver.yaml) approves it if its requester${who} asked with the token of a pod on this node's host and the node is not registered yet, ` +
    `or the controller-manager's approver if the requester may create certificatesigningrequests/nodeclient; else a cluster admin must: kubectl certificate approve ${name}`
  );
}

export function nodeIdentity(config: NodeletConfig, deps: NodeIdentityDeps): NodeIdentity {
  const { logger, clock } = deps;
  const env = deps.env ?? process.env;
  const certDir = config.certDir || join(config.rootDir, 'pki');
  const store = new CertificateStore(certDir, 'nodelet-client');
  const bootstrapping = !!config.bootstrapKubeconfig || config.bootstrapInCluster;

  if (!bootstrapping) {
    const conn = config.kubeconfig ? loadKubeconfig(config.kubeconfig) : env.KUBERNETES_SERVICE_HOST ? inClusterConnection(env) : undefined;
    if (!conn) return { start: async () => true, stop: () => undefined };
    const client = new KubeClient(new RestClient(conn));
    if (!config.rotateCertificates) return { client, start: async () => true, stop: () => undefined };
    if (!conn.cert || !conn.key) {
      logger.warn('rotateCertificates: the kubeconfig has no client certificate to renew; its credentials are used as they are');
      return { client, start: async () => true, stop: () => undefined };
    }
    // The kubeconfig's pair, renewed into certDir (a newer one kept there is taken first).
    return withManager(client, { cert: conn.cert, key: conn.key });
  }

  const bootstrapConnection = () => (config.bootstrapKubeconfig ? loadKubeconfig(config.bootstrapKubeconfig) : inClusterConnection(env));
  // Read once now: a bootstrap kubeconfig that cannot be read stops nodelet at once.
  const boot = bootstrapConnection();
  const kept = validKubeconfig(config.kubeconfig, clock.now());
  const conn: KubeConnection = kept?.conn ?? { server: boot.server, ca: boot.ca, insecureSkipTLSVerify: boot.insecureSkipTLSVerify };
  // Node credentials only: never the bootstrap token.
  const client = new KubeClient(new RestClient({ server: conn.server, ca: conn.ca, insecureSkipTLSVerify: conn.insecureSkipTLSVerify, cert: conn.cert, key: conn.key }));
  let kubeconfigWritten = !!kept || !config.kubeconfig;
  return withManager(client, kept ? { cert: kept.pair.cert, key: kept.pair.key } : undefined, {
    api: () => {
      const rest = new RestClient(bootstrapConnection());
      return Object.assign(new KubeClient(rest), { close: () => rest.close() });
    },
    keyFile: join(certDir, 'nodelet-client.key.tmp'),
  }, () => {
    if (kubeconfigWritten) return;
    writeNodeKubeconfig(config.kubeconfig, conn, store.currentPath);
    kubeconfigWritten = true;
    logger.info('kubeconfig written for the node\'s client certificate', { kubeconfig: config.kubeconfig, certificate: store.currentPath });
  });

  function withManager(
    client: KubeClient,
    initial: { cert: Buffer; key: Buffer } | undefined,
    bootstrap?: BootstrapCredentials,
    afterFirst?: () => void,
  ): NodeIdentity {
    const manager = new CertificateManager({
      what: 'client certificate',
      template: { signerName: CLIENT_KUBELET_SIGNER, usages: CLIENT_USAGES, subject: { organization: 'system:nodes', commonName: `system:node:${config.nodeName}` } },
      store,
      api: client,
      bootstrap,
      initial,
      rotate: config.rotateCertificates,
      onCertificate: (pair, rotated) => {
        client.rest.setClientCertificate(pair.cert, pair.key);
        if (rotated) logger.info('client certificate rotated: API connections reopened with it', { notAfter: new Date(pair.notAfter).toISOString() });
        try {
          afterFirst?.();
        } catch (err) {
          logger.warn('kubeconfig not written', { kubeconfig: config.kubeconfig, error: (err as Error).message });
        }
      },
      approvalHint: clientApprovalHint,
      clock,
      logger,
    });
    return {
      client,
      clientCertificates: manager,
      start: async () => {
        manager.start();
        // Nothing else runs yet and the clock's timers do not hold the process: without this, a
        // node whose first request failed (an API server not up yet) exited 0 while it waited.
        const hold = setInterval(() => undefined, 60_000);
        const ok = await manager.first.finally(() => clearInterval(hold));
        if (ok) logger.info('API identity: the node\'s client certificate', { user: `system:node:${config.nodeName}`, groups: 'system:nodes', certificate: store.currentPath });
        return ok;
      },
      stop: () => manager.stop(),
    };
  }
}
