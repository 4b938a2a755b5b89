// An in-memory certificates.k8s.io API: CSRs kept by name, each with the user who made it, a
// watch by name, and a signer (an ECDSA CA of its own) that issues what is approved, for the
// validity the test asks. Approval is the test's: by a policy, or by hand.
import type { KeyObject } from 'node:crypto';
import { ApiError } from '../../../src/kube/client.js';
import type { CsrApi, CsrCondition, CsrObject } from '../../../src/kube/certificate-manager.js';
import type { Clock } from '../../../src/util/clock.js';
import { newKey, requestPublicKey, signCertificate, type KeyPair } from '../../../src/server/x509.js';

export interface Stored extends CsrObject {
  metadata: { name: string; uid: string; resourceVersion: string };
  spec: { request: string; signerName: string; usages: string[]; username: string };
  status: { certificate?: string; conditions?: CsrCondition[] };
}

export class FakeCsrServer {
  readonly ca: KeyPair = newKey();
  readonly csrs = new Map<string, Stored>();
  private seq = 0;
  private rv = 0;
  private watchers = new Set<{ name: string; fn: (type: string, csr: CsrObject) => void }>();
  /** What happens to a new CSR: signed at once, denied, or left for the test. */
  policy: 'sign' | 'deny' | 'none' = 'sign';
  /** Validity of issued certificates, from the clock's now. */
  lifetimeMs = 100 * 3600_000;

  constructor(private readonly clock: Clock) {}

  /** The API as `username` calls it; without watch, the manager polls. */
  as(username: string, opts: { watch?: boolean } = {}): CsrApi & { closed: number; close(): void } {
    const api = {
      closed: 0,
      close: () => void api.closed++,
      createCsr: async (body: object) => this.create(body as never, username),
      getCsr: async (name: string) => structuredClone(this.csrs.get(name)),
      watchCsr: opts.watch
        ? (name: string, _rv: string, onEvent: (type: string, csr: CsrObject) => void) => {
            const w = { name, fn: onEvent };
            this.watchers.add(w);
            let end!: () => void;
            const done = new Promise<void>((r) => (end = r));
            return { done, abort: () => (this.watchers.delete(w), end()) };
          }
        : undefined,
    };
    return api;
  }

  /** The CSRs made, oldest first. */
  list(): Stored[] {
    return [...this.csrs.values()];
  }

  private create(body: { metadata: { name?: string; generateName?: string }; spec: { request: string; signerName: string; usages: string[] } }, username: string): Stored {
    const name = body.metadata.name ?? `${body.metadata.generateName}${++this.seq}`;
    if (this.csrs.has(name)) throw new ApiError(409, `certificatesigningrequests.certificates.k8s.io "${name}" already exists`);
    const csr: Stored = { metadata: { name, uid: `uid-${name}`, resourceVersion: String(++this.rv) }, spec: { ...body.spec, username }, status: {} };
    this.csrs.set(name, csr);
    if (this.policy === 'sign') this.approve(name);
    if (this.policy === 'deny') this.deny(name, 'NotThisNode', 'the node name is not known');
    return structuredClone(csr);
  }

  approve(name: string, sign = true): void {
    const csr = this.csrs.get(name)!;
    csr.status.conditions = [...(csr.status.conditions ?? []), { type: 'Approved', status: 'True', reason: 'AutoApproved', message: 'approved by the test' }];
    if (sign) this.sign(csr);
    this.changed(csr);
  }

  deny(name: string, reason: string, message: string): void {
    const csr = this.csrs.get(name)!;
    csr.status.conditions = [{ type: 'Denied', status: 'True', reason, message }];
    this.changed(csr);
  }

  /** The public key a CSR asks for. */
  requestKey(name: string): KeyObject {
    return requestPublicKey(Buffer.from(this.csrs.get(name)!.spec.request, 'base64').toString('utf8'));
  }

  private sign(csr: Stored): void {
    const now = this.clock.now();
    const subject = { organization: 'system:nodes', commonName: 'system:node:n1' };
    const pem = signCertificate({
      subject,
      publicKey: this.requestKey(csr.metadata.name),
      issuer: { key: this.ca.privateKey, subject: { commonName: 'fake-ca' } },
      sans: [],
      notBefore: new Date(now),
      notAfter: new Date(now + this.lifetimeMs),
      usage: csr.spec.signerName === 'kubernetes.io/kubelet-serving' ? 'server' : 'client',
    });
    csr.status.certificate = Buffer.from(pem).toString('base64');
  }

  private changed(csr: Stored): void {
    csr.metadata.resourceVersion = String(++this.rv);
    for (const w of [...this.watchers]) if (w.name === csr.metadata.name) w.fn('MODIFIED', structuredClone(csr));
  }
}
