// Container environment and command, as the kubelet builds them: env in order with $(VAR)
// expansion, the downward API's field references, ConfigMap/Secret keys, environment files in the
// pod's volumes, and envFrom.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import type { V1Container, V1EnvVar, V1FileKeySelector, V1Pod } from '@kubernetes/client-node';
import { resolveInRoot } from '../util/in-root.js';
import { envFileValue } from './env-file.js';
import { parseQuantity } from '../util/quantity.js';
import { metadataField } from './fieldpath.js';
import type { ConfigSource } from './deps.js';
import { Reasons, SyncError } from './errors.js';

/** Replaces $(NAME) with its value where NAME is defined; $$ escapes a dollar; anything else stays. */
export function expandVars(input: string, vars: Map<string, string>): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      out += vars.has(name) ? vars.get(name) : input.slice(i, close + 1);
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}

export interface EnvContext {
  pod: V1Pod;
  container: V1Container;
  podIPs: string[];
  hostIP: string;
  nodeName: string;
  memoryCapacity: number;
  configSource?: ConfigSource;
  /** Variables of the pod's Services (src/runtime/service-env.ts): under the container's own, and for $(VAR). */
  serviceEnv?: Map<string, string>;
  /** The host path of the pod's volume of that name, once set up (fileKeyRef reads a file there). */
  volumePath?: (name: string) => string | undefined;
}

const configError = (msg: string) => new SyncError(Reasons.CreateContainerConfig, msg);

function fieldValue(path: string, ctx: EnvContext): string {
  const meta = metadataField(ctx.pod, path);
  if (meta !== undefined) return meta;
  switch (path) {
    case 'spec.nodeName':
      return ctx.pod.spec?.nodeName ?? ctx.nodeName;
    case 'spec.serviceAccountName':
      return ctx.pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
    case 'status.hostIPs':
      return ctx.hostIP;
    case 'status.podIP':
      return ctx.podIPs[0] ?? '';
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    default:
      throw configError(`unsupported fieldPath: ${path}`);
  }
}

/**
 * A container's resource as the downward API gives it: its limit or request, an unset limit being
 * the node's (`defaults`: cores and bytes), in units of the divisor, rounded up.
 */
export function containerResourceValue(container: V1Container, resource: string, divisorText: string | undefined, defaults: { cpu: number; memory: number }): string {
  const [kind, name] = resource.split('.') as [string, string];
  const res = container.resources;
  const table = (kind === 'limits' ? res?.limits : res?.requests) as Record<string, string> | undefined;
  let value: number;
  if (table?.[name] !== undefined && parseQuantity(table[name]!) > 0) value = parseQuantity(table[name]!);
  else if (name === 'cpu') value = kind === 'limits' ? defaults.cpu : 0;
  else if (name === 'memory') value = kind === 'limits' ? defaults.memory : 0;
  else if (name === 'ephemeral-storage') value = 0;
  else throw new Error(`unsupported container resource : ${resource}`);
  const divisor = divisorText ? parseQuantity(divisorText) : 1;
  return String(Math.ceil(value / (divisor || 1) - 1e-9));
}

function resourceValue(resource: string, divisorText: string | undefined, ctx: EnvContext): string {
  try {
    return containerResourceValue(ctx.container, resource, divisorText, { cpu: os.cpus().length, memory: ctx.memoryCapacity });
  } catch (err) {
    throw configError((err as Error).message);
  }
}

async function keyRef(kind: 'configmap' | 'secret', ns: string, name: string, key: string, optional: boolean, source: ConfigSource | undefined): Promise<string | undefined> {
  if (!source) throw configError(`${kind} "${name}" cannot be read: nodelet runs without an API server`);
  const obj = kind === 'configmap' ? await source.getConfigMap(ns, name) : await source.getSecret(ns, name);
  if (!obj) {
    if (optional) return undefined;
    throw configError(`${kind} "${name}" not found`);
  }
  const data = kind === 'configmap' ? (obj as { data?: Record<string, string> }).data : undefined;
  const raw = kind === 'secret' ? (obj as { data?: Record<string, string> }).data?.[key] : undefined;
  const value = kind === 'configmap' ? data?.[key] : raw !== undefined ? Buffer.from(raw, 'base64').toString('utf8') : undefined;
  if (value === undefined) {
    if (optional) return undefined;
    throw configError(`couldn't find key ${key} in ${kind === 'configmap' ? 'ConfigMap' : 'Secret'} ${ns}/${name}`);
  }
  return value;
}

const validEnvName = (name: string) => /^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(name);

