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
import { validateManifest } from './static-pod-validation.js';

export { validateManifest };

export const ConfigSourceAnnotation = 'kubernetes.io/config.source';
export const ConfigHashAnnotation = 'kubernetes.io/config.hash';
export const ConfigMirrorAnnotation = 'kubernetes.io/config.mirror';

export interface ManifestError {
  file: string;
  message: string;
}

/** A file's documents as last parsed: each a checked manifest, or why it is not one. */
type ParsedDoc = { json: string } | { problem: string } | null;

/** Parsed files by path, with the stat that says they are unchanged (size, mtime, inode). */
export type ManifestCache = Map<string, { stamp: string; docs: ParsedDoc[] }>;

function parseManifest(text: string): ParsedDoc[] {
  return parseAllDocuments(text).map((d) => {
    if (d.errors.length > 0) return { problem: `invalid YAML: ${d.errors[0]!.message.split('\n')[0]}` };
    const doc = d.toJSON() as unknown;
    if (doc === null) return null;
    const problem = validateManifest(doc);
    // Kept as text: each scan builds its own objects, so nothing can change what the next one reads.
    return problem ? { problem } : { json: JSON.stringify(doc) };
  });
}

/**
 * Reads every manifest of a directory: the pods, as the agent sees them, and the errors. With a
 * cache, a file whose size, mtime and inode are unchanged is not read and parsed again (the rescan
 * every 20 s would otherwise parse every manifest of the node each time).
 */
export function readManifests(dir: string, nodeName: string, cache?: ManifestCache): { pods: V1Pod[]; errors: ManifestError[] } {
  const pods: V1Pod[] = [];
  const errors: ManifestError[] = [];
  if (!existsSync(dir)) return { pods, errors: [{ file: dir, message: 'no such directory' }] };
  // As the kubelet: the first file (in name order) to define a namespace/name has it.
  const owners = new Map<string, string>();
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch (err) {
    return { pods, errors: [{ file: dir, message: `cannot read the directory: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }] };
  }
  const listed = new Set<string>();
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const file = join(dir, name);
    let text: string | undefined;
    let docs: ParsedDoc[] | undefined;
    let stamp: string;
    let mtimeMs: number;
    try {
      const st = statSync(file);
      mtimeMs = st.mtimeMs;
      if (st.isDirectory()) {
        errors.push({ file, message: 'a directory: manifests in subdirectories are not read' });
        continue;
      }
      // Editors' backups and notes stay out; said once, since the kubelet would have read them.
      if (!/\.(ya?ml|json)$/.test(name)) {
        errors.push({ file, message: 'not a manifest: only *.yaml, *.yml and *.json files are read' });
        continue;
      }
      if (!st.isFile()) {
        errors.push({ file, message: 'not a regular file' });
        continue;
      }
      stamp = `${st.size}:${st.mtimeMs}:${st.ino}`;
      listed.add(file);
      const hit = cache?.get(file);
      if (hit?.stamp === stamp) docs = hit.docs;
      else text = readFileSync(file, 'utf8');
    } catch (err) {
      // Gone between listing and reading (an editor's temporary file), or unreadable.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') errors.push({ file, message: `cannot read: ${code ?? (err as Error).message}` });
      continue;
    }
    if (!docs) {
      docs = text!.trim() === '' ? [{ problem: 'empty file: no pod' }] : parseManifest(text!);
      cache?.set(file, { stamp, docs });
    }
    const all = docs;
    all.forEach((d, i) => {
      const where = all.length > 1 ? `${file} (document ${i + 1})` : file;
      if (d === null) return;
      if ('problem' in d) {
        errors.push({ file: where, message: d.problem });
        return;
      }
      const pod = JSON.parse(d.json) as V1Pod;
      const ns = pod.metadata!.namespace || 'default';
      const key = `${ns}/${pod.metadata!.name}`;
      const owner = owners.get(key);
      if (owner) {
        errors.push({ file: where, message: `duplicate pod name ${JSON.stringify(key)}: ${owner} defines it first; ignored` });
        return;
      }
      owners.set(key, where);
      const uid = createHash('md5').update(file).update('\0').update(nodeName).update('\0').update(d.json).digest('hex');
      pods.push({
        ...pod,
        metadata: {
          ...pod.metadata,
          // As the kubelet: a static pod is named after its node, so two nodes' copies differ.
          name: `${pod.metadata!.name}-${nodeName}`,
          namespace: ns,
          uid: `${uid.slice(0, 8)}-${uid.slice(8, 12)}-${uid.slice(12, 16)}-${uid.slice(16, 20)}-${uid.slice(20)}`,
          annotations: { ...(pod.metadata!.annotations ?? {}), [ConfigSourceAnnotation]: 'file', [ConfigHashAnnotation]: uid },
          creationTimestamp: new Date(mtimeMs),
        },
        spec: { ...pod.spec!, nodeName, restartPolicy: pod.spec!.restartPolicy ?? 'Always', terminationGracePeriodSeconds: pod.spec!.terminationGracePeriodSeconds ?? 30 },
      });
    });
  }
  if (cache) for (const file of cache.keys()) if (!listed.has(file)) cache.delete(file);
  return { pods, errors };
}

export function isStaticPod(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[ConfigSourceAnnotation] === 'file';
}

export interface StaticPodHandler {
  onAdd(pod: V1Pod): void;
  onDelete(pod: V1Pod): void;
}

/**
 * Watches the directory (inotify, plus a rescan every 20 s as a safety net: the kubelet's
 * fileCheckFrequency) and reports pods added and removed.
 */
export class StaticPodSource {
  private known = new Map<string, V1Pod>();
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
  private debounce?: NodeJS.Timeout;
  private reported = new Set<string>();
  private readonly parsed: ManifestCache = new Map();

  constructor(
    private readonly dir: string,
    private readonly nodeName: string,
    private readonly handler: StaticPodHandler,
    private readonly logger: Logger,
    private readonly rescanMs = 20_000,
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
    const { pods, errors } = readManifests(this.dir, this.nodeName, this.parsed);
    // Each problem is said once while it lasts; fixed and broken again, it is said again.
    const current = new Set<string>();
    for (const e of errors) {
      const key = `${e.file}: ${e.message}`;
      current.add(key);
      if (!this.reported.has(key)) this.logger.warn('static pod manifest skipped', { file: e.file, error: e.message });
    }
    this.reported = current;
    const next = new Map(pods.map((p) => [p.metadata!.uid!, p]));
    for (const [uid, pod] of this.known) if (!next.has(uid)) this.handler.onDelete(pod);
    for (const [uid, pod] of next) if (!this.known.has(uid)) this.handler.onAdd(pod);
    this.known = next;
  }
}
