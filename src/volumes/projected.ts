// projected volumes: configMap, secret, downwardAPI and serviceAccountToken sources merged into
// one directory, on a tmpfs. Each source's failure is collected; any failure fails the volume.
import type { V1Pod } from '@kubernetes/client-node';
import type { Payload } from './atomic-writer.js';
import { setUpAtomicVolume, tearDownVolumeDir } from './atomic-volume.js';
import { configMapPayload, readConfigMap } from './configmap.js';
import { downwardAPIPayload } from './downward-api.js';
import { PLUGINS } from './paths.js';
import { secretPayload, readSecret } from './secret.js';
import { VolumeSetUpError, type VolumeContext, type VolumePlugin } from './types.js';
import { aggregateErrors } from '../util/errors.js';

/** The one user every container runs as, when they all name the same (the token file is then theirs). */
export function podFsUser(pod: V1Pod): number | undefined {
  const podUser = pod.spec?.securityContext?.runAsUser;
  const users = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.securityContext?.runAsUser ?? podUser);
  if (users.length === 0 || users.some((u) => u == null)) return undefined;
  return users.every((u) => u === users[0]) ? users[0]! : undefined;
}

async function projectedPayload(ctx: VolumeContext): Promise<Payload> {
  const { pod, volume, host } = ctx;
  const src = volume.projected!;
  const out: Payload = new Map();
  const errors: string[] = [];
  const ns = pod.metadata?.namespace ?? '';
  for (const s of src.sources ?? []) {
    try {
      let part: Payload;
      if (s.configMap) {
        const optional = s.configMap.optional === true;
        part = configMapPayload(await readConfigMap(ctx, s.configMap.name ?? '', optional), s.configMap.items, src.defaultMode, optional);
      } else if (s.secret) {
        const optional = s.secret.optional === true;
        part = secretPayload(await readSecret(ctx, s.secret.name ?? '', optional), s.secret.items, src.defaultMode, optional);
      } else if (s.downwardAPI) {
        part = downwardAPIPayload(pod, s.downwardAPI.items ?? [], src.defaultMode, host.allocatable());
      } else if (s.serviceAccountToken) {
        if (!host.tokens) throw new Error('not supported due to running nodelet in standalone mode');
        const t = s.serviceAccountToken;
        const token = await host.tokens.getToken(ns, pod.spec?.serviceAccountName || 'default', {
          audiences: t.audience ? [t.audience] : undefined,
          expirationSeconds: t.expirationSeconds ?? 3600,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
        });
        const fsUser = podFsUser(pod);
        // Only its owner reads a token, where the kubelet can tell who that is (one user, or an fsGroup).
        const restricted = fsUser !== undefined || pod.spec?.securityContext?.fsGroup != null;
        part = new Map([[t.path, { data: Buffer.from(token, 'utf8'), mode: restricted ? 0o600 : (src.defaultMode ?? 0o644), uid: fsUser }]]);
      } else {
        throw new Error('projected source not supported by nodelet (clusterTrustBundle, podCertificate)');
      }
      for (const [p, f] of part) out.set(p, f);
    } catch (err) {
      errors.push(err instanceof VolumeSetUpError || err instanceof Error ? err.message : String(err));
    }
  }
  const message = aggregateErrors(errors);
  if (message !== undefined) throw new VolumeSetUpError(volume.name, message);
  return out;
}

export const projectedPlugin: VolumePlugin = {
  name: PLUGINS.projected,
  path: (ctx) => ctx.host.paths.volumeDir(ctx.pod.metadata?.uid ?? '', PLUGINS.projected, ctx.volume.name),
  setUp: (ctx) => setUpAtomicVolume(ctx, PLUGINS.projected, projectedPlugin.path(ctx), true, () => projectedPayload(ctx)),
  tearDown: (host, path, mounts) => tearDownVolumeDir(host.mounter, path, mounts),
};
