// The suites `make conformance` runs (SUITE=common|node-e2e): which Kubernetes test binary, which
// of its specs, with which flags, and where their results go.

export type SuiteName = 'common' | 'node-e2e';
export const SUITE_NAMES: SuiteName[] = ['common', 'node-e2e'];

/** What a suite's flags depend on: the cluster, the node, the agent under test. */
export interface SuiteContext {
  kubeconfig: string;
  node: string;
  /** The agent's CRI endpoint (unix://...). */
  runtimeEndpoint: string;
  /** The API server the node e2e suite talks to (one that dials nodes by InternalIP), and its admin token. */
  nodeE2EApiserver: string;
  token: string;
  reportDir: string;
}

export interface Suite {
  name: SuiteName;
  title: string;
  /** The test binary's name under the cache's bin/ (with -<kube version>). */
  binary: 'e2e.test' | 'e2e_node.test';
  labelFilter: string;
  /** Ginkgo's --focus-file: the spec files of the suite. */
  specFiles: string;
  /** Ginkgo's --skip-file, if any. */
  skipFiles?: string;
  /** The results of a whole run, under the project root. */
  resultsFile: string;
  /** The README sections the whole run rewrites (between `<!-- <markers>:begin/end -->`). */
  markers: string;
  /** The node's address must be one the API server proxies to (the node e2e suite reads /configz that way). */
  proxiedNode: boolean;
  flags(ctx: SuiteContext): string[];
}

const NOT_SERIAL = '!Serial && !Slow && !Disruptive && !Flaky';

/**
 * The [NodeConformance] specs of test/e2e/common run by e2e.test against the cluster:
 * --provider=skeleton: no cloud provider, so the framework makes no provider calls;
 * --disable-log-dump: the end-of-suite log dump runs a provider's scripts, which a skeleton has none of.
 * Everything else is e2e.test's default (the namespaces' default ServiceAccounts exist: the
 * controller-manager creates them; the node must be Ready and schedulable: it is).
 */
export const COMMON: Suite = {
  name: 'common',
  title: '[NodeConformance] specs of test/e2e/common',
  binary: 'e2e.test',
  labelFilter: `NodeConformance && ${NOT_SERIAL} && Feature: isEmpty`,
  specFiles: 'test/e2e/common/(node|storage)/',
  resultsFile: 'test/conformance/results/latest.json',
  markers: 'conformance-results',
  proxiedNode: false,
  flags: (ctx) => ['--provider=skeleton', `--kubeconfig=${ctx.kubeconfig}`, '--disable-log-dump'],
};

/**
 * The kubelet's node e2e suite (test/e2e_node) as its own docs run it against a node that is
 * already up: no services of its own (--start-services=false), the API server given by --host
 * and a bearer token (it ignores kubeconfig), the node by name; it calls the agent's CRI endpoint
 * directly in some specs. Its images are not pre-pulled (--prepull-images=false): they are the
 * cluster's, imported offline, and an image it lacks fails the spec that needs it on every agent.
 * Its system validation (kernel, cgroups) runs in BeforeSuite, as upstream.
 */
export const NODE_E2E: Suite = {
  name: 'node-e2e',
  title: '[NodeConformance] specs of test/e2e_node',
  binary: 'e2e_node.test',
  labelFilter: `NodeConformance && ${NOT_SERIAL}`,
  specFiles: 'test/e2e_node/',
  skipFiles: 'test/e2e/common/',
  resultsFile: 'test/conformance/results/node-e2e.json',
  markers: 'node-e2e-results',
  proxiedNode: true,
  flags: (ctx) => [
    '--start-services=false',
    '--stop-services=false',
    '--prepull-images=false',
    `--host=${ctx.nodeE2EApiserver}`,
    `--bearer-token=${ctx.token}`,
    `--node-name=${ctx.node}`,
    `--container-runtime-endpoint=${ctx.runtimeEndpoint}`,
    `--image-service-endpoint=${ctx.runtimeEndpoint}`,
    `--report-dir=${ctx.reportDir}`,
  ],
};

export const SUITES: Record<SuiteName, Suite> = { common: COMMON, 'node-e2e': NODE_E2E };

export function suiteNamed(name: string): Suite {
  const s = SUITES[name as SuiteName];
  if (!s) throw new Error(`SUITE: unknown suite ${name} (${SUITE_NAMES.join(', ')})`);
  return s;
}
