import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRunArgs, UsageError } from '../../../src/cli/flags.js';
import { applyFields, ConfigError, configFieldNames, defaultConfig, loadConfigFile, parseDuration } from '../../../src/config/config.js';
import { finalizeConfig } from '../../../src/config/finalize.js';
import { projectRoot } from '../../support/cluster.js';

const dir = mkdtempSync(join(tmpdir(), 'nodelet-config-'));
function file(body: string, name = `c${Math.random().toString(16).slice(2)}.yaml`): string {
  const p = join(dir, name);
  writeFileSync(p, body);
  return p;
}
const head = 'apiVersion: nodelet.io/v1alpha1\nkind: NodeletConfiguration\n';

test('the documented deploy/config.yaml loads, with $(NODE_NAME), $(NODE_IP) and the pod\'s limits as capacity from the environment', () => {
  const env = { NODE_NAME: 'worker-1', NODE_IP: '10.1.2.3', NODELET_CAPACITY_MILLICPU: '1000', NODELET_CAPACITY_MEMORY: '2147483648' };
  const c = loadConfigFile(join(projectRoot, 'deploy/config.yaml'), env);
  assert.deepEqual(c.capacity, { cpu: '1000m', memory: '2147483648' });
  assert.deepEqual(c.systemReserved, {});
  assert.deepEqual(c.kubeReserved, { cpu: '100m', memory: '256Mi' });
  assert.throws(() => loadConfigFile(join(projectRoot, 'deploy/config.yaml'), { ...env, NODELET_CAPACITY_MEMORY: '' }), /capacity\.memory: environment variable NODELET_CAPACITY_MEMORY is not set/);
  assert.equal(c.nodeName, 'worker-1-nodelet');
  assert.equal(c.nodeIP, '10.1.2.3');
  assert.equal(c.port, 10350);
  assert.equal(c.maxPods, 110);
  assert.equal(c.syncFrequencyMs, 60_000);
  assert.deepEqual(c.crashLoopBackOff, { initialMs: 10_000, maxMs: 300_000 });
  assert.deepEqual(c.registerWithTaints, [{ key: 'nodelet.io/agent', value: 'true', effect: 'NoSchedule' }]);
  // The DaemonSet runs pods with nodelet's own process runtime, its state on the host.
  assert.equal(c.runtime, 'process');
  assert.equal(c.processRuntime.root, '/var/lib/nodelet/process');
  assert.equal(c.processRuntime.cniConfDir, '/var/lib/nodelet/cni/net.d');
});

