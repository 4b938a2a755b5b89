// `nodelet plan` and `nodelet history`: ask a running agent (its read-only port, or its node API
// with a kubeconfig's credentials) what the next sync of a pod would do and what the last ones did;
// or, with --file, plan a pod not created yet against a runtime.
import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import type { PodPlan } from '../agent/debug-view.js';
import type { SyncRecord } from '../debug/sync-history.js';
import type { WorkerState } from '../pods/pod-workers.js';
import { formatGoDuration } from '../runtime/backoff.js';
import type { PlanStep } from '../runtime/plan.js';
import { UsageError } from './flags.js';

export interface Target {
  /** The agent's address: http://127.0.0.1:10255 (read-only port) or https://host:10250 (node API). */
  server?: string;
  /** Whose credentials the node API is asked with (the current user's). */
  kubeconfig?: string;
  /** The CA that signed the node's serving certificate (else the kubeconfig's cluster CA). */
  certificateAuthority?: string;
  insecure?: boolean;
}

/**
 * GETs a path of the agent's /debug as JSON. Over HTTPS, as the kubeconfig's current user: the node
 * API authorizes it as nodes/proxy, as it does `kubectl logs`. (The API server's node proxy is no
 * way in for a node on a loopback address: it refuses to dial one.)
 */
export async function getDebug<T>(target: Target, path: string): Promise<T> {
  const url = new URL(path, target.server ?? 'http://127.0.0.1:10255');
  let opts: https.RequestOptions = {};
  if (url.protocol === 'https:') {
    if (target.kubeconfig || process.env.KUBECONFIG) await loadKubeConfig(target.kubeconfig).applyToHTTPSOptions(opts);
    if (target.certificateAuthority) opts = { ...opts, ca: readFileSync(target.certificateAuthority) };
    if (target.insecure) opts = { ...opts, rejectUnauthorized: false };
  }
  const body = await new Promise<{ code: number; text: string }>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).get(url, opts, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error('no answer in 30 s')));
  });
  if (body.code !== 200) throw new Error(`${url.origin} answered ${body.code}: ${body.text.trim().split('\n')[0]}`);
  return JSON.parse(body.text) as T;
}

function loadKubeConfig(path: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  const file = path ?? process.env.KUBECONFIG;
  if (!file) throw new UsageError('no kubeconfig: give --kubeconfig or $KUBECONFIG');
  kc.loadFromFile(file);
  return kc;
}

/** "default/web" → namespace and name. */
export function podArg(arg: string | undefined): { namespace: string; name: string } {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(arg ?? '');
  if (!m) throw new UsageError(`expected NAMESPACE/POD, got ${JSON.stringify(arg ?? '')}`);
  return { namespace: m[1]!, name: m[3]! };
}

export function debugPath(namespace: string, name: string, plan: boolean): string {
  return `/debug/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}${plan ? '/plan' : ''}`;
}

/** What the worker does and waits for, in words: "idle, resync in 41s". */
export function workerText(w: WorkerState | undefined, now: number): string {
  if (!w) return 'no worker';
  if (w.busy) return w.phase === 'syncing' ? 'syncing now' : `${w.phase} now`;
  const next = w.next ? `, ${w.next.trigger} in ${formatGoDuration(Math.max(0, w.next.at - now))}` : '';
  return `${w.phase === 'syncing' ? 'idle' : w.phase}${next}`;
}

function stepLine(s: PlanStep): string {
  return `  ${s.text}  [${s.reason}]`;
}

export function formatPlan(p: PodPlan): string {
  const lines = [`pod ${p.namespace}/${p.name} (${p.uid || 'not created'}): worker ${workerText(p.worker, p.at)}`];
  if (p.note) lines.push(`  ${p.note}`);
  const acting = p.steps.filter((s) => s.verb !== 'keep');
  if (!p.note && acting.length === 0) lines.push('  nothing to do');
  lines.push(...p.steps.map(stepLine));
  return lines.join('\n');
}

export function formatHistory(h: { namespace: string; name: string; uid: string; syncs: SyncRecord[] }): string {
  const lines = [`pod ${h.namespace}/${h.name} (${h.uid}): last ${h.syncs.length} syncs, oldest first`];
  for (const s of h.syncs) {
    const repeats = s.repeats ? ` (and ${s.repeats} more like it until ${new Date(s.lastAt!).toISOString()})` : '';
    lines.push(`${new Date(s.at).toISOString()}  ${s.trigger.padEnd(9)} ${String(s.durationMs).padStart(6)} ms  ${s.plan.length ? '' : 'nothing to do'}${repeats}`);
    for (const p of s.plan) lines.push(`    ${p.text}  [${p.reason}]`);
    for (const r of s.results) lines.push(`    ${r.ok ? 'done' : 'FAILED'} ${r.action} ${r.target}${r.durationMs !== undefined ? ` in ${r.durationMs} ms` : ''}${r.ok ? '' : `: ${r.reason}${r.message ? `: ${r.message}` : ''}`}`);
    if (s.error) lines.push(`    error: ${s.error}`);
  }
  return lines.join('\n');
}

/** A pod of a manifest: the first Pod in the file. */
export function readPodFile(file: string): V1Pod {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--file ${file}: ${(err as Error).message.split('\n')[0]}`);
  }
  const pod = doc as V1Pod;
  if (!pod || typeof pod !== 'object' || pod.kind !== 'Pod' || !pod.spec?.containers?.length) throw new UsageError(`--file ${file}: not a Pod with containers`);
  return pod;
}
