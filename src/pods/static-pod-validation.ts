// What a static pod manifest must be before the agent takes it: no API server validated it, so a
// field of the wrong type would otherwise reach code that trusts the API's types. The kubelet runs
// the API server's whole validation here; nodelet checks the shapes its code relies on, and, as the
// kubelet, refuses references to API objects (a node may read those only for pods the API admitted).
import { parseQuantity } from '../util/quantity.js';

type Obj = Record<string, any>;

const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const optList = (v: unknown) => v === undefined || v === null || Array.isArray(v);
const optObj = (v: unknown) => v === undefined || v === null || isObj(v);

function quantitiesProblem(where: string, list: unknown): string | undefined {
  if (!optObj(list)) return `${where}: expected a map of quantities`;
  for (const [k, v] of Object.entries((list as Obj | undefined) ?? {})) {
    if (typeof v !== 'string' && typeof v !== 'number') return `${where}.${k}: expected a quantity`;
    try {
      parseQuantity(v);
    } catch {
      return `${where}.${k}: ${JSON.stringify(v)} is not a quantity`;
    }
  }
  return undefined;
}

function containerProblem(where: string, c: Obj, seen: Set<string>): string | undefined {
  if (typeof c.name !== 'string' || !DNS_LABEL.test(c.name)) return `${where}.name: ${JSON.stringify(c.name)} is not a valid container name`;
  if (seen.has(c.name)) return `${where}.name: duplicate name ${JSON.stringify(c.name)}`;
  seen.add(c.name);
  if (typeof c.image !== 'string' || !c.image) return `${where}.image: required`;
  for (const f of ['command', 'args']) {
    if (c[f] !== undefined && (!Array.isArray(c[f]) || !(c[f] as unknown[]).every((x) => typeof x === 'string'))) return `${where}.${f}: expected a list of strings`;
  }
  for (const f of ['env', 'envFrom', 'ports', 'volumeMounts']) {
    if (!optList(c[f])) return `${where}.${f}: expected a list`;
    if (((c[f] as unknown[] | undefined) ?? []).some((x) => !isObj(x))) return `${where}.${f}: expected a list of objects`;
  }
  for (const [i, e] of ((c.env as Obj[] | undefined) ?? []).entries()) {
    if (typeof e.name !== 'string' || !e.name) return `${where}.env[${i}].name: required`;
    if (e.value !== undefined && typeof e.value !== 'string') return `${where}.env[${i}].value: expected a string`;
  }
  for (const [i, p] of ((c.ports as Obj[] | undefined) ?? []).entries()) {
    for (const f of ['containerPort', 'hostPort']) {
      const v = p[f];
      if ((f === 'containerPort' || v !== undefined) && !(Number.isInteger(v) && v >= (f === 'hostPort' ? 0 : 1) && v <= 65535)) return `${where}.ports[${i}].${f}: expected a port number, got ${JSON.stringify(v)}`;
    }
  }
  for (const [i, m] of ((c.volumeMounts as Obj[] | undefined) ?? []).entries()) {
    if (typeof m.name !== 'string' || typeof m.mountPath !== 'string') return `${where}.volumeMounts[${i}]: name and mountPath are required`;
  }
  if (!optObj(c.resources)) return `${where}.resources: expected a map`;
  return quantitiesProblem(`${where}.resources.requests`, c.resources?.requests) ?? quantitiesProblem(`${where}.resources.limits`, c.resources?.limits);
}

/** The API objects a pod refers to, as the kubelet names them when it refuses a static pod; undefined if none. */
export function apiObjectReference(spec: Obj): string | undefined {
  if (spec.serviceAccountName) return 'serviceaccounts';
  const containers: Obj[] = [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
  const envs = containers.flatMap((c) => (c.env ?? []) as Obj[]);
  const envFroms = containers.flatMap((c) => (c.envFrom ?? []) as Obj[]);
  const volumes: Obj[] = spec.volumes ?? [];
  if ((spec.imagePullSecrets ?? []).length || envs.some((e) => e.valueFrom?.secretKeyRef) || envFroms.some((e) => e.secretRef)) return 'secrets';
  if (volumes.some((v) => v.secret || v.projected?.sources?.some((s: Obj) => s.secret))) return 'secrets';
  if (envs.some((e) => e.valueFrom?.configMapKeyRef) || envFroms.some((e) => e.configMapRef)) return 'configmaps';
  if (volumes.some((v) => v.configMap || v.projected?.sources?.some((s: Obj) => s.configMap))) return 'configmaps';
  if ((spec.resourceClaims ?? []).length) return 'resourceclaims';
  for (const v of volumes) {
    if (v.persistentVolumeClaim) return 'persistentvolumeclaims';
    if (v.ephemeral) return 'persistentvolumeclaims (via ephemeral volumes)';
    if (v.csi) return 'csidrivers (via CSI volumes)';
    for (const s of (v.projected?.sources ?? []) as Obj[]) {
      if (s.serviceAccountToken) return 'serviceaccounts (via projected volumes)';
      if (s.clusterTrustBundle) return 'clustertrustbundles';
      if (s.podCertificate) return 'podcertificates';
    }
  }
  return undefined;
}

/** Checks what a pod manifest must have to run; returns the first problem, naming its field. */
export function validateManifest(doc: unknown): string | undefined {
  if (!isObj(doc)) return 'not a Pod object';
  if (doc.kind !== 'Pod') return `kind: expected Pod, got ${JSON.stringify(doc.kind)}`;
  if (doc.apiVersion !== 'v1') return `apiVersion: expected v1, got ${JSON.stringify(doc.apiVersion)}`;
  if (!isObj(doc.metadata)) return 'metadata: expected a map with a name';
  const name = doc.metadata.name;
  if (typeof name !== 'string' || !DNS1123.test(name)) return `metadata.name: ${JSON.stringify(name)} is not a valid name`;
  const ns = doc.metadata.namespace;
  if (ns !== undefined && (typeof ns !== 'string' || !DNS_LABEL.test(ns))) return `metadata.namespace: ${JSON.stringify(ns)} is not a valid namespace`;
  for (const f of ['labels', 'annotations']) {
    if (!optObj(doc.metadata[f]) || Object.values((doc.metadata[f] as Obj | undefined) ?? {}).some((v) => typeof v !== 'string')) return `metadata.${f}: expected a map of strings`;
  }
  const spec = doc.spec;
  if (!isObj(spec)) return 'spec: expected a map';
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) return 'spec.containers: at least one container is required';
  const seen = new Set<string>();
  for (const kind of ['initContainers', 'containers'] as const) {
    const list = spec[kind] ?? [];
    if (!Array.isArray(list)) return `spec.${kind}: expected a list`;
    for (const [i, c] of (list as unknown[]).entries()) {
      if (!isObj(c)) return `spec.${kind}[${i}]: expected a container`;
      const problem = containerProblem(`spec.${kind}[${i}]`, c, seen);
      if (problem) return problem;
    }
  }
  if (!optList(spec.volumes) || ((spec.volumes as unknown[] | undefined) ?? []).some((v) => !isObj(v) || typeof v.name !== 'string')) return 'spec.volumes: expected a list of volumes, each with a name';
  const policy = spec.restartPolicy;
  if (policy !== undefined && !['Always', 'OnFailure', 'Never'].includes(policy)) return `spec.restartPolicy: expected Always, OnFailure or Never, got ${JSON.stringify(policy)}`;
  const ref = apiObjectReference(spec);
  if (ref) return `static pods may not reference ${ref}`;
  return undefined;
}
