// `runtime: process`: the process runtime runs inside the agent's own process and serves CRI on
// its socket, so the agent talks to it exactly as to containerd.
import type { NodeletConfig } from '../config/config.js';
import type { Logger } from '../observability/logger.js';
import { ProcessRuntime } from '../procruntime/runtime.js';
import { ProcessRuntimeServer } from '../procruntime/server.js';

export interface EmbeddedRuntime {
  runtime: ProcessRuntime;
  server: ProcessRuntimeServer;
  /** The CRI endpoint the agent dials, unix://<socket>. */
  endpoint: string;
}

export async function startEmbeddedRuntime(config: NodeletConfig, logger: Logger): Promise<EmbeddedRuntime> {
  const pr = config.processRuntime;
  const socket = pr.socket || `${pr.root}/cri.sock`;
  const runtime = new ProcessRuntime({
    root: pr.root,
    imagesDir: pr.imagesDir || undefined,
    hostIP: config.nodeIP || undefined,
    cniConfDir: pr.cniConfDir,
    cniBinDirs: pr.cniBinDir.split(':').filter(Boolean),
    registryCertsDir: pr.registryCertsDir || undefined,
    pullProgressTimeoutMs: config.imagePullProgressDeadlineMs,
    log: (m, f) => logger.info(m, f),
    warn: (m, f) => logger.warn(m, f),
  });
  await runtime.start();
  const server = new ProcessRuntimeServer(runtime);
  await server.listen(socket);
  const endpoint = `unix://${socket}`;
  logger.info('process runtime serving', { socket: endpoint, isolation: runtime.isolationMode });
  return { runtime, server, endpoint };
}
