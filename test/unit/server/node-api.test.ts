// The node API's pure decisions: the kubelet's request attributes, its PodLogOptions reading and
// container choice with its messages, routes, stream options, and authentication/authorization
// with their caches (an in-memory review API and a fake clock).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import type { V1PodStatus } from '@kubernetes/client-node';
import { NodeAuth, requestAttributes, type NodeAuthConfig, type ReviewApi, type UserInfo } from '../../../src/server/auth.js';
import { checkStreamGate, HttpError, logContainerID, parseLogQuery } from '../../../src/server/container-logs.js';
import { goDuration } from '../../../src/util/duration.js';
import { route } from '../../../src/server/node-server.js';
import { parsePorts, parseStreamOptions } from '../../../src/server/streaming.js';
import { FakeClock } from '../../../src/util/clock.js';

test('request attributes: nodes/<subresource> of this node, verb from the method, fine-grained first', () => {
  const subs = (m: string, p: string) => requestAttributes(m, p, 'n1').map((a) => `${a.verb} ${a.subresource}`);
  assert.deepEqual(subs('GET', '/containerLogs/ns/p/c'), ['get proxy']);
  assert.deepEqual(subs('POST', '/exec/ns/p/c'), ['create proxy']);
  assert.deepEqual(subs('GET', '/pods'), ['get pods', 'get proxy']);
  assert.deepEqual(subs('GET', '/healthz'), ['get healthz', 'get proxy']);
  assert.deepEqual(subs('GET', '/configz'), ['get configz', 'get proxy']);
  assert.deepEqual(subs('GET', '/stats/summary'), ['get stats']);
  assert.deepEqual(subs('GET', '/metrics/resource'), ['get metrics']);
  assert.deepEqual(subs('GET', '/logs/syslog'), ['get log']);
  assert.deepEqual(subs('GET', '/podsX'), ['get proxy'], 'a prefix is a path segment');
  assert.deepEqual(subs('GET', '/debug/pods/ns/p/plan'), ['get proxy'], 'the debug pages are nodes/proxy, as the kubelet\'s /debug');
  assert.equal(requestAttributes('GET', '/pods', 'n1')[0].name, 'n1');
});

test('log options: tail (and its old name), since, limits, booleans; what the kubelet refuses', () => {
  const q = (s: string) => parseLogQuery(new URLSearchParams(s), 1_000_000);
  assert.deepEqual(q('tailLines=3&follow=true&timestamps=true&previous=true&limitBytes=10'), { tailLines: 3, sinceMs: undefined, follow: true, limitBytes: 10, timestamps: true, previous: true, stream: 'All' });
  assert.equal(q('tail=4').tailLines, 4);
  assert.equal(q('tail=all&tailLines=4').tailLines, undefined);
  assert.equal(q('sinceSeconds=10').sinceMs, 990_000);
  assert.equal(q('sinceTime=2026-12-01T10:00:00Z').sinceMs, Date.UTC(2026, 11, 1, 10));
  const refused = (s: string, code: number, msg: RegExp) => assert.throws(() => q(s), (e: unknown) => e instanceof HttpError && e.code === code && msg.test(e.message), s);
  refused('tailLines=x', 400, /Unable to decode query/);
  refused('follow=maybe', 400, /Unable to decode query/);
  refused('tailLines=-1', 422, /Invalid request/);
  refused('limitBytes=0', 422, /Invalid request/);
  refused('sinceSeconds=0', 422, /Invalid request/);
  refused('sinceSeconds=5&sinceTime=2026-12-01T10:00:00Z', 422, /Invalid request/);
  refused('stream=Stdout&tailLines=1', 422, /Invalid request/);
  refused('stream=Both', 422, /Invalid request/);
  assert.throws(() => checkStreamGate(q('stream=Stdout'), false), /^HttpError: unable to return the given log stream: "Stdout". Please enable PodLogsQuerySplitStreams feature gate in kubelet$/);
  assert.doesNotThrow(() => checkStreamGate(q('stream=Stderr'), true), 'with the gate on');
});

