// downwardAPI volumes: the pod's metadata (name, namespace, uid, labels, annotations) and its
// containers' resources as files, on a tmpfs; labels and annotations update in place.
import type { V1DownwardAPIVolumeFile, V1Pod } from '@kubernetes/client-node';
import { containerResourceValue } from '../runtime/env.js';
import { metadataField } from '../runtime/fieldpath.js';
import type { Payload } from './atomic-writer.js';
import { fileMode, setUpAtomicVolume, tearDownVolumeDir } from './atomic-volume.js';
import { PLUGINS } from './paths.js';
import type { VolumePlugin } from './types.js';

/** A string as Go's strconv.Quote writes it (the kubelet's format for label and annotation values). */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** `key="value"` lines, keys in byte order, no newline after the last. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((k) => `${k}=${goQuote(m![k]!)}`)
    .join('\n');
}

function fieldFile(pod: V1Pod, path: string): string {
  if (path === 'metadata.labels') return formatMap(pod.metadata?.labels);
  if (path === 'metadata.annotations') return formatMap(pod.metadata?.annotations);
  const v = metadataField(pod, path);
  if (v === undefined) throw new Error(`unsupported fieldPath: ${path}`);
  return v;
}

/** The files of downwardAPI items; every item is tried, and the errors reported together. */
export function downwardAPIPayload(pod: V1Pod, items: V1DownwardAPIVolumeFile[], defaultMode: number | undefined, allocatable: { cpu: number; memory: number }): Payload {
  const out: Payload = new Map();
  const errors: string[] = [];
  for (const item of items) {
    try {
      let text: string;
      if (item.fieldRef) text = fieldFile(pod, item.fieldRef.fieldPath);
      else if (item.resourceFieldRef) {
        const r = item.resourceFieldRef;
        const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
        const container = all.find((c) => c.name === r.containerName);
        if (!container) throw new Error(`container ${r.containerName} not found`);
        text = containerResourceValue(container, r.resource, r.divisor as string | undefined, allocatable);
      } else continue;
      out.set(item.path, { data: Buffer.from(text, 'utf8'), mode: fileMode(item.mode, defaultMode) });
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  if (errors.length) throw new Error(errors.length === 1 ? errors[0] : `[${[...new Set(errors)].join(', ')}]`);
  return out;
}

export const downwardAPIPlugin: VolumePlugin = {
  name: PLUGINS.downwardAPI,
  path: (ctx) => ctx.host.paths.volumeDir(ctx.pod.metadata?.uid ?? '', PLUGINS.downwardAPI, ctx.volume.name),
  setUp(ctx) {
    const src = ctx.volume.downwardAPI!;
    return setUpAtomicVolume(ctx, PLUGINS.downwardAPI, downwardAPIPlugin.path(ctx), true, async () => downwardAPIPayload(ctx.pod, src.items ?? [], src.defaultMode, ctx.host.allocatable()));
  },
  tearDown: (host, path, mounts) => tearDownVolumeDir(host.mounter, path, mounts),
};
