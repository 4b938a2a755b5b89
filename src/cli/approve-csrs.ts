// `nodelet approve-csrs`: the approver of the DaemonSet's bootstrap CSRs (src/approver), as a
// process of its own (deploy/approver.yaml runs it as a Deployment, away from nodelet's nodes: the
// right to approve node certificates must not live on a node).
import { NodeClientApprover, type ApproverApi } from '../approver/controller.js';
import { nodeletPolicy } from '../approver/node-client.js';
import { KubeClient } from '../kube/client.js';
import { restWatch } from '../kube/reflector.js';
import { inClusterConnection, loadKubeconfig, RestClient } from '../kube/rest.js';
import { createLogger, type LogLevel } from '../observability/logger.js';
import { realClock } from '../util/clock.js';
import { UsageError } from './flags.js';

/** The approver's calls, through the agent's own API client. */
export function restApproverApi(rest: RestClient): ApproverApi {
  const client = new KubeClient(rest);
  return {
    listCsrs: (fieldSelector) => client.listCsrs(fieldSelector),
    getCsr: (name) => client.getCsr(name),
    updateApproval: (csr) => client.updateCsrApproval(csr),
    nodeExists: async (name) => (await client.getNode(name)) !== undefined,
    stream: restWatch(rest),
  };
}

export interface ApproveCsrsFlags {
  kubeconfig?: string;
  'service-account'?: string;
  'node-suffix'?: string;
  'log-level'?: string;
  'log-format'?: string;
}

export async function approveCsrs(values: ApproveCsrsFlags): Promise<void> {
  let policy;
  try {
    policy = nodeletPolicy(values['service-account'] ?? 'kube-system/nodelet', values['node-suffix'] ?? '-nodelet');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const level = (values['log-level'] ?? 'info') as LogLevel;
  if (!['debug', 'info', 'warn', 'error'].includes(level)) throw new UsageError(`--log-level ${JSON.stringify(level)} is not one of debug, info, warn, error`);
  const format = values['log-format'];
  if (format !== undefined && format !== 'json' && format !== 'text') throw new UsageError(`--log-format ${JSON.stringify(format)} is not one of json, text`);
  const logger = createLogger({ level, format });
  let rest: RestClient;
  try {
    rest = new RestClient(values.kubeconfig ? loadKubeconfig(values.kubeconfig) : inClusterConnection());
  } catch (err) {
    logger.error('approver failed to start', { error: (err as Error).message });
    process.exit(1);
  }
  const approver = new NodeClientApprover({ api: restApproverApi(rest), policy, clock: realClock, logger });
  approver.start();
  logger.info('approving nodelet bootstrap CSRs', { requester: policy.bootstrapUser, nodes: `<host>${values['node-suffix'] ?? '-nodelet'}` });
  const hold = setInterval(() => undefined, 60_000);
  await new Promise<void>((resolve) => {
    for (const s of ['SIGTERM', 'SIGINT'] as const) process.once(s, () => resolve());
  });
  clearInterval(hold);
  approver.stop();
  rest.close();
}
