// Certificates a node asks the cluster for, as the kubelet's certificate manager does: an ECDSA
// P-256 key and a CertificateSigningRequest to a signer, a wait (watching the CSR) until an
// approver approves it and the signer issues it, the pair kept in a CertificateStore, and a new
// one asked for at a random point between 70% and 90% of its life. One manager serves the node's
// client certificate (kube-apiserver-client-kubelet, renewed with the node's own identity, and
// asked for with bootstrap credentials while there is none) and the node API's serving one
// (kubelet-serving).
//
//   start ── valid pair kept? ──yes──▶ use it ─▶ timer at 70-90% ─▶ renew ─┐
//                │ no                                    ▲                  │ issued: store, use
//                └──────────────────▶ request now ───────┘◀── back-off ─────┘ refused / failed
import { createHash, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../observability/logger.js';
import { certificateRequest, keyFromPem, newKey, requestPublicKey, samePublicKey, type KeyPair, type Subject } from '../server/x509.js';
import type { Clock, Timer } from '../util/clock.js';
import { goDuration } from '../util/duration.js';
import { parsePair, type CertificateStore, type KeyAndCertificate, type StoredPair } from './certificate-store.js';

export const CLIENT_KUBELET_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
/** What the kubelet asks for with an ECDSA key (key encipherment is for RSA keys only). */
export const CLIENT_USAGES = ['digital signature', 'client auth'];
export const SERVING_USAGES = ['digital signature', 'server auth'];
const DAY_MS = 24 * 3600_000;

export interface CsrCondition {
  type: string;
  status?: string;
  reason?: string;
  message?: string;
}

/** The fields of a certificates.k8s.io/v1 CertificateSigningRequest the manager reads. */
export interface CsrObject {
  metadata?: { name?: string; uid?: string; resourceVersion?: string };
  spec?: { request?: string; signerName?: string; usages?: string[]; username?: string; extra?: Record<string, string[]> };
  status?: { certificate?: string; conditions?: CsrCondition[] };
}

/** The API calls a CSR takes. */
export interface CsrApi {
  createCsr(body: object): Promise<CsrObject>;
  /** undefined when it does not exist. */
  getCsr(name: string): Promise<CsrObject | undefined>;
  /** Events of one CSR from `resourceVersion` on; without it, the wait reads the CSR every pollMs. */
  watchCsr?(name: string, resourceVersion: string, onEvent: (type: string, csr: CsrObject) => void): { done: Promise<void>; abort(): void };
}

export interface CertificateTemplate {
  signerName: string;
  usages: string[];
  subject: Subject;
  /** subjectAltNames (a serving certificate's); none for a client certificate. */
  sans?: () => string[];
}

/** When to ask for the next certificate: a random point between 70% and 90% of this one's life. */
export function renewAt(notBeforeMs: number, notAfterMs: number, random = Math.random()): number {
  const life = notAfterMs - notBeforeMs;
  return notBeforeMs + Math.round((life * (7 + 2 * random)) / 10);
}

/** The CertificateSigningRequest object for a PKCS#10 request: named, or csr-<random> by the server. */
export function csrBody(requestPem: string, t: Pick<CertificateTemplate, 'signerName' | 'usages'>, name?: string): object {
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: name ? { name } : { generateName: 'csr-' },
    spec: { request: Buffer.from(requestPem).toString('base64'), signerName: t.signerName, usages: t.usages },
  };
}

/**
 * The name of a bootstrap CSR, node-csr-<digest>, from what it asks for (the public key, the
 * subject and the usages; the request's own bytes differ at each signing): a node that restarts
 * while it waits finds its CSR again instead of making another.
 */
export function bootstrapCsrName(publicKey: KeyObject, subject: Subject, usages: string[]): string {
  const h = createHash('sha512-256');
  const part = (data: Buffer | string) => {
    h.update(Buffer.from(data).toString('base64url'));
    h.update('|');
  };
  part(publicKey.export({ type: 'spki', format: 'der' }));
  part(subject.commonName);
  if (subject.organization) part(subject.organization);
  for (const u of usages) part(u);
  return `node-csr-${h.digest('base64url')}`;
}

/** A CSR that was denied or failed: its condition's reason and message. */
export class CsrRefusedError extends Error {
  constructor(
    readonly csrName: string,
    readonly condition: CsrCondition,
  ) {
    super(`certificate signing request ${csrName} was ${condition.type === 'Denied' ? 'denied' : 'failed'}${condition.reason ? ` (reason ${condition.reason})` : ''}: ${condition.message || 'no message'}`);
    this.name = 'CsrRefusedError';
  }
}

