// What the node API's /stats/summary reads, from the agent's parts: the runtime's stats, the
// pods' sandboxes (for their network namespaces) and their API start times.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import type { NodeletConfig } from '../config/config.js';
import type { StatsSources } from '../server/stats.js';

export function statsSources(
  config: NodeletConfig,
  cri: () => CriClient,
  pods: () => V1Pod[],
  podStatus: (uid: string) => V1PodStatus | undefined,
  now: () => number,
  podProcessCount?: (pod: V1Pod) => number | undefined,
): StatsSources {
  return {
    nodeName: config.nodeName,
    podLogRoot: config.podLogRoot,
    rootDir: config.rootDir,
    listContainerStats: () => cri().listContainerStats(),
    listContainers: () => cri().listContainers(),
    imageFsInfo: () => cri().imageFsInfo(),
    sandboxPid: async (uid) => {
      // hostNetwork pods are on the host's network.
      const pod = pods().find((p) => p.metadata?.uid === uid);
      if (pod?.spec?.hostNetwork) return 'host';
      // Else a process of the ready sandbox (CRI's verbose status, as containerd and the process runtime report it).
      const [sb] = await cri().listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid }, state: { state: 'SANDBOX_READY' } });
      if (!sb) return undefined;
      const info = (await cri().podSandboxStatus(sb.id, true)).info?.info;
      const pid = info ? (JSON.parse(info) as { pid?: number }).pid : undefined;
      return pid && pid > 0 ? pid : undefined;
    },
    podStartTime: (uid) => {
      const t = podStatus(uid)?.startTime;
      return t ? new Date(t).toISOString().replace(/\.\d+Z$/, 'Z') : undefined;
    },
    podProcessCount: (uid) => {
      const pod = pods().find((p) => p.metadata?.uid === uid);
      return pod && podProcessCount?.(pod);
    },
    now,
  };
}