test('the container whose log is shown, and the kubelet\'s words when there is none', () => {
  const st = (c: object): V1PodStatus => ({ containerStatuses: [{ name: 'c', image: 'i', imageID: '', ready: false, restartCount: 1, ...c }] });
  const running = { state: { running: {} }, containerID: 'containerd://new', lastState: { terminated: { exitCode: 1, containerID: 'containerd://old' } } };
  assert.equal(logContainerID('p', st(running), 'c', false), 'containerd://new');
  assert.equal(logContainerID('p', st(running), 'c', true), 'containerd://old');
  assert.equal(logContainerID('p', st({ state: { terminated: { exitCode: 0, containerID: 'containerd://t' } } }), 'c', false), 'containerd://t');
  assert.equal(logContainerID('p', st({ state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://old' } } }), 'c', false), 'containerd://old');
  const says = (s: V1PodStatus, prev: boolean, msg: string) => assert.throws(() => logContainerID('p', s, 'c', prev), (e: unknown) => e instanceof HttpError && e.code === 400 && e.message === msg);
  says(st({ state: { running: {} } }), true, 'previous terminated container "c" in pod "p" not found');
  says(st({ state: { waiting: { reason: 'ErrImagePull' } } }), false, 'container "c" in pod "p" is waiting to start: image can\'t be pulled');
  says(st({ state: { waiting: { reason: 'ImagePullBackOff' } } }), false, 'container "c" in pod "p" is waiting to start: trying and failing to pull image');
  says(st({ state: { waiting: { reason: 'ContainerCreating' } } }), false, 'container "c" in pod "p" is waiting to start: ContainerCreating');
  says(st({ state: {} }), false, 'container "c" in pod "p" is waiting to start - no logs yet');
  says({}, false, 'container "c" in pod "p" is not available');
});

test('routes: each path names its handler, with or without a pod UID', () => {
  assert.deepEqual(route('/containerLogs/ns/p/c'), { kind: 'logs', namespace: 'ns', pod: 'p', container: 'c' });
  assert.deepEqual(route('/exec/ns/p/uid-1/c'), { kind: 'exec', namespace: 'ns', pod: 'p', uid: 'uid-1', container: 'c' });
  assert.deepEqual(route('/portForward/ns/p'), { kind: 'portForward', namespace: 'ns', pod: 'p' });
  assert.deepEqual(route('/pods/'), { kind: 'pods' });
  assert.equal(route('/containerLogs/ns/p'), undefined);
  assert.equal(route('/nothing'), undefined);
  assert.deepEqual(route('/debug'), { kind: 'debugPage' });
  assert.deepEqual(route('/debug/app.js'), { kind: 'debugScript' });
  assert.deepEqual(route('/debug/pods'), { kind: 'debugPods' });
  assert.deepEqual(route('/debug/pods/stream'), { kind: 'debugStream' });
  assert.deepEqual(route('/debug/pods/ns/p'), { kind: 'debugHistory', namespace: 'ns', pod: 'p' });
  assert.deepEqual(route('/debug/pods/ns/p/plan'), { kind: 'debugPlan', namespace: 'ns', pod: 'p' });
  assert.equal(route('/debug/pods/ns/p/other'), undefined);
  assert.equal(route('/debug/pprof'), undefined);
});

test('stream options as the kubelet reads them; port lists', () => {
  assert.deepEqual(parseStreamOptions(new URLSearchParams('input=1&output=1&error=1')), { stdin: true, stdout: true, stderr: true, tty: false });
  assert.deepEqual(parseStreamOptions(new URLSearchParams('output=1&error=1&tty=1')), { stdin: false, stdout: true, stderr: false, tty: true }, 'a tty has no separate stderr');
  assert.throws(() => parseStreamOptions(new URLSearchParams('tty=1')), /you must specify at least 1 of stdin, stdout, stderr/);
  assert.deepEqual(parsePorts(new URLSearchParams('port=80&port=8080,9090')), [80, 8080, 9090]);
  assert.throws(() => parsePorts(new URLSearchParams('port=x')), /unable to parse "x" as a port/);
});

test('Go duration text for /configz', () => {
  assert.equal(goDuration(60_000), '1m0s');
  assert.equal(goDuration(10_000), '10s');
  assert.equal(goDuration(3_600_000), '1h0m0s');
  assert.equal(goDuration(500), '500ms');
});

class Reviews implements ReviewApi {
  tokenCalls = 0;
  sarCalls = 0;
  allowed = new Set<string>();
  async tokenReview(token: string) {
    this.tokenCalls++;
    return token === 'good' ? { authenticated: true, user: { name: 'alice', groups: ['dev', 'system:authenticated'] } } : { authenticated: false };
  }
  async subjectAccessReview(user: UserInfo, a: { verb: string; subresource: string }) {
    this.sarCalls++;
    return { allowed: this.allowed.has(`${user.name} ${a.verb} ${a.subresource}`) };
  }
}

const cfg: NodeAuthConfig = { anonymousEnabled: false, webhookEnabled: true, webhookCacheTTLMs: 120_000, clientCAFile: '', mode: 'Webhook', cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 };
const req = (path: string, headers: Record<string, string> = {}, method = 'GET') => ({ url: path, method, headers, socket: {} }) as unknown as IncomingMessage;

test('no credentials is 401; an unknown token is 401; a known user without the right is 403 in the kubelet\'s words', async () => {
  const api = new Reviews();
  const clock = new FakeClock();
  const auth = new NodeAuth(cfg, 'n1', api, clock);
  assert.deepEqual(await auth.check(req('/pods')), { ok: false, code: 401, message: 'Unauthorized' });
  assert.deepEqual(await auth.check(req('/pods', { authorization: 'Bearer bad' })), { ok: false, code: 401, message: 'Unauthorized' });
  const d = await auth.check(req('/containerLogs/ns/p/c', { authorization: 'Bearer good' }));
  assert.deepEqual(d, { ok: false, code: 403, message: 'Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])\n' });
  const pods = await auth.check(req('/pods', { authorization: 'Bearer good' }));
  assert.equal(!pods.ok && pods.message, 'Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])\n');
  api.allowed.add('alice get pods');
  assert.equal((await auth.check(req('/pods', { authorization: 'Bearer good' }))).ok, false, 'the refusal is cached (cacheUnauthorizedTTL)');
  clock.step(30_000);
  assert.equal((await auth.check(req('/pods', { authorization: 'Bearer good' }))).ok, true, 'nodes/pods is enough for /pods');
});

test('reviews are cached for their TTLs, refusals for less', async () => {
  const api = new Reviews();
  const clock = new FakeClock();
  const auth = new NodeAuth(cfg, 'n1', api, clock);
  api.allowed.add('alice get proxy');
  for (let i = 0; i < 3; i++) assert.equal((await auth.check(req('/containerLogs/a/b/c', { authorization: 'Bearer good' }))).ok, true);
  assert.equal(api.tokenCalls, 1);
  assert.equal(api.sarCalls, 1);
  clock.step(121_000);
  await auth.check(req('/containerLogs/a/b/c', { authorization: 'Bearer good' }));
  assert.equal(api.tokenCalls, 2, 'the token is reviewed again after cacheTTL');
  assert.equal(api.sarCalls, 1, 'the decision is still cached');
  api.allowed.clear();
  clock.step(300_000);
  assert.equal((await auth.check(req('/containerLogs/a/b/c', { authorization: 'Bearer good' }))).ok, false, 'a revoked right is seen once the allowed entry expires');
});

test('fifty calls at once with one new token are one TokenReview and one SubjectAccessReview', async () => {
  const api = new Reviews();
  const auth = new NodeAuth(cfg, 'n1', api, new FakeClock());
  api.allowed.add('alice get proxy');
  const all = await Promise.all(Array.from({ length: 50 }, () => auth.check(req('/containerLogs/a/b/c', { authorization: 'Bearer good' }))));
  assert.ok(all.every((d) => d.ok));
  assert.equal(api.tokenCalls, 1);
  assert.equal(api.sarCalls, 1);
  const bad = await Promise.all(Array.from({ length: 50 }, () => auth.check(req('/pods', { authorization: 'Bearer bad' }))));
  assert.ok(bad.every((d) => !d.ok && d.code === 401));
  assert.equal(api.tokenCalls, 2, 'a wrong token too');
});

test('anonymous only when enabled, and still authorized; AlwaysAllow skips the review', async () => {
  const api = new Reviews();
  const anonClock = new FakeClock();
  const anon = new NodeAuth({ ...cfg, anonymousEnabled: true }, 'n1', api, anonClock);
  const d = await anon.check(req('/pods'));
  assert.equal(!d.ok && d.code, 403, 'anonymous is a user, authorized like any other');
  api.allowed.add('system:anonymous get pods');
  anonClock.step(30_000);
  assert.equal((await anon.check(req('/pods'))).ok, true);
  const open = new NodeAuth({ ...cfg, mode: 'AlwaysAllow' }, 'n1', api, new FakeClock());
  assert.equal((await open.check(req('/exec/a/b/c', { authorization: 'Bearer good' }, 'POST'))).ok, true);
  assert.equal((await open.check(req('/exec/a/b/c'))).ok, false, 'AlwaysAllow still needs an authenticated caller');
});