/** What a CSR's status says: refused, issued, approved (and waiting for its signer), or pending. */
export function csrState(csr: CsrObject): { refused?: CsrCondition; approved?: CsrCondition; certificate?: string } {
  const conditions = csr.status?.conditions ?? [];
  const refused = conditions.find((c) => (c.type === 'Denied' || c.type === 'Failed') && c.status !== 'False');
  const approved = conditions.find((c) => c.type === 'Approved' && c.status !== 'False');
  return { refused, approved, certificate: approved && csr.status?.certificate ? csr.status.certificate : undefined };
}

export interface WaitOptions {
  api: CsrApi;
  name: string;
  /** The CSR we made: one of the same name with another UID is not ours. */
  uid?: string;
  /** Give up after this long. */
  timeoutMs: number;
  pollMs: number;
  clock: Clock;
  logger: Logger;
  /** For the log lines: "client certificate", ... */
  what: string;
  /** Why nothing has approved it yet, and what would: said while it waits. */
  hint: (csr: CsrObject) => string;
  stopped: () => boolean;
}

/** Waits until the CSR is issued (its certificate, PEM) or refused (CsrRefusedError). */
export async function waitForCertificate(o: WaitOptions): Promise<Buffer> {
  const { clock, logger } = o;
  const started = clock.now();
  const deadline = started + o.timeoutMs;
  // Said after 30 s, then 1, 2 and 4 minutes later, then every 5 minutes.
  let reportEvery = 30_000;
  let nextReport = started + reportEvery;
  let saidApproved = false;
  let csr = await o.api.getCsr(o.name);
  for (;;) {
    if (!csr) throw new Error(`certificate signing request ${o.name} was deleted before it was issued`);
    if (o.uid && csr.metadata?.uid && csr.metadata.uid !== o.uid) throw new Error(`certificate signing request ${o.name} was replaced by another of the same name`);
    const state = csrState(csr);
    if (state.refused) throw new CsrRefusedError(o.name, state.refused);
    if (state.certificate) return Buffer.from(state.certificate, 'base64');
    if (state.approved && !saidApproved) {
      saidApproved = true;
      logger.info(`${o.what}: certificate signing request approved, waiting for the signer`, { csr: o.name, reason: state.approved.reason, message: state.approved.message });
    }
    if (o.stopped()) throw new Error('stopped');
    const now = clock.now();
    if (now >= deadline) throw new Error(`certificate signing request ${o.name} was not ${state.approved ? 'issued' : 'approved'} within ${goDuration(o.timeoutMs)}`);
    if (now >= nextReport) {
      const waited = goDuration(Math.round((now - started) / 1000) * 1000);
      if (state.approved) logger.warn(`${o.what}: certificate signing request ${o.name} approved but not issued after ${waited}: is the signer ${csr.spec?.signerName ?? ''} running (the controller-manager's csrsigning controller)?`, { csr: o.name });
      else logger.warn(`${o.what}: certificate signing request ${o.name} not approved after ${waited}: ${o.hint(csr)}`, { csr: o.name, requester: csr.spec?.username });
      reportEvery = Math.min(5 * 60_000, reportEvery * 2);
      nextReport = now + reportEvery;
    }
    csr = await nextState(o, csr, Math.min(deadline, nextReport));
  }
}

/**
 * The CSR's next state: from a watch (the next event) where the API has one, else read again
 * after pollMs; read again too by `untilMs`, or when the watch ends or fails.
 */
async function nextState(o: WaitOptions, csr: CsrObject, untilMs: number): Promise<CsrObject | undefined> {
  const { clock } = o;
  const rv = csr.metadata?.resourceVersion;
  if (!o.api.watchCsr || !rv) {
    await clock.sleep(Math.max(0, Math.min(o.pollMs, untilMs - clock.now())));
    return o.api.getCsr(o.name);
  }
  let timer: Timer | undefined;
  let w: { done: Promise<void>; abort(): void } | undefined;
  const event = await new Promise<CsrObject | 'deleted' | 'read' | 'ended'>((resolve) => {
    timer = clock.setTimer(Math.max(0, Math.min(30_000, untilMs - clock.now())), () => resolve('read'));
    w = o.api.watchCsr!(o.name, rv, (type, obj) => {
      if (type === 'DELETED') resolve('deleted');
      else if (type === 'ADDED' || type === 'MODIFIED') resolve(obj);
    });
    w.done.then(
      () => resolve('ended'),
      () => resolve('ended'),
    );
  });
  timer?.cancel();
  w?.abort();
  if (event === 'deleted') return undefined;
  if (typeof event === 'object') return event;
  // A watch that ends at once (refused, say) must not spin: wait a poll period first.
  if (event === 'ended') await clock.sleep(Math.max(0, Math.min(o.pollMs, untilMs - clock.now())));
  return o.api.getCsr(o.name);
}

