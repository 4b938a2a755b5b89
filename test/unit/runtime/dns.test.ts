// The pod's DNS by dnsPolicy, as the kubelet's configurer chooses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { parseResolvConf, podDns } from '../../../src/runtime/dns.js';

const host = () => ({ servers: ['192.0.2.53'], searches: ['corp.example'], options: ['timeout:2'] });
const pod = (spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers: [], ...spec } });
const settings = { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf: '/etc/resolv.conf' };

test('ClusterFirst: the cluster\'s servers, the namespace\'s search path before the node\'s, ndots:5', () => {
  assert.deepEqual(podDns(pod(), settings, host).config, {
    servers: ['10.96.0.10'],
    searches: ['ns.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example'],
    options: ['ndots:5'],
  });
  // On the host network ClusterFirst is Default; ClusterFirstWithHostNet is not.
  assert.equal(podDns(pod({ hostNetwork: true }), settings, host).config, undefined);
  assert.deepEqual(podDns(pod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }), settings, host).config?.servers, ['10.96.0.10']);
});

test('no cluster DNS: the node\'s file, and the kubelet\'s MissingClusterDNS warning', () => {
  const r = podDns(pod(), { ...settings, clusterDNS: [] }, host);
  assert.equal(r.config, undefined);
  assert.equal(r.missingClusterDNS, 'pod: "p_ns(u)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.');
  assert.equal(podDns(pod({ dnsPolicy: 'Default' }), { ...settings, clusterDNS: [] }, host).missingClusterDNS, undefined);
});

test('None takes only dnsConfig; dnsConfig merges in (duplicates dropped, options by name, at most 3 servers)', () => {
  assert.deepEqual(podDns(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], searches: ['a.example'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] } }), settings, host).config, {
    servers: ['1.1.1.1'],
    searches: ['a.example'],
    options: ['ndots:2', 'edns0'],
  });
  const merged = podDns(pod({ dnsPolicy: 'Default', dnsConfig: { nameservers: ['192.0.2.53', '1.1.1.1', '8.8.8.8', '9.9.9.9'], options: [{ name: 'timeout', value: '5' }] } }), settings, host).config!;
  assert.deepEqual(merged.servers, ['192.0.2.53', '1.1.1.1', '8.8.8.8']);
  assert.deepEqual(merged.options, ['timeout:5']);
});

test('resolv.conf parsing: comments skipped, the last search line wins, options merged by name', () => {
  assert.deepEqual(parseResolvConf('# c\nnameserver 1.2.3.4\nsearch a. b\nsearch c d.\noptions ndots:1 rotate\noptions ndots:3\nnameserver 5.6.7.8\n'), {
    servers: ['1.2.3.4', '5.6.7.8'],
    searches: ['c', 'd'],
    options: ['ndots:3', 'rotate'],
  });
});
