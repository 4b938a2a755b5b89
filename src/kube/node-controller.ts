// The node controller: registers the Node (or adopts one of the same name), keeps its status
// (computed every nodeStatusUpdateFrequency, patched when it changed or every
// nodeStatusReportFrequency), and renews its Lease in kube-node-lease. API errors are retried with
// backoff; nothing here ever stops the agent.
import type { V1Lease, V1LeaseSpec, V1Node, V1NodeStatus } from '@kubernetes/client-node';
import type { NodeletConfig } from '../config/config.js';
import type { Logger } from '../observability/logger.js';
import type { Clock, Timer } from '../util/clock.js';
import { apiErrorMessage, httpCode, type NodeApi } from './client.js';
import { readHostInfo, type HostInfo } from './host.js';
import type { NodeConditionType } from '../eviction/thresholds.js';
import { computeNodeStatus, newNode, nodeLabels, nodeStatusChanged, nodeTaints, type RuntimeHealth } from './node-status.js';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const UNSCHEDULABLE_ANNOTATION = 'nodelet.io/unschedulable-on-shutdown';

export interface NodeControllerOptions {
  api: NodeApi;
  /** The runtime's health as last read (the agent reads it every few seconds). */
  runtimeHealth: () => RuntimeHealth;
  config: NodeletConfig;
  nodeIP: string;
  kubeletVersion: string;
  port: () => number;
  clock: Clock;
  logger: Logger;
  /** Injected for tests; read from the host otherwise. */
  host?: () => HostInfo;
  /** The pressure conditions the eviction manager reports now (none without one). */
  pressure?: () => ReadonlySet<NodeConditionType>;
  /** Whether the node is shutting down (Ready False). */
  shuttingDown?: () => boolean;
}

/** A MicroTime as the API server reads it: RFC 3339 with six fractional digits. */
export function microTime(ms: number): V1LeaseSpec['renewTime'] {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as V1LeaseSpec['renewTime'];
}

export class NodeController {
  private lastSent?: V1NodeStatus;
  private lastSentAt = 0;
  /** A lease renewal or status update failed since the status was last sent. */
  private failedSinceSent = false;
  private lease?: V1Lease;
  private node?: V1Node;
  private timers: Timer[] = [];
  private stopped = false;
  private registered = false;
  private readonly host: () => HostInfo;
  private readonly pressure: () => ReadonlySet<NodeConditionType>;
  readonly stats = { statusPatches: 0, leaseRenewals: 0, errors: 0 };

  constructor(private readonly opts: NodeControllerOptions) {
    this.host = opts.host ?? (() => readHostInfo(opts.config.podLogRoot));
    this.pressure = opts.pressure ?? (() => new Set());
  }

  get nodeObject(): V1Node | undefined {
    return this.node;
  }