/**
 * Where a node without a valid certificate asks for one: its bootstrap credentials (an API made
 * for the request and closed after), and the file its key waits in until the certificate comes,
 * so that a restart asks again with the same key and finds the same CSR (node-csr-<digest>).
 */
export interface BootstrapCredentials {
  api: () => CsrApi & { close?(): void };
  keyFile: string;
}

export interface CertificateManagerOptions {
  /** For log lines: "client certificate", "serving certificate". */
  what: string;
  template: CertificateTemplate;
  store: CertificateStore;
  /** The API renewals are asked through (for a client certificate, the node's identity as it is then). */
  api: CsrApi;
  bootstrap?: BootstrapCredentials;
  /** A pair to start from when the store holds no valid one (a kubeconfig's). */
  initial?: KeyAndCertificate;
  /** Renew at 70-90% of the life; without it the pair is kept until it is no longer valid at a start. */
  rotate: boolean;
  /** Every pair taken into use: the first one, then each renewal (`rotated`). */
  onCertificate: (pair: StoredPair, rotated: boolean) => void;
  /** Why nothing has approved a CSR yet, and what would (`bootstrap`: asked with the bootstrap credentials). */
  approvalHint: (csr: CsrObject, bootstrap: boolean) => string;
  clock: Clock;
  logger: Logger;
  random?: () => number;
  /** How often a CSR is read while it waits without a watch (2 s). */
  pollMs?: number;
  /** How long one CSR is waited for: 15 min as the kubelet's rotation (a bootstrap CSR: 1 h). */
  waitMs?: number;
  bootstrapWaitMs?: number;
  /** After a failed request: initial, doubled each time, capped (2 s to 5 min). */
  backoff?: { initialMs: number; maxMs: number };
}

export class CertificateManager {
  private current?: StoredPair;
  private timer?: Timer;
  private stopped = false;
  private failures = 0;
  private resolveFirst!: (got: boolean) => void;
  /** Resolves true with the first pair in use, false if stopped before there is one. */
  readonly first: Promise<boolean>;

  constructor(private readonly opts: CertificateManagerOptions) {
    this.first = new Promise((r) => (this.resolveFirst = r));
  }

  /** Uses a kept pair that is still valid (no CSR then), else asks for one now; renews in the background. */
  start(): void {
    const now = this.opts.clock.now();
    const kept = [this.opts.store.current(), this.initialPair()].find((p) => p && p.notAfter > now);
    if (!kept) {
      this.schedule(now);
      return;
    }
    this.take(kept, false);
    this.opts.logger.info(`${this.opts.what}: using the one kept`, { file: this.opts.store.currentPath, notAfter: new Date(kept.notAfter).toISOString() });
    if (this.opts.rotate) this.scheduleRenewal(kept);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.resolveFirst(false);
  }

  /** The pair in use. */
  get certificate(): StoredPair | undefined {
    return this.current;
  }

  private initialPair(): StoredPair | undefined {
    if (!this.opts.initial) return undefined;
    try {
      return parsePair(this.opts.initial);
    } catch {
      return undefined;
    }
  }

  private take(pair: StoredPair, rotated: boolean): void {
    this.current = pair;
    this.opts.onCertificate(pair, rotated);
    this.resolveFirst(true);
  }

  private schedule(atMs: number): void {
    if (this.stopped) return;
    this.timer?.cancel();
    const delay = Math.max(0, atMs - this.opts.clock.now());
    // A renewal months away is reached a day at a time: a timer longer than 2^31 ms fires at once.
    if (delay > DAY_MS) this.timer = this.opts.clock.setTimer(DAY_MS, () => this.schedule(atMs));
    else this.timer = this.opts.clock.setTimer(delay, () => void this.renew());
  }