test('the example file documents every field, and only real ones', () => {
  const text = readFileSync(join(projectRoot, 'deploy/config.yaml'), 'utf8');
  const documented = [...text.matchAll(/^#? ?([a-zA-Z]+):/gm)].map((m) => m[1]).filter((k) => k !== 'apiVersion' && k !== 'kind');
  for (const k of configFieldNames) assert.ok(documented.includes(k), `deploy/config.yaml documents ${k}`);
  for (const k of documented) assert.ok(configFieldNames.includes(k!), `${k} in deploy/config.yaml is a real field`);
});

test('bad files are refused with one line naming the field', () => {
  const cases: Array<[string, RegExp]> = [
    [`${head}nodeName: a\nfoo: 1\n`, /: unknown field "foo"$/],
    [`${head}maxPods: -1\n`, /: maxPods: -1 is out of range \(1 to 10000\)$/],
    [`${head}maxPods: "ten"\n`, /: maxPods: expected an integer, got string "ten"$/],
    [`${head}syncFrequency: 10\n`, /: syncFrequency: expected a duration such as 10s or 1m, got number 10$/],
    [`${head}runtimeEndpoint: /run/x.sock\n`, /: runtimeEndpoint: expected unix:\/\/\/path\/to\/socket, got "\/run\/x.sock"$/],
    [`${head}registerWithTaints: [{key: a, effect: Sometimes}]\n`, /: registerWithTaints\[0\]\.effect: expected NoSchedule, PreferNoSchedule or NoExecute$/],
    [`${head}systemReserved: {gpu: 1}\n`, /: systemReserved\.gpu: unknown resource/],
    [`${head}crashLoopBackOff: {initial: 1m, max: 10s}\n`, /: crashLoopBackOff\.max: must not be below crashLoopBackOff\.initial$/],
    [`${head}nodeName: $(NOPE_NOT_SET)\n`, /: nodeName: environment variable NOPE_NOT_SET is not set/],
    [`${head}logLevel: loud\n`, /: logLevel: expected one of error, warn, info, debug, got string "loud"$/],
    ['apiVersion: v1\nkind: NodeletConfiguration\n', /: apiVersion: expected nodelet.io\/v1alpha1, got string "v1"$/],
    [`${head}nodeName: [unclosed\n`, /: invalid YAML: /],
  ];
  for (const [body, re] of cases) {
    const p = file(body);
    assert.throws(() => loadConfigFile(p, {}), (e: unknown) => {
      assert.ok(e instanceof ConfigError, String(e));
      assert.ok(!(e as Error).message.includes('\n'), 'one line');
      assert.ok((e as Error).message.startsWith(p), 'names the file');
      assert.match((e as Error).message, re);
      return true;
    });
  }
  assert.throws(() => loadConfigFile(join(dir, 'missing.yaml')), /cannot read config file .*missing\.yaml: ENOENT/);
});

test('flags override the file; a node name is required and must be valid', () => {
  const p = file(`${head}nodeName: from-file\nmaxPods: 50\nport: 1234\n`);
  const c = parseRunArgs(['--config', p, '--max-pods', '7', '--node-name=from-flag'], {});
  assert.equal(c.maxPods, 7);
  assert.equal(c.nodeName, 'from-flag');
  assert.equal(c.port, 1234);
  assert.throws(() => parseRunArgs([], {}), /nodeName: required/);
  assert.throws(() => parseRunArgs(['--node-name', 'Not_Valid'], {}), /is not a valid node name/);
  assert.throws(() => parseRunArgs(['--node-name', 'a', '--max-pods', '0'], {}), (e: unknown) => e instanceof UsageError && (e as Error).message === '--max-pods: 0 is out of range (1 to 10000)');
  assert.throws(() => parseRunArgs(['--node-name', 'a', '--cpu-cfs-quota', 'maybe'], {}), /--cpu-cfs-quota: expected true or false/);
  assert.throws(() => parseRunArgs(['--node-name'], {}), /--node-name needs a value/);
});

test('durations in Go syntax', () => {
  assert.equal(parseDuration('1m30s'), 90_000);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('2h'), 7_200_000);
  assert.equal(parseDuration('10'), undefined);
});

test('node API settings: nested authentication/authorization maps merged over the defaults, their flags, and what is refused', () => {
  const c = applyFields(defaultConfig(), { authentication: { x509: { clientCAFile: '/ca.crt' }, webhook: { cacheTTL: '30s' } }, authorization: { mode: 'AlwaysAllow' } }, {});
  assert.equal(c.authentication.x509.clientCAFile, '/ca.crt');
  assert.equal(c.authentication.webhook.cacheTTLMs, 30_000);
  assert.equal(c.authentication.webhook.enabled, true, 'what the file does not name keeps its default');
  assert.equal(c.authentication.anonymous.enabled, false, 'anonymous callers are refused by default');
  assert.equal(c.authorization.mode, 'AlwaysAllow');
  assert.equal(c.authorization.webhook.cacheAuthorizedTTLMs, 300_000);
  assert.equal(defaultConfig().readOnlyPort, 0, 'no read-only port unless asked for');
  assert.throws(() => applyFields(defaultConfig(), { authentication: { x509: { caFile: 'x' } } }, {}), /^ConfigError: authentication.x509.caFile: unknown field \(clientCAFile\)$/);
  assert.throws(() => applyFields(defaultConfig(), { authorization: { mode: 'RBAC' } }, {}), /authorization.mode: expected one of Webhook, AlwaysAllow/);
  const f = parseRunArgs(['--node-name', 'n', '--client-ca-file', '/x.crt', '--anonymous-auth', 'true', '--tls-cert-file', '/c', '--tls-private-key-file', '/k']);
  assert.equal(f.authentication.x509.clientCAFile, '/x.crt');
  assert.equal(f.authentication.anonymous.enabled, true);
  assert.equal(f.authentication.webhook.enabled, true);
  assert.throws(() => parseRunArgs(['--node-name', 'n', '--tls-cert-file', '/c']), /tlsCertFile and tlsPrivateKeyFile: give both or neither/);
});

test('TLS bootstrapping: a bootstrap kubeconfig or the in-cluster service account (not both), rotation, and their flags', () => {
  const c = parseRunArgs(['--node-name', 'n', '--bootstrap-kubeconfig', '/etc/nodelet/bootstrap.kubeconfig', '--kubeconfig', '/var/lib/nodelet/kubeconfig', '--rotate-certificates', 'true', '--cert-dir', '/var/lib/nodelet/pki'], {});
  assert.equal(c.bootstrapKubeconfig, '/etc/nodelet/bootstrap.kubeconfig');
  assert.equal(c.kubeconfig, '/var/lib/nodelet/kubeconfig');
  assert.equal(c.rotateCertificates, true);
  assert.equal(c.certDir, '/var/lib/nodelet/pki');
  const f = loadConfigFile(file(`${head}nodeName: n\nbootstrapInCluster: true\nrotateCertificates: true\nkubeconfig: /var/lib/nodelet/kubeconfig\n`), {});
  assert.equal(f.bootstrapInCluster, true);
  assert.equal(defaultConfig().rotateCertificates, false, 'off by default, as the kubelet\'s');
  assert.throws(() => parseRunArgs(['--node-name', 'n', '--bootstrap-kubeconfig', '/b', '--bootstrap-in-cluster', 'true'], {}), /^ConfigError: bootstrapKubeconfig and bootstrapInCluster: give one or neither$/);
});

test('node labels: none of kubernetes.io or k8s.io but those a node may set on itself (as the kubelet checks --node-labels)', () => {
  const ok = { 'nodelet.io/agent': 'true', 'node.kubernetes.io/instance-type': 'vm', 'kubelet.kubernetes.io/x': 'y', 'topology.kubernetes.io/zone': 'z', 'example.com/k8s.io': 'fine' };
  assert.deepEqual(parseRunArgs(['--config', file(`${head}nodeName: n\nnodeLabels: ${JSON.stringify(ok)}\n`)], {}).nodeLabels, ok);
  assert.throws(
    () => parseRunArgs(['--config', file(`${head}nodeName: n\nnodeLabels: {node-role.kubernetes.io/worker: "", node-restriction.kubernetes.io/pool: a, x.k8s.io/y: z}\n`)], {}),
    /^ConfigError: nodeLabels: unknown 'kubernetes.io' or 'k8s.io' labels: node-restriction.kubernetes.io\/pool, node-role.kubernetes.io\/worker, x.k8s.io\/y \(a node may set only those beginning with kubelet.kubernetes.io, node.kubernetes.io or these: kubernetes.io\/hostname, /,
  );
});

// Found by the bad-input drill (test/drills/bad-config/): each of these was accepted, and the agent
// then started with it.
test('addresses are IP addresses; eviction thresholds within 0-100% and not negative; node labels valid', () => {
  const cases: Array<[string, RegExp]> = [
    [`${head}nodeName: a\nclusterDNS: [dns.cluster.local]\n`, /: clusterDNS: "dns\.cluster\.local" is not an IP address$/],
    [`${head}nodeName: a\nnodeIP: 10.0.0.300\n`, /: nodeIP: "10\.0\.0\.300" is not an IP address$/],
    [`${head}nodeName: a\naddress: not-an-address\n`, /: address: "not-an-address" is not an IP address$/],
    [`${head}nodeName: a\nhealthzBindAddress: localhost:10248\n`, /: healthzBindAddress: "localhost:10248" is not an IP address$/],
    [`${head}nodeName: a\nevictionHard: {nodefs.available: 150%}\n`, /: evictionHard: eviction percentage threshold nodefs\.available must be <= 100%: 150%$/],
    [`${head}nodeName: a\nevictionHard: {memory.available: -100Mi}\n`, /: evictionHard: eviction threshold memory\.available must be positive: -100Mi$/],
    [`${head}nodeName: a\nenforceNodeAllocatable: [pods, system-reserved]\n`, /: invalid configuration: systemReservedCgroup \(--system-reserved-cgroup\) must be specified when "system-reserved" or "system-reserved-compressible" included in enforceNodeAllocatable/],
    [`${head}nodeName: a\nkubeReservedCgroup: /k\nenforceNodeAllocatable: [kube-reserved, kube-reserved-compressible]\n`, /: invalid configuration: both "kube-reserved" and "kube-reserved-compressible" cannot be specified together in enforceNodeAllocatable/],
    [`${head}nodeName: a\nenforceNodeAllocatable: [pods, all]\n`, /: invalid configuration: option "all" specified for enforceNodeAllocatable \(--enforce-node-allocatable\)\. Valid options are "pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none"$/],
    [`${head}nodeName: a\nshutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n`, /: invalid configuration: shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s$/],
    [`${head}nodeName: a\nshutdownGracePeriod: 500ms\n`, /: invalid configuration: shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec$/],
    [`${head}nodeName: a\nshutdownOnSIGTERM: true\n`, /: shutdownOnSIGTERM: needs shutdownGracePeriod/],
    [`${head}nodeName: a\nevictionMinimumReclaim: {pid.free: "1"}\n`, /: evictionMinimumReclaim: unsupported eviction signal pid\.free$/],
  ];
  for (const [body, re] of cases) assert.throws(() => finalizeConfig(loadConfigFile(file(body), {})), re);
  const ok = finalizeConfig(loadConfigFile(file(`${head}nodeName: a\nclusterDNS: [10.96.0.10, "fd00::a"]\nnodeIP: $(IP)\naddress: "::"\nevictionHard: {nodefs.available: 0%}\n`), { IP: '10.1.2.3' }));
  assert.deepEqual(ok.evictionHard, { 'nodefs.available': '0%' }, 'given, evictionHard replaces the defaults');
  const merged = finalizeConfig(loadConfigFile(file(`${head}nodeName: a\nmergeDefaultEvictionSettings: true\nevictionHard: {memory.available: 1Gi}\n`), {}));
  assert.equal(merged.evictionHard['memory.available'], '1Gi');
  assert.equal(merged.evictionHard['nodefs.inodesFree'], '5%', 'merged with the defaults when asked');
  assert.deepEqual(ok.clusterDNS, ['10.96.0.10', 'fd00::a']);
  assert.equal(ok.nodeIP, '10.1.2.3');
  assert.throws(() => parseRunArgs(['--node-name', 'a', '--cluster-dns', '10.0.0.1,not-an-ip']), (e: unknown) => e instanceof UsageError && e.message === '--cluster-dns: "not-an-ip" is not an IP address');
  assert.throws(() => parseRunArgs(['--node-name', 'a', '--config', file(`${head}nodeLabels: {"drills.nodelet.io/zone": "has spaces"}\n`)]), /nodeLabels: invalid value "has spaces" of label drills\.nodelet\.io\/zone/);
  assert.throws(() => parseRunArgs(['--node-name', 'a', '--config', file(`${head}nodeLabels: {"a/b/c": "x"}\n`)]), /nodeLabels: invalid label key "a\/b\/c"/);
  assert.deepEqual(parseRunArgs(['--node-name', 'a', '--config', file(`${head}nodeLabels: {"example.com/role": "", "tier": "web-1"}\n`)]).nodeLabels, { 'example.com/role': '', tier: 'web-1' });
});
