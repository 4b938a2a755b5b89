// Service-link variables as the kubelet makes them: names, ports, the Docker-link set, the
// kubernetes Service always, enableServiceLinks, headless Services left out; and the container's
// own variables over them, $(VAR) able to use them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { makeEnvironment } from '../../../src/runtime/env.js';
import { serviceEnvVars, servicesForPod } from '../../../src/runtime/service-env.js';

const svc = (ns: string, name: string, clusterIP: string, ports: Array<{ port: number; name?: string; protocol?: string }>): V1Service => ({ metadata: { name, namespace: ns }, spec: { clusterIP, ports } });
const kubernetes = svc('default', 'kubernetes', '10.96.0.1', [{ port: 443, name: 'https' }]);
const pod = (ns: string, enableServiceLinks?: boolean): V1Pod => ({ metadata: { name: 'p', namespace: ns }, spec: { enableServiceLinks, containers: [{ name: 'c' }] } });

test('the variables of a Service: host, ports by name, and the Docker-link set per port', () => {
  const env = serviceEnvVars([svc('ns', 'foo-svc', '10.96.0.7', [{ port: 80, name: 'http' }, { port: 53, name: 'dns', protocol: 'UDP' }])]);
  assert.deepEqual(Object.fromEntries(env), {
    FOO_SVC_SERVICE_HOST: '10.96.0.7',
    FOO_SVC_SERVICE_PORT: '80',
    FOO_SVC_SERVICE_PORT_HTTP: '80',
    FOO_SVC_SERVICE_PORT_DNS: '53',
    FOO_SVC_PORT: 'tcp://10.96.0.7:80',
    FOO_SVC_PORT_80_TCP: 'tcp://10.96.0.7:80',
    FOO_SVC_PORT_80_TCP_PROTO: 'tcp',
    FOO_SVC_PORT_80_TCP_PORT: '80',
    FOO_SVC_PORT_80_TCP_ADDR: '10.96.0.7',
    FOO_SVC_PORT_53_UDP: 'udp://10.96.0.7:53',
    FOO_SVC_PORT_53_UDP_PROTO: 'udp',
    FOO_SVC_PORT_53_UDP_PORT: '53',
    FOO_SVC_PORT_53_UDP_ADDR: '10.96.0.7',
  });
  assert.equal(serviceEnvVars([svc('ns', 'v6', 'fd00::1', [{ port: 80 }])]).get('V6_PORT'), 'tcp://[fd00::1]:80');
});

test('which Services: the namespace\'s with a cluster IP, the kubernetes Service always, the namespace\'s own of that name first', () => {
  const own = [svc('ns', 'a', '10.96.0.2', [{ port: 1 }]), svc('ns', 'headless', 'None', [{ port: 2 }])];
  assert.deepEqual(servicesForPod(pod('ns'), own, [kubernetes]).map((s) => s.metadata!.name).sort(), ['a', 'kubernetes']);
  assert.deepEqual(servicesForPod(pod('ns', false), own, [kubernetes]).map((s) => s.metadata!.name), ['kubernetes'], 'enableServiceLinks: false keeps only the API server\'s');
  const shadow = svc('ns', 'kubernetes', '10.96.0.9', [{ port: 8 }]);
  assert.equal(servicesForPod(pod('ns'), [shadow], [kubernetes])[0]!.spec!.clusterIP, '10.96.0.9');
});

test('the container\'s own variables win over the Services\', and $(VAR) can name a Service\'s', async () => {
  const p = pod('ns');
  p.spec!.containers[0]!.env = [{ name: 'KUBERNETES_SERVICE_PORT', value: '1' }, { name: 'URL', value: 'https://$(KUBERNETES_SERVICE_HOST)' }];
  const env = await makeEnvironment({ pod: p, container: p.spec!.containers[0]!, podIPs: [], hostIP: '', nodeName: 'n', memoryCapacity: 0, serviceEnv: serviceEnvVars([kubernetes]) });
  const m = new Map(env.map((e) => [e.key, e.value]));
  assert.equal(m.get('KUBERNETES_SERVICE_PORT'), '1');
  assert.equal(m.get('URL'), 'https://10.96.0.1');
  assert.equal(m.get('KUBERNETES_SERVICE_HOST'), '10.96.0.1');
  assert.deepEqual(env.slice(0, 2).map((e) => e.key), ['KUBERNETES_SERVICE_PORT', 'URL'], 'the container\'s first, in their order');
});