  private scheduleRenewal(pair: StoredPair): void {
    const at = renewAt(pair.notBefore, pair.notAfter, (this.opts.random ?? Math.random)());
    this.opts.logger.info(`${this.opts.what}: renewal scheduled`, { at: new Date(at).toISOString(), notAfter: new Date(pair.notAfter).toISOString() });
    this.schedule(at);
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    try {
      const usedBootstrap = this.needsBootstrap();
      const pair = await this.request(usedBootstrap);
      if (this.stopped) return;
      const file = this.opts.store.update(pair, this.opts.clock.now());
      if (usedBootstrap) rmSync(this.opts.bootstrap!.keyFile, { force: true });
      this.failures = 0;
      const rotated = this.current !== undefined;
      this.take(pair, rotated);
      this.opts.logger.info(`${this.opts.what}: ${rotated ? 'renewed' : 'issued'}`, { file, notAfter: new Date(pair.notAfter).toISOString() });
      if (this.opts.rotate) this.scheduleRenewal(pair);
    } catch (err) {
      if (this.stopped) return;
      const b = this.opts.backoff ?? { initialMs: 2000, maxMs: 5 * 60_000 };
      const base = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(this.failures++, 20));
      const delay = Math.round(base * (1 + 0.1 * (this.opts.random ?? Math.random)()));
      this.opts.logger.warn(`${this.opts.what}: request failed; asking again in ${goDuration(delay)}`, { error: (err as Error).message });
      this.schedule(this.opts.clock.now() + delay);
    }
  }

  /** No valid pair to ask with: the bootstrap credentials ask, where there are some. */
  private needsBootstrap(): boolean {
    return !!this.opts.bootstrap && !(this.current && this.current.notAfter > this.opts.clock.now());
  }

  private async request(bootstrap: boolean): Promise<StoredPair> {
    const t = this.opts.template;
    const { logger } = this.opts;
    const key = bootstrap ? this.bootstrapKey() : newKey();
    const pem = certificateRequest(key, t.subject, t.sans?.() ?? []);
    const bootApi = bootstrap ? this.opts.bootstrap!.api() : undefined;
    const api = bootApi ?? this.opts.api;
    try {
      let csr: CsrObject;
      if (bootstrap) {
        const name = bootstrapCsrName(key.publicKey, t.subject, t.usages);
        csr = await this.createOrFind(api, name, pem, key);
      } else {
        csr = await api.createCsr(csrBody(pem, t));
      }
      const name = csr.metadata?.name ?? '';
      logger.info(`${this.opts.what}: certificate signing request made, waiting for it to be approved and issued`, {
        csr: name,
        signer: t.signerName,
        subject: `CN=${t.subject.commonName}${t.subject.organization ? `, O=${t.subject.organization}` : ''}`,
        with: bootstrap ? 'bootstrap credentials' : 'current identity',
      });
      const cert = await waitForCertificate({
        api,
        name,
        uid: csr.metadata?.uid,
        timeoutMs: bootstrap ? (this.opts.bootstrapWaitMs ?? 3600_000) : (this.opts.waitMs ?? 15 * 60_000),
        pollMs: this.opts.pollMs ?? 2000,
        clock: this.opts.clock,
        logger,
        what: this.opts.what,
        hint: (c) => this.opts.approvalHint(c, bootstrap),
        stopped: () => this.stopped,
      });
      try {
        return parsePair({ cert, key: Buffer.from(key.privateKeyPem) });
      } catch (err) {
        throw new Error(`the certificate issued for ${name} is not usable: ${(err as Error).message}`);
      }
    } catch (err) {
      // A refused request is not asked again with the same key (it would find the same CSR).
      if (bootstrap && err instanceof CsrRefusedError) rmSync(this.opts.bootstrap!.keyFile, { force: true });
      throw err;
    } finally {
      bootApi?.close?.();
    }
  }

  /** The key a bootstrap request waits with: the one kept from an earlier try, or a new one kept now. */
  private bootstrapKey(): KeyPair {
    const file = this.opts.bootstrap!.keyFile;
    if (existsSync(file)) {
      try {
        return keyFromPem(readFileSync(file, 'utf8'));
      } catch {
        // Unreadable: replaced below.
      }
    }
    const key = newKey();
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, key.privateKeyPem, { mode: 0o600 });
    return key;
  }

  /** Creates the named CSR; one of that name made by an earlier start with the same key is taken up again. */
  private async createOrFind(api: CsrApi, name: string, pem: string, key: KeyPair): Promise<CsrObject> {
    try {
      return await api.createCsr(csrBody(pem, this.opts.template, name));
    } catch (err) {
      if ((err as { code?: unknown }).code !== 409) throw err;
    }
    const found = await api.getCsr(name);
    if (!found) throw new Error(`certificate signing request ${name} exists and then does not: asking again`);
    const theirs = found.spec?.request ? requestPublicKey(Buffer.from(found.spec.request, 'base64').toString('utf8')) : undefined;
    if (found.spec?.signerName !== this.opts.template.signerName || !theirs || !samePublicKey(theirs, key.publicKey)) {
      throw new Error(`certificate signing request ${name} exists but is not ours (another signer or key)`);
    }
    this.opts.logger.info(`${this.opts.what}: found the certificate signing request of an earlier start`, { csr: name });
    return found;
  }
}
