// /debug on the node API: the live page, every pod's summary (once, or as server-sent events), a
// pod's sync history and its plan. Authorized as the rest of the node API (nodes/proxy).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type { DebugPod, PodPlan } from '../agent/debug-view.js';
import type { SyncRecord } from '../debug/sync-history.js';
import type { WorkerState } from '../pods/pod-workers.js';
import { DEBUG_PAGE_HTML, DEBUG_PAGE_SCRIPT } from '../debug/page.js';
import { HttpError } from './container-logs.js';

export interface DebugSource {
  summary(): DebugPod[];
  find(namespace: string, name: string): V1Pod | undefined;
  plan(pod: V1Pod): Promise<PodPlan>;
  historyOf(namespace: string, name: string): { uid: string; syncs: readonly SyncRecord[]; deleted: boolean } | undefined;
  workerState(uid: string): WorkerState | undefined;
}

export const DEBUG_KINDS = ['debugPage', 'debugScript', 'debugPods', 'debugStream', 'debugHistory', 'debugPlan'];

/** How often the event stream looks for a change to send (the page's countdowns tick on their own). */
const STREAM_PERIOD_MS = 1000;

type DebugRoute = { kind: 'debugPage' | 'debugScript' | 'debugPods' | 'debugStream' } | { kind: 'debugHistory' | 'debugPlan'; namespace: string; pod: string };

export async function serveDebug(src: DebugSource, r: DebugRoute, req: IncomingMessage, res: ServerResponse, streams: Set<Duplex>): Promise<void> {
  switch (r.kind) {
    case 'debugPage':
      // A page of our own with no third-party content: nothing else may run in it or frame it.
      return void res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'", 'x-content-type-options': 'nosniff' })
        .end(DEBUG_PAGE_HTML);
    case 'debugScript':
      return void res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(DEBUG_PAGE_SCRIPT);
    case 'debugPods':
      return json(res, { now: Date.now(), pods: src.summary() });
    case 'debugStream':
      return stream(src, req, res, streams);
    case 'debugHistory': {
      const h = src.historyOf(r.namespace, r.pod);
      if (!h) throw new HttpError(404, `pod "${r.namespace}/${r.pod}" is not on this node`);
      return json(res, { namespace: r.namespace, name: r.pod, uid: h.uid, deleted: h.deleted, worker: h.deleted ? undefined : src.workerState(h.uid), syncs: h.syncs });
    }
    case 'debugPlan':
      return json(res, await src.plan(found(src, r.namespace, r.pod)));
  }
}

function found(src: DebugSource, namespace: string, name: string): V1Pod {
  const pod = src.find(namespace, name);
  if (!pod) throw new HttpError(404, `pod "${namespace}/${name}" is not on this node`);
  return pod;
}

/** Server-sent events: the summary now, then again whenever it changed (checked every second). */
function stream(src: DebugSource, req: IncomingMessage, res: ServerResponse, streams: Set<Duplex>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
  const socket = req.socket;
  streams.add(socket);
  let last = '';
  const send = () => {
    const pods = JSON.stringify(src.summary());
    if (pods === last) return void res.write(': idle\n\n');
    last = pods;
    res.write(`data: {"now":${Date.now()},"pods":${pods}}\n\n`);
  };
  send();
  const timer = setInterval(send, STREAM_PERIOD_MS);
  res.on('close', () => {
    clearInterval(timer);
    streams.delete(socket);
  });
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
