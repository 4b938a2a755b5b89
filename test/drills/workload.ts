// The pods that stand on a drilled node through every drill: long-running ones (one and two
// containers), crash-looping ones, ones with probes, ones with volumes of each common kind, and
// Jobs that complete. About 20 in a full run; one or two of each kind in the short one.
import * as k8s from '@kubernetes/client-node';
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { clusterEnv } from '../support/cluster.js';
import type { Workload } from './types.js';

export type PodKind = 'long' | 'pair' | 'crash' | 'probes' | 'volumes' | 'job';

/** How many of each kind. */
const FULL: Record<PodKind, number> = { long: 6, pair: 2, crash: 3, probes: 3, volumes: 3, job: 3 };
const REDUCED: Record<PodKind, number> = { long: 2, pair: 1, crash: 1, probes: 1, volumes: 1, job: 1 };

const LOOP = 'trap "exit 0" TERM; while true; do sleep 1; done';

export interface KubeClients {
  core: k8s.CoreV1Api;
  batch: k8s.BatchV1Api;
  coordination: k8s.CoordinationV1Api;
}

export function kubeClients(): KubeClients {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(clusterEnv().kubeconfig);
  return { core: kc.makeApiClient(k8s.CoreV1Api), batch: kc.makeApiClient(k8s.BatchV1Api), coordination: kc.makeApiClient(k8s.CoordinationV1Api) };
}

function c(name: string, script: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: clusterEnv().testImage, command: ['sh', '-c', script], ...extra };
}

function specFor(kind: PodKind): V1PodSpec {
  switch (kind) {
    case 'long':
      return { containers: [c('main', LOOP)] };
    case 'pair':
      return { containers: [c('main', LOOP), c('side', `echo side up; ${LOOP}`)] };
    case 'crash':
      // Runs a moment, then fails: CrashLoopBackOff with a growing back-off.
      return { containers: [c('main', 'echo starting; sleep 2; exit 3')] };
    case 'probes':
      return {
        containers: [
          c('main', 'touch /tmp/alive; exec httpd -f -p 8080 -h /tmp', {
            livenessProbe: { exec: { command: ['cat', '/tmp/alive'] }, periodSeconds: 2, failureThreshold: 3 },
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 2 },
            startupProbe: { exec: { command: ['test', '-e', '/tmp/alive'] }, periodSeconds: 1, failureThreshold: 30 },
          }),
        ],
      };
    case 'volumes':
      return {
        containers: [c('main', `cat /cfg/greeting /sec/token >/dev/null && ls /var/run/secrets/kubernetes.io/serviceaccount/token >/dev/null && echo ok > /scratch/ok && ${LOOP}`, {
          volumeMounts: [
            { name: 'cfg', mountPath: '/cfg' },
            { name: 'sec', mountPath: '/sec' },
            { name: 'scratch', mountPath: '/scratch' },
            { name: 'info', mountPath: '/info' },
          ],
        })],
        volumes: [
          { name: 'cfg', configMap: { name: 'drills-config' } },
          { name: 'sec', secret: { secretName: 'drills-secret' } },
          { name: 'scratch', emptyDir: {} },
          { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
        ],
      };
    case 'job':
      return { restartPolicy: 'Never', containers: [c('main', 'sleep 1; echo done')] };
  }
}

export class StandingWorkload implements Workload {
  /** Pod name prefix → kind; Job pods carry the job's name. */
  private readonly kinds = new Map<string, PodKind>();

  constructor(
    private readonly kube: KubeClients,
    readonly namespace: string,
    readonly node: string,
    readonly reduced: boolean,
  ) {}

  /** Creates the namespace's ConfigMap and Secret, then every pod and Job. */
  async create(): Promise<void> {
    const ns = this.namespace;
    await this.kube.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'drills-config' }, data: { greeting: 'hello' } } });
    await this.kube.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'drills-secret' }, stringData: { token: 's3cret' } } });
    const counts = this.reduced ? REDUCED : FULL;
    const creates: Array<Promise<unknown>> = [];
    for (const [kind, n] of Object.entries(counts) as Array<[PodKind, number]>) {
      for (let i = 0; i < n; i++) {
        const name = `${kind}-${i}`;
        this.kinds.set(name, kind);
        const spec: V1PodSpec = { terminationGracePeriodSeconds: 5, ...specFor(kind), nodeName: this.node };
        const labels = { 'drills.nodelet.io/kind': kind };
        if (kind === 'job') {
          creates.push(this.kube.batch.createNamespacedJob({ namespace: ns, body: { metadata: { name }, spec: { backoffLimit: 0, template: { metadata: { labels }, spec } } } }));
        } else {
          creates.push(this.kube.core.createNamespacedPod({ namespace: ns, body: { metadata: { name, labels }, spec } }));
        }
      }
    }
    await Promise.all(creates);
  }

  /** The kind of a workload pod (undefined: not one of the standing workload's). */
  kindOf(pod: V1Pod): PodKind | undefined {
    const kind = pod.metadata?.labels?.['drills.nodelet.io/kind'];
    return kind && Object.hasOwn(FULL, kind) ? (kind as PodKind) : undefined;
  }

  async pods(): Promise<V1Pod[]> {
    const list = await this.kube.core.listNamespacedPod({ namespace: this.namespace, labelSelector: 'drills.nodelet.io/kind' });
    return list.items;
  }

  async settled(): Promise<boolean> {
    const pods = await this.pods();
    const counts = this.reduced ? REDUCED : FULL;
    const expected = Object.values(counts).reduce((a, b) => a + b, 0);
    if (pods.length !== expected) return false;
    return pods.every((p) => {
      const kind = this.kindOf(p);
      const cs = p.status?.containerStatuses ?? [];
      if (kind === 'job') return p.status?.phase === 'Succeeded';
      if (kind === 'crash') return p.status?.phase === 'Running' && cs.length === 1 && cs[0]!.restartCount >= 1;
      return p.status?.phase === 'Running' && cs.length === (p.spec?.containers.length ?? 0) && cs.every((s) => s.ready && s.state?.running);
    });
  }
}
