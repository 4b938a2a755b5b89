// Where the node API's serving certificate comes from when no files are configured. With
// serverTLSBootstrap, as the kubelet's --rotate-server-certificates: a CSR to the
// kubernetes.io/kubelet-serving signer (O=system:nodes, CN=system:node:<node>, the node's names),
// asked with the node's own identity, kept in <certDir> as nodelet-server-current.pem and renewed
// at 70-90% of its life: the certificate manager the client certificate uses too
// (src/kube/certificate-manager.ts). Without it: a self-signed certificate made once in <certDir>
// (nodelet.crt, nodelet.key), as the kubelet makes kubelet.crt.
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CertificateManager, KUBELET_SERVING_SIGNER, SERVING_USAGES, type CsrApi } from '../kube/certificate-manager.js';
import { CertificateStore, type KeyAndCertificate } from '../kube/certificate-store.js';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../util/clock.js';
import { newKey, selfSignedCertificate } from './x509.js';

export type ServingCertificate = KeyAndCertificate;

/** A self-signed certificate in certDir, made once (and again when it has expired). */
export function selfSigned(certDir: string, hostname: string, sans: string[], nowMs: number): ServingCertificate {
  const crt = join(certDir, 'nodelet.crt');
  const keyFile = join(certDir, 'nodelet.key');
  if (existsSync(crt) && existsSync(keyFile)) {
    const cert = readFileSync(crt);
    if (Date.parse(new X509Certificate(cert).validTo) > nowMs) return { cert, key: readFileSync(keyFile) };
  }
  mkdirSync(certDir, { recursive: true, mode: 0o700 });
  const key = newKey();
  const cert = selfSignedCertificate(key, { commonName: `${hostname}@${Math.floor(nowMs / 1000)}` }, sans, new Date(nowMs), 365);
  writeFileSync(keyFile, key.privateKeyPem, { mode: 0o600 });
  writeFileSync(crt, cert);
  return { cert: Buffer.from(cert), key: Buffer.from(key.privateKeyPem) };
}

/** The serving certificate through CSRs to kubernetes.io/kubelet-serving, renewed in the background. */
export function servingCertificateManager(opts: {
  api: CsrApi;
  nodeName: string;
  sans: () => string[];
  certDir: string;
  clock: Clock;
  logger: Logger;
  /** Called with every certificate obtained (the first one, then each renewal). */
  onCertificate: (c: ServingCertificate) => void;
  pollMs?: number;
  random?: () => number;
}): CertificateManager {
  return new CertificateManager({
    what: 'serving certificate',
    template: { signerName: KUBELET_SERVING_SIGNER, usages: SERVING_USAGES, subject: { organization: 'system:nodes', commonName: `system:node:${opts.nodeName}` }, sans: opts.sans },
    store: new CertificateStore(opts.certDir, 'nodelet-server'),
    api: opts.api,
    rotate: true,
    onCertificate: (pair) => opts.onCertificate(pair),
    approvalHint: (csr) =>
      `the controller-manager never approves ${KUBELET_SERVING_SIGNER} requests: a cluster admin (kubectl certificate approve ${csr.metadata?.name ?? ''}) or an approver must; until then the node API is not served`,
    clock: opts.clock,
    logger: opts.logger,
    pollMs: opts.pollMs,
    random: opts.random,
  });
}