/** The container's environment, in the order the kubelet produces it. Throws CreateContainerConfigError. */
export async function makeEnvironment(ctx: EnvContext): Promise<Array<{ key: string; value: string }>> {
  const ns = ctx.pod.metadata?.namespace ?? '';
  const vars = new Map<string, string>();
  for (const from of ctx.container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    if (from.configMapRef?.name) {
      const cm = await ctx.configSource?.getConfigMap(ns, from.configMapRef.name);
      if (!cm) {
        if (from.configMapRef.optional) continue;
        throw configError(`configmap "${from.configMapRef.name}" not found`);
      }
      for (const [k, v] of Object.entries(cm.data ?? {})) if (validEnvName(prefix + k)) vars.set(prefix + k, v);
    }
    if (from.secretRef?.name) {
      const s = await ctx.configSource?.getSecret(ns, from.secretRef.name);
      if (!s) {
        if (from.secretRef.optional) continue;
        throw configError(`secret "${from.secretRef.name}" not found`);
      }
      for (const [k, v] of Object.entries(s.data ?? {})) if (validEnvName(prefix + k)) vars.set(prefix + k, Buffer.from(v, 'base64').toString('utf8'));
    }
  }
  const services = ctx.serviceEnv ?? new Map<string, string>();
  for (const e of ctx.container.env ?? []) {
    // $(VAR) sees the variables so far, and the Services' under them.
    const v = await envValue(e, ctx, ns, services.size ? new Map([...services, ...vars]) : vars);
    if (v !== undefined) vars.set(e.name, v);
  }
  const out = [...vars].map(([key, value]) => ({ key, value }));
  for (const [key, value] of services) if (!vars.has(key)) out.push({ key, value });
  return out;
}

async function envValue(e: V1EnvVar, ctx: EnvContext, ns: string, vars: Map<string, string>): Promise<string | undefined> {
  if (!e.valueFrom) return expandVars(e.value ?? '', vars);
  const f = e.valueFrom;
  if (f.fieldRef) return fieldValue(f.fieldRef.fieldPath, ctx);
  if (f.resourceFieldRef) return resourceValue(f.resourceFieldRef.resource, f.resourceFieldRef.divisor as string | undefined, ctx);
  if (f.configMapKeyRef) return keyRef('configmap', ns, f.configMapKeyRef.name ?? '', f.configMapKeyRef.key, f.configMapKeyRef.optional === true, ctx.configSource);
  if (f.secretKeyRef) return keyRef('secret', ns, f.secretKeyRef.name ?? '', f.secretKeyRef.key, f.secretKeyRef.optional === true, ctx.configSource);
  if (f.fileKeyRef) return fileKeyRef(f.fileKeyRef, ctx);
  return '';
}

/** A variable from an environment file in one of the pod's volumes, in the kubelet's words when it cannot be had. */
async function fileKeyRef(ref: V1FileKeySelector, ctx: EnvContext): Promise<string | undefined> {
  const root = ctx.volumePath?.(ref.volumeName);
  if (root === undefined) throw configError(`cannot find the volume "${ref.volumeName}" referenced by FileKeyRef`);
  // The file is the pod's: its links are resolved inside the volume, as the kubelet's securejoin does.
  let file = root;
  let value: string;
  try {
    file = resolveInRoot(root, ref.path);
    value = envFileValue(await readFileNoFollow(file), ref.key);
  } catch {
    throw configError("couldn't parse env file");
  }
  if (value === '') {
    if (ref.optional) return undefined;
    throw configError(`environment variable key "${ref.key}" not found in file "${file}"`);
  }
  return value;
}

const MAX_ENV_FILE = 2 * 1024 * 1024;

async function readFileNoFollow(path: string): Promise<string> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    // A FIFO or a device the pod made would block or never end: only a regular file is read, and
    // no bigger than a process's whole environment can be (the kernel's limit is some 2 MiB).
    const st = await handle.stat();
    if (!st.isFile()) throw new Error(`${path}: not a regular file`);
    if (st.size > MAX_ENV_FILE) throw new Error(`${path}: ${st.size} bytes, more than ${MAX_ENV_FILE}`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/** command and args with $(VAR) expanded from the container's environment. */
export function expandCommandAndArgs(container: V1Container, env: Array<{ key: string; value: string }>): { command: string[]; args: string[] } {
  const vars = new Map(env.map((e) => [e.key, e.value]));
  return {
    command: (container.command ?? []).map((c) => expandVars(c, vars)),
    args: (container.args ?? []).map((a) => expandVars(a, vars)),
  };
}
