// Probes on the real cluster, once per runtime: liveness restarts a container (Unhealthy, Killing,
// restartCount), readiness drives the Ready condition both ways, a startup probe holds liveness
// off until it passes, and httpGet, tcpSocket and grpc probes pass and fail against agnhost's
// real servers (netexec, grpc-health-checking).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { CriClient } from '../../../src/cri/client.js';
import { cleanupAgent, startAgent, uniqueNodeName, type RunningAgent } from '../agent.js';
import { eventually } from '../cluster.js';
import { container, createPod, getPod, podEvents, waitPod } from '../kube.js';
import type { TestRuntime } from '../runtimes.js';

const AGNHOST = 'registry.k8s.io/e2e-test-images/agnhost:2.66.1';

export function probesSuite(makeRuntime: () => Promise<TestRuntime>): void {
  let rt: TestRuntime;
  let cri: CriClient;
  let agent: RunningAgent;
  let node: string;

  before(async () => {
    rt = await makeRuntime();
    cri = new CriClient(rt.endpoint);
    node = uniqueNodeName(`it-probe-${rt.name}`);
    agent = await startAgent(node, ['--runtime-endpoint', rt.endpoint]);
  });
  after(async () => {
    await cleanupAgent(agent, rt.endpoint);
    cri.close();
    await rt.stop();
  });

  const loop = "trap 'exit 0' TERM; while true; do sleep 0.2; done";
  // Ports vary from run to run: no case depends on a fixed one.
  let nextPort = 20000 + Math.floor(Math.random() * 20000);
  const port = () => nextPort++;

  const ready = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status;
  const messages = async (pod: V1Pod, reason: string) => (await podEvents(pod)).filter((e) => e.reason === reason).map((e) => e.message ?? '');

  async function exec(pod: V1Pod, cmd: string[]): Promise<void> {
    const id = (await getPod(pod)).status!.containerStatuses![0]!.containerID!.replace(/^[^:]+:\/\//, '');
    const r = await cri.execSync(id, cmd, 10);
    assert.equal(r.exit_code, 0, Buffer.from(r.stderr).toString());
  }

  test('a failing liveness probe restarts the container: Unhealthy and Killing events, restartCount goes up', async () => {
    const created = await createPod(node, 'live', {
      containers: [container('c', loop, { livenessProbe: { exec: { command: ['sh', '-c', 'echo not alive; exit 1'] }, periodSeconds: 1, failureThreshold: 2 } })],
    });
    const pod = await waitPod(created, 'restarted', 60_000, (p) => ((p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined));
    assert.ok(pod.status!.containerStatuses![0]!.lastState?.terminated, 'the killed instance is the last state');
    await eventually('the events', 20_000, async () => {
      const unhealthy = await messages(pod, 'Unhealthy');
      const killing = await messages(pod, 'Killing');
      return unhealthy.includes('Liveness probe failed: not alive\n') && killing.includes('Container c failed liveness probe, will be restarted') ? true : undefined;
    });
  });

  test('a readiness probe keeps the pod not Ready until it passes, and the Ready condition follows it both ways', async () => {
    const created = await createPod(node, 'ready', {
      containers: [container('c', loop, { readinessProbe: { exec: { command: ['test', '-f', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 1 } })],
    });
    let pod = await waitPod(created, 'running', 60_000, (p) => (p.status?.containerStatuses?.[0]?.state?.running ? p : undefined));
    await new Promise((r) => setTimeout(r, 3000));
    pod = await getPod(pod);
    assert.equal(ready(pod), 'False', 'not ready while the probe fails');
    assert.equal(pod.status!.containerStatuses![0]!.ready, false);
    assert.equal(pod.status!.conditions!.find((c) => c.type === 'ContainersReady')?.message, 'containers with unready status: [c]');
    await exec(pod, ['touch', '/tmp/ready']);
    await waitPod(pod, 'Ready', 20_000, (p) => (ready(p) === 'True' && p.status?.containerStatuses?.[0]?.ready ? p : undefined));
    await exec(pod, ['rm', '/tmp/ready']);
    await waitPod(pod, 'not Ready again', 20_000, (p) => (ready(p) === 'False' ? p : undefined));
    assert.equal((await getPod(pod)).status!.containerStatuses![0]!.restartCount, 0, 'readiness never restarts');
    assert.ok((await messages(pod, 'Unhealthy')).some((m) => m.startsWith('Readiness probe failed')));
  });

  test('a startup probe holds liveness off until it passes; then liveness counts', async () => {
    const probe = { exec: { command: ['test', '-f', '/tmp/started'] }, periodSeconds: 1 };
    const created = await createPod(node, 'startup', {
      containers: [container('c', loop, { startupProbe: { ...probe, failureThreshold: 60 }, livenessProbe: { ...probe, failureThreshold: 1 } })],
    });
    let pod = await waitPod(created, 'running', 60_000, (p) => (p.status?.containerStatuses?.[0]?.state?.running ? p : undefined));
    await new Promise((r) => setTimeout(r, 5000));
    pod = await getPod(pod);
    const cs = pod.status!.containerStatuses![0]!;
    assert.equal(cs.started, false, 'not started while the startup probe fails');
    assert.equal(cs.restartCount, 0, 'the liveness probe (which would fail) did not run');
    await exec(pod, ['touch', '/tmp/started']);
    await waitPod(pod, 'started and ready', 20_000, (p) => (p.status?.containerStatuses?.[0]?.started && ready(p) === 'True' ? p : undefined));
    await exec(pod, ['rm', '/tmp/started']);
    await waitPod(pod, 'restarted by liveness', 30_000, (p) => ((p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined));
  });

  test('httpGet, tcpSocket and grpc probes pass against real servers, and fail for real: an error status, nothing listening, a service not serving', async () => {
    const http = port();
    const grpc = port();
    const grpcHttp = port();
    const closed = port();
    const created = await createPod(node, 'net', {
      containers: [
        {
          name: 'web',
          image: AGNHOST,
          // netexec's /healthz answers 200 once its UDP server runs.
          args: ['netexec', `--http-port=${http}`, `--udp-port=${http}`],
          ports: [{ name: 'http', containerPort: http }],
          readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
          livenessProbe: { tcpSocket: { port: http }, periodSeconds: 1 },
        },
        {
          name: 'health',
          image: AGNHOST,
          args: ['grpc-health-checking', `--port=${grpc}`, `--http-port=${grpcHttp}`],
          readinessProbe: { grpc: { port: grpc }, periodSeconds: 1, failureThreshold: 1 },
        },
      ],
    });
    const pod = await waitPod(created, 'Ready (http, tcp and grpc passing)', 60_000, (p) => (ready(p) === 'True' ? p : undefined));
    assert.equal(pod.status!.containerStatuses!.every((c) => c.restartCount === 0), true);
    // agnhost's switch: the gRPC health service answers NOT_SERVING from now on.
    const ip = pod.status!.podIP!;
    const res = await fetch(`http://${ip}:${grpcHttp}/make-not-serving`);
    assert.equal(res.status, 200);
    await waitPod(pod, 'not Ready (grpc NOT_SERVING)', 20_000, (p) => (ready(p) === 'False' ? p : undefined));
    await eventually('the grpc failure event', 20_000, async () => ((await messages(pod, 'Unhealthy')).includes('Readiness probe failed: service unhealthy (responded with "NOT_SERVING")') ? true : undefined));

    const failPort = port();
    const failing = await createPod(node, 'net-fail', {
      containers: [
        {
          name: 'web',
          image: AGNHOST,
          // Without its UDP server, netexec's /healthz answers 412.
          args: ['netexec', `--http-port=${failPort}`, '--udp-port=-1'],
          readinessProbe: { httpGet: { path: '/healthz', port: failPort }, periodSeconds: 1 },
        },
        container('tcp', loop, { readinessProbe: { tcpSocket: { port: closed }, periodSeconds: 1 } }),
        container('refused', loop, { readinessProbe: { httpGet: { path: '/missing', port: 1 }, periodSeconds: 1 } }),
      ],
    });
    const f = await waitPod(failing, 'running', 60_000, (p) => (p.status?.containerStatuses?.every((c) => c.state?.running) ? p : undefined));
    const fip = f.status!.podIP!;
    await eventually('the http and tcp failure events', 30_000, async () => {
      const m = await messages(f, 'Unhealthy');
      const status = m.includes('Readiness probe failed: HTTP probe failed with statuscode: 412');
      const tcp = m.includes(`Readiness probe failed: dial tcp ${fip}:${closed}: connect: connection refused`);
      const refused = m.includes(`Readiness probe failed: Get "http://${fip}:1/missing": dial tcp ${fip}:1: connect: connection refused`);
      return status && tcp && refused ? true : undefined;
    });
    assert.equal(ready(await getPod(f)), 'False');
  });
}
