// Where the node API's serving certificate comes from when no files are configured. With
// serverTLSBootstrap, as the kubelet: a key and a CertificateSigningRequest to the
// kubernetes.io/kubelet-serving signer (O=system:nodes, CN=system:node:<node>, the node's names),
// the issued certificate kept in <certDir>/nodelet-server-current.pem and requested again at a
// random point between 70% and 90% of its life. Without it: a self-signed certificate made once in
// <certDir> (nodelet.crt, nodelet.key), as the kubelet makes kubelet.crt.
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../observability/logger.js';
import type { Clock, Timer } from '../util/clock.js';
import { certificateRequest, newKey, selfSignedCertificate } from './x509.js';

export interface ServingCertificate {
  cert: Buffer;
  key: Buffer;
}

/** The API calls a CSR takes (certificates.k8s.io/v1). */
export interface CsrApi {
  createCsr(body: object): Promise<{ metadata?: { name?: string } }>;
  getCsr(name: string): Promise<{ status?: { certificate?: string; conditions?: Array<{ type: string; message?: string }> } } | undefined>;
}

function splitPem(text: string): { cert: string; key: string } {
  const blocks = text.match(/-----BEGIN [^-]+-----[\s\S]*?-----END [^-]+-----\n?/g) ?? [];
  return { cert: blocks.filter((b) => b.includes('CERTIFICATE')).join(''), key: blocks.find((b) => b.includes('PRIVATE KEY')) ?? '' };
}

/** When to ask for the next certificate: a random point between 70% and 90% of this one's life. */
export function renewAt(notBeforeMs: number, notAfterMs: number, random = Math.random()): number {
  const life = notAfterMs - notBeforeMs;
  return notBeforeMs + Math.round((life * (7 + 2 * random)) / 10);
}

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

export class CsrCertificateManager {
  private current?: ServingCertificate;
  private timer?: Timer;
  private stopped = false;
  private readonly file: string;

  constructor(
    private readonly opts: {
      api: CsrApi;
      nodeName: string;
      sans: () => string[];
      certDir: string;
      clock: Clock;
      logger: Logger;
      /** Called with every certificate obtained (the first one, then each renewal). */
      onCertificate: (c: ServingCertificate) => void;
      pollMs?: number;
    },
  ) {
    this.file = join(opts.certDir, 'nodelet-server-current.pem');
  }

  /** Uses a kept certificate that is still valid, else asks for one; keeps renewing in the background. */
  start(): void {
    const kept = this.load();
    if (kept) {
      this.current = kept.cert;
      this.opts.onCertificate(kept.cert);
      this.schedule(renewAt(kept.notBefore, kept.notAfter));
    } else {
      this.schedule(this.opts.clock.now());
    }
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  get certificate(): ServingCertificate | undefined {
    return this.current;
  }

  private load(): { cert: ServingCertificate; notBefore: number; notAfter: number } | undefined {
    try {
      const { cert, key } = splitPem(readFileSync(this.file, 'utf8'));
      const x = new X509Certificate(cert);
      const notAfter = Date.parse(x.validTo);
      if (notAfter <= this.opts.clock.now() || !key) return undefined;
      return { cert: { cert: Buffer.from(cert), key: Buffer.from(key) }, notBefore: Date.parse(x.validFrom), notAfter };
    } catch {
      return undefined;
    }
  }

  private schedule(atMs: number): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimer(Math.max(0, atMs - this.opts.clock.now()), () => void this.renew());
  }

  private async renew(): Promise<void> {
    try {
      const got = await this.request();
      const x = new X509Certificate(got.cert);
      mkdirSync(this.opts.certDir, { recursive: true, mode: 0o700 });
      writeFileSync(`${this.file}.tmp`, Buffer.concat([got.cert, got.key]), { mode: 0o600 });
      renameSync(`${this.file}.tmp`, this.file);
      this.current = got;
      this.opts.onCertificate(got);
      this.opts.logger.info('serving certificate obtained', { notAfter: x.validTo, sans: x.subjectAltName });
      this.schedule(renewAt(Date.parse(x.validFrom), Date.parse(x.validTo)));
    } catch (err) {
      this.opts.logger.warn('serving certificate request failed; asking again in 30 s', { error: (err as Error).message });
      this.schedule(this.opts.clock.now() + 30_000);
    }
  }

  private async request(): Promise<ServingCertificate> {
    const key = newKey();
    const csr = certificateRequest(key, { organization: 'system:nodes', commonName: `system:node:${this.opts.nodeName}` }, this.opts.sans());
    const created = await this.opts.api.createCsr({
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { generateName: 'csr-' },
      spec: { request: Buffer.from(csr).toString('base64'), signerName: 'kubernetes.io/kubelet-serving', usages: ['digital signature', 'server auth'] },
    });
    const name = created.metadata?.name ?? '';
    // Waits for an approver and the signer (15 min, as the kubelet's certificate manager).
    const deadline = this.opts.clock.now() + 15 * 60_000;
    while (!this.stopped && this.opts.clock.now() < deadline) {
      const cur = await this.opts.api.getCsr(name);
      const refused = cur?.status?.conditions?.find((c) => c.type === 'Denied' || c.type === 'Failed');
      if (refused) throw new Error(`certificate signing request ${name} was ${refused.type.toLowerCase()}: ${refused.message ?? ''}`);
      if (cur?.status?.certificate) return { cert: Buffer.from(cur.status.certificate, 'base64'), key: Buffer.from(key.privateKeyPem) };
      await this.opts.clock.sleep(this.opts.pollMs ?? 2000);
    }
    throw new Error(`certificate signing request ${name} was not signed within 15 minutes`);
  }
}