  /** Registers the node and posts its first status and lease; retries until it works or stop(). */
  async start(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      try {
        await this.register();
        break;
      } catch (err) {
        this.stats.errors++;
        const delay = Math.min(30_000, 500 * 2 ** attempt++);
        this.opts.logger.warn('node registration failed, retrying', { node: this.opts.config.nodeName, error: apiErrorMessage(err), retryInMs: delay });
        await this.opts.clock.sleep(delay);
      }
    }
    await this.renewLease().catch(() => undefined);
    this.loop(this.opts.config.nodeStatusUpdateFrequencyMs, () => this.updateStatus());
    this.loop(this.opts.config.nodeLeaseRenewIntervalMs, () => this.renewLease());
  }

  async stop(opts: { markUnschedulable?: boolean } = {}): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) t.cancel();
    if (opts.markUnschedulable && this.registered) {
      try {
        await this.opts.api.patchNode(this.opts.config.nodeName, { metadata: { annotations: { [UNSCHEDULABLE_ANNOTATION]: 'true' } }, spec: { unschedulable: true } });
        this.opts.logger.info('node marked unschedulable on shutdown', { node: this.opts.config.nodeName });
      } catch (err) {
        this.opts.logger.warn('could not mark the node unschedulable', { error: apiErrorMessage(err) });
      }
    }
  }

  private loop(periodMs: number, fn: () => Promise<void>): void {
    const idx = this.timers.length;
    const tick = () => {
      if (this.stopped) return;
      this.timers[idx] = this.opts.clock.setTimer(periodMs, () => void fn().catch(() => undefined).finally(tick));
    };
    tick();
  }

  private async statusNow(previous?: V1NodeStatus): Promise<V1NodeStatus> {
    const pressure = this.pressure();
    const now = this.opts.clock.now();
    return computeNodeStatus({
      config: this.opts.config,
      host: this.host(),
      nodeIP: this.opts.nodeIP,
      kubeletVersion: this.opts.kubeletVersion,
      port: this.opts.port(),
      runtime: this.opts.runtimeHealth(),
      pressure,
      shuttingDown: this.opts.shuttingDown?.() ?? false,
      previous,
      now,
    });
  }

  private async register(): Promise<void> {
    const { config, api } = this.opts;
    const existing = await api.getNode(config.nodeName);
    if (!existing) {
      const status = await this.statusNow();
      const node = newNode(config, this.host(), status);
      try {
        this.node = await api.createNode(node);
        this.opts.logger.info('node registered', { node: config.nodeName });
      } catch (err) {
        if (httpCode(err) !== 409) throw err;
        this.node = await api.getNode(config.nodeName); // created meanwhile: adopt it
      }
      // The API ignores status on create: post it.
      this.node = await api.patchNodeStatus(config.nodeName, status);
      this.lastSent = status;
      this.lastSentAt = this.opts.clock.now();
    } else {
      // Adopt: our labels are made present; what others added stays. Taints are the node's only
      // at registration, as the kubelet's registerWithTaints: afterwards they are the cluster's
      // (the NodeRestriction admission plugin refuses a node that changes its own).
      const missing = nodeTaints(config).filter((t) => !(existing.spec?.taints ?? []).some((x) => x.key === t.key && x.effect === t.effect));
      if (missing.length) {
        this.opts.logger.warn('the existing node lacks taints of registerWithTaints; they apply only when a node registers, so they are left as they are', {
          node: config.nodeName,
          missing: missing.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`),
        });
      }
      const patch: Record<string, unknown> = { metadata: { labels: nodeLabels(config, this.host()) } };
      if (existing.metadata?.annotations?.[UNSCHEDULABLE_ANNOTATION]) {
        // We cordoned it on our last shutdown: undo that now that we are back.
        patch.metadata = { ...(patch.metadata as object), annotations: { [UNSCHEDULABLE_ANNOTATION]: null } };
        patch.spec = { unschedulable: false };
      }
      await api.patchNode(config.nodeName, patch);
      this.opts.logger.info('adopted existing node', { node: config.nodeName });
      await this.postStatus(existing.status);
    }
    this.registered = true;
  }

  private async postStatus(previous?: V1NodeStatus): Promise<void> {
    const status = await this.statusNow(previous ?? this.lastSent);
    this.node = await this.opts.api.patchNodeStatus(this.opts.config.nodeName, status);
    this.lastSent = status;
    this.lastSentAt = this.opts.clock.now();
    this.stats.statusPatches++;
  }

  /**
   * Computes the status; sends it if it changed, the report period has passed, or a call of ours
   * failed since the last one sent. The last: while we could not reach the API server, the node
   * lifecycle controller may have set Ready to Unknown, and comparing with what we last sent would
   * not show it (the kubelet reads the Node back each time instead).
   */
  async updateStatus(): Promise<void> {
    try {
      const status = await this.statusNow(this.lastSent);
      const due = this.opts.clock.now() - this.lastSentAt >= this.opts.config.nodeStatusReportFrequencyMs;
      if (!due && !this.failedSinceSent && !nodeStatusChanged(this.lastSent, status)) return;
      this.node = await this.opts.api.patchNodeStatus(this.opts.config.nodeName, status);
      this.lastSent = status;
      this.lastSentAt = this.opts.clock.now();
      this.failedSinceSent = false;
      this.stats.statusPatches++;
    } catch (err) {
      this.failedSinceSent = true;
      this.stats.errors++;
      this.opts.logger.warn('node status update failed', { node: this.opts.config.nodeName, error: apiErrorMessage(err) });
      throw err;
    }
  }

  /** Renews (or creates) the node's Lease: holder the node, duration from config, owned by the Node. */
  async renewLease(): Promise<void> {
    const { config, api } = this.opts;
    const now = microTime(this.opts.clock.now());
    try {
      if (!this.lease) this.lease = await api.getLease(NODE_LEASE_NAMESPACE, config.nodeName);
      if (!this.lease) {
        this.lease = await api.createLease(NODE_LEASE_NAMESPACE, {
          metadata: {
            name: config.nodeName,
            namespace: NODE_LEASE_NAMESPACE,
            ownerReferences: this.node?.metadata?.uid ? [{ apiVersion: 'v1', kind: 'Node', name: config.nodeName, uid: this.node.metadata.uid }] : undefined,
          },
          spec: { holderIdentity: config.nodeName, leaseDurationSeconds: config.nodeLeaseDurationSeconds, renewTime: now },
        });
      } else {
        this.lease = await api.replaceLease(NODE_LEASE_NAMESPACE, {
          ...this.lease,
          spec: { ...this.lease.spec, holderIdentity: config.nodeName, leaseDurationSeconds: config.nodeLeaseDurationSeconds, renewTime: now },
        });
      }
      this.stats.leaseRenewals++;
    } catch (err) {
      this.failedSinceSent = true;
      this.stats.errors++;
      // A conflict or a deleted lease: read it afresh next time.
      this.lease = undefined;
      this.opts.logger.warn('node lease renewal failed', { node: config.nodeName, error: apiErrorMessage(err) });
      throw err;
    }
  }
}
