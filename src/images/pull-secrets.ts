// A pod's imagePullSecrets, read as the kubelet reads them at each sync: the ones that cannot be
// read are named (the pull may still work without them), and said in an event only when a pull
// of that sync failed.
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { ConfigSource } from '../runtime/deps.js';

export async function pullSecretsForPod(source: ConfigSource | undefined, pod: V1Pod): Promise<{ secrets: V1Secret[]; missing: string[] }> {
  const secrets: V1Secret[] = [];
  const missing: string[] = [];
  const ns = pod.metadata?.namespace ?? '';
  for (const ref of pod.spec?.imagePullSecrets ?? []) {
    // The API once let entries without a name through: they mean nothing.
    if (!ref.name) continue;
    let secret: V1Secret | undefined;
    try {
      secret = await source?.getSecret(ns, ref.name);
    } catch {
      secret = undefined;
    }
    if (secret) secrets.push(secret);
    else missing.push(ref.name);
  }
  return { secrets, missing };
}

export const missingPullSecretsMessage = (missing: string[]) =>
  `Unable to retrieve some image pull secrets (${missing.join(', ')}); attempting to pull the image may not succeed.`;
