// Static pods: a directory of Pod manifests (YAML or JSON, one or more documents per file), watched
// for changes. Each pod's UID is a hash of its manifest, its file and the node, so an edited
// manifest is a new pod (the old one is stopped, the new one started) and an unchanged one keeps
// its UID across restarts. Bad manifests are reported with file and field, and skipped.
import type { V1Pod } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Logger } from '../observability/logger.js';

export const ConfigSourceAnnotation = 'kubernetes.io/config.source';
export const ConfigHashAnnotation = 'kubernetes.io/config.hash';
export const ConfigMirrorAnnotation = 'kubernetes.io/config.mirror';

export interface ManifestError {
  file: string;
  message: string;
}

const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Checks what a pod manifest must have to run; returns the first problem, naming its field. */
export function validateManifest(doc: unknown): string | undefined {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return 'not a Pod object';
  const o = doc as Record<string, any>;
  if (o.kind !== 'Pod') return `kind: expected Pod, got ${JSON.stringify(o.kind)}`;
  if (o.apiVersion !== 'v1') return `apiVersion: expected v1, got ${JSON.stringify(o.apiVersion)}`;
  const name = o.metadata?.name;
  if (typeof name !== 'string' || !DNS1123.test(name)) return `metadata.name: ${JSON.stringify(name)} is not a valid name`;
  const containers = o.spec?.containers;
  if (!Array.isArray(containers) || containers.length === 0) return 'spec.containers: at least one container is required';
  for (const [kind, list] of [['containers', containers], ['initContainers', o.spec?.initContainers ?? []]] as const) {
    if (!Array.isArray(list)) return `spec.${kind}: expected a list`;
    const seen = new Set<string>();
    for (const [i, c] of (list as Array<Record<string, unknown>>).entries()) {
      if (typeof c?.name !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(c.name)) return `spec.${kind}[${i}].name: ${JSON.stringify(c?.name)} is not a valid container name`;
      if (seen.has(c.name)) return `spec.${kind}[${i}].name: duplicate name ${JSON.stringify(c.name)}`;
      seen.add(c.name);
      if (typeof c.image !== 'string' || !c.image) return `spec.${kind}[${i}].image: required`;
      for (const f of ['command', 'args']) {
        if (c[f] !== undefined && (!Array.isArray(c[f]) || !(c[f] as unknown[]).every((x) => typeof x === 'string'))) return `spec.${kind}[${i}].${f}: expected a list of strings`;
      }
    }
  }
  const policy = o.spec?.restartPolicy;
  if (policy !== undefined && !['Always', 'OnFailure', 'Never'].includes(policy)) return `spec.restartPolicy: expected Always, OnFailure or Never, got ${JSON.stringify(policy)}`;
  return undefined;
}

/** Reads every manifest of a directory: the pods, as the agent sees them, and the errors. */
export function readManifests(dir: string, nodeName: string): { pods: V1Pod[]; errors: ManifestError[] } {
  const pods: V1Pod[] = [];
  const errors: ManifestError[] = [];
  if (!existsSync(dir)) return { pods, errors: [{ file: dir, message: 'no such directory' }] };
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.') || !/\.(ya?ml|json)$/.test(name)) continue;
    const file = join(dir, name);
    const st = statSync(file);
    if (!st.isFile()) continue;
    const text = readFileSync(file, 'utf8');
    const docs = parseAllDocuments(text);
    docs.forEach((d, i) => {
      const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
      if (d.errors.length > 0) {
        errors.push({ file: where, message: `invalid YAML: ${d.errors[0]!.message.split('\n')[0]}` });
        return;
      }
      const doc = d.toJSON() as unknown;
      if (doc === null) return;
      const problem = validateManifest(doc);
      if (problem) {
        errors.push({ file: where, message: problem });
        return;
      }
      const pod = doc as V1Pod;
      const ns = pod.metadata!.namespace || 'default';
      const uid = createHash('md5').update(file).update('\0').update(nodeName).update('\0').update(JSON.stringify(doc)).digest('hex');
      pods.push({
        ...pod,
        metadata: {
          ...pod.metadata,
          // As the kubelet: a static pod is named after its node, so two nodes' copies differ.
          name: `${pod.metadata!.name}-${nodeName}`,
          namespace: ns,
          uid: `${uid.slice(0, 8)}-${uid.slice(8, 12)}-${uid.slice(12, 16)}-${uid.slice(16, 20)}-${uid.slice(20)}`,
          annotations: { ...(pod.metadata!.annotations ?? {}), [ConfigSourceAnnotation]: 'file', [ConfigHashAnnotation]: uid },
          creationTimestamp: new Date(st.mtimeMs),
        },
        spec: { ...pod.spec!, nodeName, restartPolicy: pod.spec!.restartPolicy ?? 'Always', terminationGracePeriodSeconds: pod.spec!.terminationGracePeriodSeconds ?? 30 },
      });
    });
  }
  return { pods, errors };
}

export function isStaticPod(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[ConfigSourceAnnotation] === 'file';
}

export interface StaticPodHandler {
  onAdd(pod: V1Pod): void;
  onDelete(pod: V1Pod): void;
}

/** Watches the directory (inotify, plus a rescan every period) and reports pods added and removed. */
export class StaticPodSource {
  private known = new Map<string, V1Pod>();
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
  private debounce?: NodeJS.Timeout;
  private reported = new Set<string>();

  constructor(
    private readonly dir: string,
    private readonly nodeName: string,
    private readonly handler: StaticPodHandler,
    private readonly logger: Logger,
    private readonly rescanMs = 5000,
  ) {}

  start(): void {
    this.scan();
    try {
      this.watcher = watch(this.dir, () => {
        // Editors write in several steps: look once things settle.
        if (this.debounce) clearTimeout(this.debounce);
        this.debounce = setTimeout(() => this.scan(), 100);
      });
    } catch (err) {
      this.logger.warn('cannot watch the static pod directory; rescanning periodically', { dir: this.dir, error: (err as Error).message });
    }
    this.timer = setInterval(() => this.scan(), this.rescanMs);
    this.timer.unref();
  }

  stop(): void {
    this.watcher?.close();
    if (this.timer) clearInterval(this.timer);
    if (this.debounce) clearTimeout(this.debounce);
  }

  list(): V1Pod[] {
    return [...this.known.values()];
  }

  scan(): void {
    const { pods, errors } = readManifests(this.dir, this.nodeName);
    for (const e of errors) {
      const key = `${e.file}: ${e.message}`;
      if (this.reported.has(key)) continue;
      this.reported.add(key);
      this.logger.warn('static pod manifest skipped', { file: e.file, error: e.message });
    }
    const next = new Map(pods.map((p) => [p.metadata!.uid!, p]));
    for (const [uid, pod] of this.known) if (!next.has(uid)) this.handler.onDelete(pod);
    for (const [uid, pod] of next) if (!this.known.has(uid)) this.handler.onAdd(pod);
    this.known = next;
  }
}
