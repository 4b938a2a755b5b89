// /configz: nodelet's settings under the KubeletConfiguration field names they correspond to, in
// the shape the kubelet answers ({"kubeletconfig": {...}}), so tools that read a node's config
// find what they look for. Settings the kubelet has and nodelet does not are absent.
import type { NodeletConfig } from '../config/config.js';

/** Go's time.Duration text: 1m0s, 10s, 1h0m0s, 500ms. */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}

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
      maxPods: c.maxPods,
      serializeImagePulls: c.serializeImagePulls,
      evictionHard: {
        'memory.available': c.evictionHard.memoryAvailable,
        'nodefs.available': c.evictionHard.nodefsAvailable,
        'pid.available': c.evictionHard.pidAvailable,
      },
      systemReserved: Object.keys(c.systemReserved).length ? c.systemReserved : undefined,
      kubeReserved: Object.keys(c.kubeReserved).length ? c.kubeReserved : undefined,
      registerWithTaints: c.registerWithTaints.length ? c.registerWithTaints : undefined,
      containerRuntimeEndpoint: c.runtime === 'cri' ? c.runtimeEndpoint : `unix://${c.processRuntime.socket || `${c.processRuntime.root}/cri.sock`}`,
    },
  };
}
