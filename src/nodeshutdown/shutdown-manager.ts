// Graceful node shutdown (pkg/kubelet/nodeshutdown): once the node is going down, no new pod is
// admitted, the Node says Ready False ("node is shutting down") and a NodeShutdown event, and the
// running pods are ended group by group (groups.ts) through their workers, each with its group's
// grace period and its preStop hooks, ending Failed/Terminated with a DisruptionTarget condition.
// What tells nodelet the node is going down is the agent's own SIGTERM, when the configuration asks
// for it (shutdownOnSIGTERM: a DaemonSet whose host is shutting down).
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { NodeEnded } from '../status/node-ended.js';
import { waitUntil, type Clock } from '../util/clock.js';
import { groupByPriority, NODE_SHUTDOWN_MESSAGE, NODE_SHUTDOWN_REASON, podShutdownGracePeriod, type ShutdownGroup } from './groups.js';

/** The Ready condition's message while the node shuts down. */
export const NODE_SHUTTING_DOWN = 'node is shutting down';

export interface NodeShutdownDeps {
  groups: ShutdownGroup[];
  clock: Clock;
  logger: Logger;
  activePods(): V1Pod[];
  /** Asks the pod's worker to end it now (it then finds it ended by the shutdown). */
  wake(uid: string): void;
  isTerminated(uid: string): boolean;
  nodeEvent(type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** The Node's status written now (Ready False). */
  syncNodeStatus(): Promise<void>;
}

export class NodeShutdownManager {
  private shuttingDown = false;
  /** The pods the shutdown ends, with their grace periods. */
  private readonly ending = new Map<string, number>();

  constructor(private readonly deps: NodeShutdownDeps) {}

  /** Whether graceful shutdown is configured at all. */
  get enabled(): boolean {
    return this.deps.groups.length > 0;
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Why a pod's final status is Failed, if the shutdown ended it. */
  of(uid: string): NodeEnded | undefined {
    return this.ending.has(uid) ? { reason: NODE_SHUTDOWN_REASON, message: NODE_SHUTDOWN_MESSAGE, disruptionTarget: NODE_SHUTDOWN_MESSAGE } : undefined;
  }

  gracePeriodOverride(uid: string): number | undefined {
    return this.ending.get(uid);
  }

  /** Ends every pod, group after group; resolves when the last group is done or out of time. */
  async shutdown(): Promise<void> {
    if (this.shuttingDown || !this.enabled) return;
    this.shuttingDown = true;
    const { deps } = this;
    deps.logger.info('shutdown manager detected shutdown event');
    deps.nodeEvent('Normal', 'NodeShutdown', 'Shutdown manager detected shutdown event');
    void deps.syncNodeStatus().catch((err) => deps.logger.warn('node status not written at shutdown', { error: (err as Error).message }));
    for (const group of groupByPriority(deps.groups, deps.activePods())) {
      if (!group.pods.length) continue;
      for (const pod of group.pods) {
        const uid = pod.metadata?.uid ?? '';
        const grace = podShutdownGracePeriod(group, pod);
        deps.logger.info('shutdown manager killing pod with gracePeriod', { pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, gracePeriod: grace });
        this.ending.set(uid, grace);
        deps.wake(uid);
      }
      const uids = group.pods.map((p) => p.metadata?.uid ?? '');
      if (await waitUntil(deps.clock, () => uids.every((u) => deps.isTerminated(u)), deps.clock.now() + group.gracePeriodSeconds * 1000)) deps.logger.info('done waiting for all pods in group to terminate', { gracePeriod: group.gracePeriodSeconds, priority: group.priority });
      else deps.logger.info('shutdown manager pod killing time out', { gracePeriod: group.gracePeriodSeconds, priority: group.priority });
    }
  }
}
