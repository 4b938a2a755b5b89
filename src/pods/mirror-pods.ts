// Mirror pods: with an API server configured, each static pod gets an API object of the same name
// (annotation kubernetes.io/config.mirror = the static pod's hash, owned by the Node) whose status
// nodelet keeps current, so `kubectl get pods` shows static pods as it does on any node.
import type { V1Pod } from '@kubernetes/client-node';
import { apiErrorMessage, httpCode, type KubeClient } from '../kube/client.js';
import type { Logger } from '../observability/logger.js';
import { ConfigHashAnnotation, ConfigMirrorAnnotation } from './static-pods.js';

export function isMirrorPod(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[ConfigMirrorAnnotation] !== undefined;
}

/** The pod of that namespace and name as the agent runs it: a static pod, not its mirror. */
export function podNamed(pods: V1Pod[], namespace: string, name: string): V1Pod | undefined {
  const matches = pods.filter((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
  return matches.find((p) => !isMirrorPod(p)) ?? matches[0];
}

interface Mirror {
  namespace: string;
  name: string;
  uid: string;
}

export class MirrorPodManager {
  /** static pod UID -> its mirror in the API */
  private readonly mirrors = new Map<string, Mirror>();

  constructor(
    private readonly kube: KubeClient,
    private readonly nodeName: string,
    private readonly nodeUID: () => string | undefined,
    private readonly logger: Logger,
  ) {}

  mirrorOf(staticUID: string): Mirror | undefined {
    return this.mirrors.get(staticUID);
  }

  /**
   * Makes the API hold a mirror of `pod` with its hash: adopts one, replaces a stale one, or
   * creates it. Whether it made a new one (whose status is still the API's empty one).
   */
  async ensure(pod: V1Pod): Promise<boolean> {
    const uid = pod.metadata!.uid!;
    const hash = pod.metadata?.annotations?.[ConfigHashAnnotation] ?? uid;
    const namespace = pod.metadata!.namespace!;
    const name = pod.metadata!.name!;
    let existing: V1Pod | undefined;
    try {
      existing = await this.kube.getPod(namespace, name);
    } catch (err) {
      throw new Error(`read mirror pod ${namespace}/${name}: ${apiErrorMessage(err)}`);
    }
    if (existing && existing.metadata?.annotations?.[ConfigMirrorAnnotation] === hash && !existing.metadata.deletionTimestamp) {
      this.mirrors.set(uid, { namespace, name, uid: existing.metadata.uid! });
      return false;
    }
    if (existing) {
      if (!isMirrorPod(existing)) throw new Error(`a pod ${namespace}/${name} that is not a mirror pod is in the way of static pod ${name}`);
      // The manifest changed: the old mirror goes, a new one comes.
      await this.kube.deletePod(namespace, name, existing.metadata!.uid!).catch((err) => {
        if (httpCode(err) !== 404 && httpCode(err) !== 409) throw err;
      });
    }
    const nodeUID = this.nodeUID();
    const created = await this.kube.createPod(namespace, {
      metadata: {
        name,
        namespace,
        labels: pod.metadata?.labels,
        annotations: { ...(pod.metadata?.annotations ?? {}), [ConfigMirrorAnnotation]: hash },
        ownerReferences: nodeUID ? [{ apiVersion: 'v1', kind: 'Node', name: this.nodeName, uid: nodeUID, controller: true }] : undefined,
      },
      spec: pod.spec,
    });
    this.mirrors.set(uid, { namespace, name, uid: created.metadata!.uid! });
    this.logger.info('mirror pod created', { pod: `${namespace}/${name}`, uid: created.metadata!.uid, staticUID: uid });
    return true;
  }

  /** Deletes the mirror of a static pod that is gone. */
  async remove(staticUID: string): Promise<void> {
    const m = this.mirrors.get(staticUID);
    if (!m) return;
    try {
      await this.kube.deletePod(m.namespace, m.name, m.uid);
    } catch (err) {
      if (httpCode(err) !== 404 && httpCode(err) !== 409) throw new Error(`delete mirror pod ${m.namespace}/${m.name}: ${apiErrorMessage(err)}`);
    }
    this.mirrors.delete(staticUID);
  }
}
