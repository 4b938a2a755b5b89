// The approver's loop: list and watch the kube-apiserver-client-kubelet CSRs, decide each pending
// one (node-client.ts), and write the decision through the CSR's approval subresource, as the
// controller-manager's approver does. A CSR left for a person is said once in the log.
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../util/clock.js';
import { CLIENT_KUBELET_SIGNER } from '../kube/certificate-manager.js';
import { apiErrorMessage, CSRS, httpCode } from '../kube/client.js';
import { listAndWatch } from '../kube/list-watch.js';
import type { WatchStream } from '../kube/reflector.js';
import { readCertificateRequest } from './csr-request.js';
import { decideNodeClientCsr, NODE_NAME_EXTRA, pendingBootstrap, type ApproverCsr, type NodeClientPolicy } from './node-client.js';

const RETRY_MS = 5_000;

/** The API calls the approver makes. */
export interface ApproverApi {
  listCsrs(fieldSelector: string): Promise<{ items: ApproverCsr[]; metadata?: { resourceVersion?: string } }>;
  getCsr(name: string): Promise<ApproverCsr | undefined>;
  /** PUT .../<name>/approval with the CSR's conditions as they should be. */
  updateApproval(csr: ApproverCsr): Promise<void>;
  nodeExists(name: string): Promise<boolean>;
  stream: WatchStream;
}

export interface ApproverOptions {
  api: ApproverApi;
  policy: NodeClientPolicy;
  clock: Clock;
  logger: Logger;
}

export class NodeClientApprover {
  private stopWatch?: () => void;
  private stopped = false;
  /** CSRs being handled now (a watch event during a decision waits for the next one). */
  private readonly busy = new Set<string>();
  /** CSRs already said to be left for a person. */
  private readonly said = new Set<string>();

  constructor(private readonly o: ApproverOptions) {}

  start(): void {
    const fieldSelector = `spec.signerName=${CLIENT_KUBELET_SIGNER}`;
    this.stopWatch = listAndWatch<ApproverCsr>({
      list: () => this.o.api.listCsrs(fieldSelector),
      stream: this.o.api.stream,
      path: CSRS,
      query: { fieldSelector },
      onList: (items) => items.forEach((c) => void this.handle(c)),
      onEvent: (type, csr) => {
        if (type === 'DELETED') this.said.delete(csr.metadata?.name ?? '');
        else void this.handle(csr);
      },
      clock: this.o.clock,
      logger: this.o.logger,
      what: 'certificatesigningrequests',
    });
  }

  stop(): void {
    this.stopped = true;
    this.stopWatch?.();
  }

  /** Decides one CSR and writes the decision; an error is logged and the next event retries. */
  async handle(csr: ApproverCsr): Promise<void> {
    const name = csr.metadata?.name ?? '';
    if (!name || this.busy.has(name)) return;
    if (!pendingBootstrap(csr, this.o.policy)) return;
    this.busy.add(name);
    try {
      let request;
      try {
        request = readCertificateRequest(Buffer.from(csr.spec?.request ?? '', 'base64').toString('latin1'));
      } catch (err) {
        request = err as Error;
      }
      const host = csr.spec?.extra?.[NODE_NAME_EXTRA]?.[0];
      const registered = host ? await this.o.api.nodeExists(this.o.policy.nodeNameFor(host)) : false;
      const d = decideNodeClientCsr(csr, request, this.o.policy, () => registered);
      if (d.action === 'ignore') return;
      if (d.action === 'leave') {
        if (!this.said.has(name)) this.o.logger.warn('certificate signing request left for a person', { csr: name, requester: csr.spec?.username, reason: d.message });
        this.said.add(name);
        return;
      }
      const condition = d.action === 'approve' ? { type: 'Approved', status: 'True', reason: 'AutoApproved', message: d.message } : { type: 'Denied', status: 'True', reason: d.reason, message: d.message };
      await this.o.api.updateApproval({ ...csr, status: { ...csr.status, conditions: [...(csr.status?.conditions ?? []), condition] } });
      if (d.action === 'approve') this.o.logger.info('certificate signing request approved', { csr: name, node: d.node, requester: csr.spec?.username });
      else this.o.logger.warn('certificate signing request denied', { csr: name, requester: csr.spec?.username, reason: d.reason, message: d.message });
    } catch (err) {
      // 409: the CSR changed meanwhile, and its MODIFIED event brings it back. Anything else
      // (the API server away) is tried again a little later: a waiting CSR sends no more events.
      if (httpCode(err) !== 409) {
        this.o.logger.warn('certificate signing request not decided', { csr: name, error: apiErrorMessage(err) });
        this.retry(name);
      }
    } finally {
      this.busy.delete(name);
    }
  }

  private retry(name: string): void {
    void this.o.clock
      .sleep(RETRY_MS)
      .then(() => (this.stopped ? undefined : this.o.api.getCsr(name)))
      .then((c) => (c ? this.handle(c) : undefined))
      .catch(() => this.retry(name));
  }
}
