// /configz: nodelet's settings under the KubeletConfiguration field names they correspond to, in
// the shape the kubelet answers ({"kubeletconfig": {...}}), so tools that read a node's config
// find what they look for. Settings the kubelet has and nodelet does not are absent.
import type { NodeletConfig } from '../config/config.js';
import { goDuration } from '../util/duration.js';

export function configz(c: NodeletConfig): { kubeletconfig: Record<string, unknown> } {
  return {
    kubeletconfig: {
      enableServer: true,
      featureGates: c.featureGates.PodLogsQuerySplitStreams ? { PodLogsQuerySplitStreams: true } : undefined,
      staticPodPath: c.staticPodPath || undefined,
      podLogsDir: c.podLogRoot,
      containerLogMaxSize: String(c.containerLogMaxSizeBytes),
      containerLogMaxFiles: c.containerLogMaxFiles,
      containerLogMonitorInterval: goDuration(c.containerLogMonitorIntervalMs),
      syncFrequency: goDuration(c.syncFrequencyMs),
      address: c.address,
      port: c.port,
      readOnlyPort: c.readOnlyPort,
      tlsCertFile: c.tlsCertFile || undefined,
      tlsPrivateKeyFile: c.tlsPrivateKeyFile || undefined,
      authentication: {
        x509: { clientCAFile: c.authentication.x509.clientCAFile || undefined },
        webhook: { enabled: c.authentication.webhook.enabled, cacheTTL: goDuration(c.authentication.webhook.cacheTTLMs) },
        anonymous: { enabled: c.authentication.anonymous.enabled },
      },
      authorization: {
        mode: c.authorization.mode,
        webhook: { cacheAuthorizedTTL: goDuration(c.authorization.webhook.cacheAuthorizedTTLMs), cacheUnauthorizedTTL: goDuration(c.authorization.webhook.cacheUnauthorizedTTLMs) },
      },
      registryPullQPS: c.imagePullQPS,
      registryBurst: c.imagePullBurst,
      healthzPort: c.healthzPort,
      healthzBindAddress: c.healthzBindAddress,
      clusterDomain: c.clusterDomain || undefined,
      clusterDNS: c.clusterDNS.length ? c.clusterDNS : undefined,
      nodeStatusUpdateFrequency: goDuration(c.nodeStatusUpdateFrequencyMs),
      nodeStatusReportFrequency: goDuration(c.nodeStatusReportFrequencyMs),
      nodeLeaseDurationSeconds: c.nodeLeaseDurationSeconds,
      resolvConf: c.resolvConf,
      cpuCFSQuota: c.cpuCFSQuota,
      cgroupsPerQOS: c.cgroupsPerQOS,
      cgroupDriver: c.cgroupDriver,
      cgroupRoot: c.cgroupRoot,
      enforceNodeAllocatable: c.enforceNodeAllocatable.length ? c.enforceNodeAllocatable : ['none'],
      podPidsLimit: c.podPidsLimit,
      singleProcessOOMKill: c.singleProcessOOMKill,
      maxPods: c.maxPods,
      serializeImagePulls: c.serializeImagePulls,
      maxParallelImagePulls: c.maxParallelImagePulls || undefined,
      imageGCHighThresholdPercent: c.imageGCHighThresholdPercent,
      imageGCLowThresholdPercent: c.imageGCLowThresholdPercent,
      imageMinimumGCAge: goDuration(c.imageMinimumGCAgeMs),
      imageMaximumGCAge: goDuration(c.imageMaximumGCAgeMs),
      evictionHard: c.evictionHard,
      evictionSoft: Object.keys(c.evictionSoft).length ? c.evictionSoft : undefined,
      evictionSoftGracePeriod: Object.keys(c.evictionSoftGracePeriod).length ? c.evictionSoftGracePeriod : undefined,
      evictionMinimumReclaim: Object.keys(c.evictionMinimumReclaim).length ? c.evictionMinimumReclaim : undefined,
      evictionMaxPodGracePeriod: c.evictionMaxPodGracePeriod,
      mergeDefaultEvictionSettings: c.mergeDefaultEvictionSettings,
      systemReserved: Object.keys(c.systemReserved).length ? c.systemReserved : undefined,
      kubeReserved: Object.keys(c.kubeReserved).length ? c.kubeReserved : undefined,
      registerWithTaints: c.registerWithTaints.length ? c.registerWithTaints : undefined,
      containerRuntimeEndpoint: c.runtime === 'cri' ? c.runtimeEndpoint : `unix://${c.processRuntime.socket || `${c.processRuntime.root}/cri.sock`}`,
    },
  };
}
