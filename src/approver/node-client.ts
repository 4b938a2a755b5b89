// Which bootstrap CSRs of nodelet's DaemonSet to approve. The controller-manager's approver
// approves a kube-apiserver-client-kubelet CSR for any node name once its requester may create
// certificatesigningrequests/nodeclient; given to the DaemonSet's ServiceAccount, that right would
// let one compromised node mint system:node:<any node>. This approver asks more: the requester is
// the DaemonSet's ServiceAccount through a token bound to a pod on a node (the API server puts the
// node's name in the user's extra, authentication.kubernetes.io/node-name), the CSR names exactly
// that node's nodelet, and that node is not registered yet: a bootstrap happens once per node, and
// a node whose certificate expired or was lost is re-bootstrapped by a person (kubectl certificate
// approve), as a kubelet whose bootstrap token is gone. Renewals are the node's own
// (selfnodeclient, the controller-manager's approver) and never come here.
import { CLIENT_KUBELET_SIGNER, type CsrObject } from '../kube/certificate-manager.js';
import type { CertificateRequestInfo } from './csr-request.js';

export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

/** The certificates.k8s.io/v1 fields read: the certificate manager's view of a CSR, with the requester's extra. */
export type ApproverCsr = CsrObject;

export interface NodeClientPolicy {
  /** The DaemonSet's ServiceAccount as a user: system:serviceaccount:<namespace>:<name>. */
  bootstrapUser: string;
  /** The Node nodelet registers on a host node (the DaemonSet's config: `<host>-nodelet`). */
  nodeNameFor(hostNode: string): string;
}

export type Decision =
  /** Not this approver's: another signer, another requester, or already decided. */
  | { action: 'ignore' }
  | { action: 'approve'; node: string; message: string }
  | { action: 'deny'; reason: string; message: string }
  /** Left for a person, with why. */
  | { action: 'leave'; node: string; message: string };

/** The usages the kubelet's client CSR may carry: with an RSA key, key encipherment too. */
const USAGES = [new Set(['digital signature', 'client auth']), new Set(['digital signature', 'key encipherment', 'client auth'])];

const sameSet = (a: Set<string>, b: string[]) => b.length === a.size && new Set(b).size === a.size && b.every((x) => a.has(x));

/** What the request must be to be a node's client certificate (the controller-manager's ValidateKubeletClientCSR). */
function kubeletClientProblem(req: CertificateRequestInfo, usages: string[]): string | undefined {
  if (!req.signatureValid) return 'the request is not signed by the key it asks a certificate for';
  if (req.organizations.length !== 1 || req.organizations[0] !== 'system:nodes') return 'the subject\'s organization is not exactly "system:nodes"';
  if (req.dnsNames.length || req.emailAddresses.length || req.ipAddresses.length || req.uris.length || req.otherNames) return 'a node\'s client certificate names no subjectAltName';
  if (req.commonNames.length !== 1 || !req.commonNames[0]!.startsWith('system:node:')) return 'the subject\'s common name is not system:node:<name>';
  if (!USAGES.some((u) => sameSet(u, usages))) return 'usages are not [digital signature, client auth] (with an RSA key, key encipherment too)';
  return undefined;
}

/** A CSR of this approver's (the bootstrap signer, the DaemonSet's requester) that nothing has decided yet. */
export function pendingBootstrap(csr: ApproverCsr, policy: NodeClientPolicy): boolean {
  if (csr.spec?.signerName !== CLIENT_KUBELET_SIGNER || csr.spec.username !== policy.bootstrapUser) return false;
  return !csr.status?.certificate && !csr.status?.conditions?.some((c) => c.type === 'Approved' || c.type === 'Denied');
}

/**
 * The decision for one CSR. `request` is the parsed spec.request (an Error when it did not parse);
 * `nodeRegistered` says whether the Node the CSR names exists.
 */
export function decideNodeClientCsr(csr: ApproverCsr, request: CertificateRequestInfo | Error, policy: NodeClientPolicy, nodeRegistered: (name: string) => boolean): Decision {
  if (!pendingBootstrap(csr, policy)) return { action: 'ignore' };
  const spec = csr.spec ?? {};
  if (request instanceof Error) return { action: 'deny', reason: 'InvalidRequest', message: `spec.request is not a certificate request: ${request.message}` };
  const problem = kubeletClientProblem(request, spec.usages ?? []);
  if (problem) return { action: 'deny', reason: 'NotNodeClientCertificate', message: problem };
  const hosts = spec.extra?.[NODE_NAME_EXTRA] ?? [];
  if (hosts.length !== 1 || !hosts[0]) {
    return {
      action: 'deny',
      reason: 'NotBoundToNode',
      message: `${policy.bootstrapUser} asked with a token not bound to a pod on a node (no ${NODE_NAME_EXTRA} in its user info): only a nodelet pod's own ServiceAccount token says which node it may ask for`,
    };
  }
  const own = policy.nodeNameFor(hosts[0]);
  const asked = request.commonNames[0]!.slice('system:node:'.length);
  if (asked !== own) {
    return {
      action: 'deny',
      reason: 'NotOwnNode',
      message: `asked for system:node:${asked} with the token of a pod on node ${hosts[0]}: a nodelet there may ask only for system:node:${own}`,
    };
  }
  if (nodeRegistered(own)) {
    return {
      action: 'leave',
      node: own,
      message: `node ${own} is registered already: its bootstrap is over, and a new bootstrap (an expired or lost certificate) is approved by a person: kubectl certificate approve ${csr.metadata?.name ?? ''}`,
    };
  }
  return { action: 'approve', node: own, message: `Auto approving the bootstrap client certificate of node ${own}: asked for by the nodelet pod on ${hosts[0]}, before the node registered.` };
}

/** The policy of deploy/: ServiceAccount kube-system/nodelet, nodes named `<host>-nodelet`. */
export function nodeletPolicy(serviceAccount: string, nodeSuffix: string): NodeClientPolicy {
  const [ns, name, ...more] = serviceAccount.split('/');
  if (!ns || !name || more.length) throw new Error(`--service-account ${JSON.stringify(serviceAccount)} is not NAMESPACE/NAME`);
  return { bootstrapUser: `system:serviceaccount:${ns}:${name}`, nodeNameFor: (host) => `${host}${nodeSuffix}` };
}
