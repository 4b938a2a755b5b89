// The container spec hash stored on each container (annotation io.kubernetes.container.hash):
// a change of hash means "definition changed" and the container is restarted. As the kubelet's, it
// covers what of a container's spec can change in the API without a resize (name and image): its
// resources change in place (resize.ts), and every other field of a pod's spec is immutable.
import type { V1Container } from '@kubernetes/client-node';

/** JSON with object keys sorted and empty values dropped, so equal specs hash equally however they were built. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined || v === null) continue;
      out[key] = canonical(v);
    }
    return out;
  }
  return value;
}

/** FNV-1a, 32 bits, over UTF-8 bytes: small, fast, stable across versions of Node. */
function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function hashContainer(container: V1Container): string {
  return fnv1a32(JSON.stringify(canonical({ name: container.name, image: container.image }))).toString(16);
}

/** The hash nodelet 0.1.0 stored (the whole spec): containers it created are not restarted for the change. */
export function legacyHashContainer(container: V1Container): string {
  return fnv1a32(JSON.stringify(canonical(container))).toString(16);
}
