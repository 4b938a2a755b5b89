// The agent: pod source -> pod workers -> runtime manager -> CRI, with results going back out
// through the status manager and the event recorder. This file only wires and schedules.
import type { V1Node, V1ObjectReference, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { CriClient, checkRuntimeVersion } from '../cri/client.js';
import { ApiEventRecorder } from '../kube/events.js';
import { LocalPodStatusStore, LogEventRecorder } from '../kube/local.js';
import { readHostInfo } from '../kube/host.js';
import { standaloneNode } from '../kube/node-status.js';
import { isStaticPod, StaticPodSource } from '../pods/static-pods.js';
import { isMirrorPod, MirrorPodManager } from '../pods/mirror-pods.js';
import { startEmbeddedRuntime, type EmbeddedRuntime } from './embedded-runtime.js';
import type { KubeClient } from '../kube/client.js';
import { nodeIdentity, type NodeIdentity } from '../kube/node-identity.js';
import { PodReflector, restWatch } from '../kube/reflector.js';
import { podFields, type Logger } from '../observability/logger.js';
import { Metrics } from '../observability/metrics.js';
import type { GenericPLEG } from '../pleg/generic-pleg.js';
import { newPlegs, type EventedPLEG } from '../pleg/evented-pleg.js';
import { PodResizer } from './pod-resize.js';
import { PodAdmission } from './pod-admission.js';
import { handlePodCleanups } from './pod-cleanups.js';
import { PodCgroups } from './pod-cgroups.js';
import { newPodEvictions, type PodEvictions } from './pod-evictions.js';
import { shutdownGroups } from '../nodeshutdown/groups.js';
import type { NodeEnded } from '../status/node-ended.js';
import { NodeShutdownManager } from '../nodeshutdown/shutdown-manager.js';
import { deleteFromApi, newStatusManager } from './status-writer.js';
import { statsSources } from './stats-sources.js';
import { runtimeManagerDeps } from './runtime-deps.js';
import { RuntimeState } from './runtime-state.js';
import { NETWORK_NOT_READY_MESSAGE, NetworkNotReadyError, PodWorkers, type PodSyncer, type SyncOutcome, type UpdateType, type WorkTrigger } from '../pods/pod-workers.js';
import { explainTermination, terminationWhy } from '../runtime/plan.js';
import { DebugView } from './debug-view.js';
import type { NodeletConfig } from '../config/config.js';
import type { RuntimeManagerDeps } from '../runtime/deps.js';
import { isBackOffReason } from '../runtime/errors.js';
import { defaultGCPolicy, garbageCollect, removeDeletedPod } from '../runtime/gc.js';
import { execInContainer } from '../runtime/hooks.js';
import { killPodWithSyncResult } from '../runtime/kill.js';
import { getPodStatus, getPods } from '../runtime/pod-status.js';
import { syncPod } from '../runtime/sync-pod.js';
import type { PodSyncResult } from '../runtime/sync-result.js';
import { runningPodFromStatus, type PodStatus } from '../runtime/types.js';
import { ContainerLogManager } from '../logs/rotation.js';
import { ProbeManager } from '../prober/manager.js';
import { RuntimeClassManager } from '../kube/runtime-class.js';
import { ServiceCache } from '../kube/service-cache.js';
import { startNodeApi, type NodeApi } from '../server/serve.js';
import { NodeController } from '../kube/node-controller.js';
import { EventReasons, podRef } from '../kube/object-ref.js';
import { activeDeadline, type ActiveDeadline } from '../pods/active-deadline.js';
import { NODELET_VERSION } from '../version.js';
import { generateAPIPodStatus, type GenerateInput } from '../status/generate.js';
import type { StatusManager } from '../status/status-manager.js';
import { ImageGCManager, nodeObjectRef } from '../images/image-gc-manager.js';
import { CountingClock, realClock, type Clock, type Timer } from '../util/clock.js';
import { internalSizes } from './sizes.js';
import { StartTrace } from './start-trace.js';
import { PodCache, POD_CACHE_MAX_AGE_MS } from '../runtime/pod-cache.js';
import { newVolumes, type Volumes } from '../volumes/volume-host.js';
import { VolumesNotReadyError } from '../volumes/volume-manager.js';
import { applyOwnOomScoreAdj } from '../util/oom-score.js';

/** The runtime's view of a pod that has nothing in it. */
function noRuntimeYet(uid: string, name: string, namespace: string, now: number): PodStatus {
  return { uid, name, namespace, ips: [], sandboxStatuses: [], containerStatuses: [], timestamp: now };
}

/** How soon a pod whose volumes could not be set up is tried again (the kubelet's sync back-off). */
const VOLUME_RETRY_MS = 10_000;

export interface AgentDeps {
  logger: Logger;
  clock?: Clock;
}

export class Agent implements PodSyncer {
  readonly metrics = new Metrics({ processMetrics: true });
  private readonly clock: CountingClock;
  private readonly logger: Logger;
  private cri!: CriClient;
  /** Who the agent is to the API server: the node's own client certificate once bootstrapped. */
  private readonly identity: NodeIdentity;
  /** Undefined when nodelet runs standalone (no kubeconfig and not in a cluster). */
  private readonly kube?: KubeClient;
  private readonly recorder: ApiEventRecorder | LogEventRecorder;
  private readonly local = new LocalPodStatusStore();
  private readonly statusManager: StatusManager;
  readonly workers: PodWorkers;
  private readonly reflector?: PodReflector;
  private readonly staticPods?: StaticPodSource;
  private pleg!: GenericPLEG;
  /** Container events from the runtime, where it streams them (the relist then a safety net). */
  private eventedPleg?: EventedPLEG;
  private runtimeState!: RuntimeState;
  private processRuntime?: EmbeddedRuntime;
  private mirrors?: MirrorPodManager;
  private nodeApi?: NodeApi;
  private logRotation?: ContainerLogManager;
  private probes!: ProbeManager;
  /** Services of the namespaces this node has pods in, for service-link variables. */
  private services?: ServiceCache;
  private runtimeClasses?: RuntimeClassManager;
  private deps!: RuntimeManagerDeps;
  private podCgroups?: PodCgroups;
  private evictions?: PodEvictions;
  private readonly shutdownManager: NodeShutdownManager;
  private readonly volumes: Volumes;
  private readonly lastSync = new Map<string, PodSyncResult>();
  /** What the runtime last said of each pod, for resyncs nothing has changed since (see PodCache). */
  private readonly podCache = new PodCache({ now: () => this.clock.now(), maxAgeMs: POD_CACHE_MAX_AGE_MS, watching: () => this.pleg?.healthy() ?? false });
  private readonly startTrace: StartTrace;
  /** Plans, sync history and the live summary served at /debug. */
  readonly debug: DebugView;
  private readonly loops: Array<{ timer?: Timer }> = [];
  private stopping = false;
  private housekeepingRunning = false;
  private nodeController?: NodeController;
  private imageGC?: ImageGCManager;
  private readonly admission: PodAdmission;
  private readonly resizer: PodResizer;
  private sourcesReady = false;
  /** Standalone: the node as admission sees it, built from the config and the host. */
  private localNode?: V1Node;

  constructor(
    private readonly config: NodeletConfig,
    deps: AgentDeps,
  ) {
    const opts = config;
    // Counted, so that /metrics shows whether timers pile up.
    this.clock = new CountingClock(deps.clock ?? realClock);
    this.startTrace = new StartTrace(this.clock, this.metrics);
    this.logger = deps.logger;
    this.identity = nodeIdentity(config, { logger: this.logger, clock: this.clock });
    this.kube = this.identity.client;
    const kube = this.kube;
    const host = kube ? new URL(kube.rest.conn.server).host : '';
    if (kube) kube.rest.observer = (method, code) => this.metrics.restClientRequests.inc({ code, method, host });
    this.recorder = kube
      ? new ApiEventRecorder({ api: kube, component: 'nodelet', host: opts.nodeName, clock: this.clock, logger: this.logger, metrics: this.metrics })
      : new LogEventRecorder(this.logger);
    this.resizer = new PodResizer(this.recorder, () => this.clock.now());
    // Static pods have no API object: their status stays local (served on /pods) and goes to their mirror pod.
    this.statusManager = newStatusManager({
      kube,
      local: this.local,
      staticPods: () => this.staticPods,
      mirrors: () => this.mirrors,
      sent: (uid, st) => this.startTrace.statusSent(uid, st),
      clock: this.clock,
      logger: this.logger,
    });
    this.workers = new PodWorkers({
      syncer: this,
      clock: this.clock,
      logger: this.logger,
      metrics: this.metrics,
      resyncIntervalMs: opts.syncFrequencyMs,
      backoffPeriodMs: opts.podWorkerBackOffPeriodMs,
      maxConcurrentSyncs: opts.maxConcurrentSyncs,
    });
    this.shutdownManager = new NodeShutdownManager({
      groups: shutdownGroups(opts.shutdownGracePeriodMs, opts.shutdownGracePeriodCriticalPodsMs),
      clock: this.clock,
      logger: this.logger,
      activePods: () => this.workers.activePods(),
      wake: (uid) => this.workers.wake(uid),
      isTerminated: (uid) => this.workers.isPodTerminated(uid),
      nodeEvent: (type, reason, message) => this.nodeEvent(type, reason, message),
      syncNodeStatus: async () => this.nodeController?.updateStatus(),
    });
    this.debug = new DebugView(
      {
        clock: this.clock,
        workers: this.workers,
        pods: () => this.pods(),
        podStatus: (uid) => this.statusManager.podStatus(uid),
        deps: () => this.deps,
        allocatedPod: (pod) => this.resizer.allocatedPod(pod),
      },
      opts.syncHistoryLength,
    );
    this.volumes = newVolumes({ rootDir: opts.rootDir, kube, recorder: this.recorder, logger: this.logger, clock: this.clock, node: () => this.nodeController?.nodeObject ?? this.localNode });
    this.admission = new PodAdmission({
      workers: this.workers,
      clock: this.clock,
      resizer: this.resizer,
      node: () => this.nodeController?.nodeObject ?? this.localNode,
      allowedUnsafeSysctls: config.allowedUnsafeSysctls,
      setPodStatus: (pod, st) => this.statusManager.setPodStatus(pod, st),
      recorder: this.recorder,
      logger: this.logger,
      kube,
      nodeIP: () => this.deps.nodeIP,
      now: () => this.clock.now(),
      shuttingDown: () => this.shutdownManager.isShuttingDown(),
    });
    const onPod = (type: UpdateType) => (pod: V1Pod) => this.admission.handlePod(pod, type);
    if (opts.staticPodPath) {
      this.staticPods = new StaticPodSource(opts.staticPodPath, opts.nodeName, { onAdd: onPod('create'), onDelete: onPod('delete') }, this.logger);
    }
    if (!kube) return;
    this.services = new ServiceCache({ api: kube, stream: restWatch(kube.rest), clock: this.clock, logger: this.logger });
    this.runtimeClasses = new RuntimeClassManager({ api: kube, stream: restWatch(kube.rest), clock: this.clock, logger: this.logger });
    if (this.staticPods) this.mirrors = new MirrorPodManager(kube, opts.nodeName, () => this.nodeController?.nodeObject?.metadata?.uid, this.logger);
    this.reflector = new PodReflector({
      api: kube,
      stream: restWatch(kube.rest),
      nodeName: opts.nodeName,
      clock: this.clock,
      logger: this.logger,
      resyncPeriodMs: opts.informerResyncMs,
      handler: {
        onAdd: (pod) => {
          this.startTrace.seen(pod.metadata?.uid ?? '');
          this.admission.handlePod(pod, 'create');
        },
        onUpdate: onPod('update'),
        onDelete: onPod('delete'),
        onResync: onPod('sync'),
        onSynced: () => {
          this.sourcesReady = true;
        },
      },
    });
  }

  /** Every pod this agent was given, with its status (the API's, or the local one of a static pod). */
  pods(): V1Pod[] {
    const all = [...(this.reflector?.list() ?? []), ...(this.staticPods?.list() ?? [])];
    return all.map((p) => ({ ...p, status: this.local.status(p.metadata?.uid ?? '') ?? p.status }));
  }

  /**
   * Gets the node's credentials (a bootstrap waits for its client certificate), checks the
   * runtime's version (refusing any but CRI 0.1.0), then starts every loop.
   */
  async start(): Promise<void> {
    const opts = this.config;
    // The node's cgroups first, as the kubelet's container manager: a cgroup root that is not there is a bad config.
    this.podCgroups = new PodCgroups(opts, readHostInfo(opts.podLogRoot), this.recorder, this.logger);
    this.podCgroups.start();
    try {
      applyOwnOomScoreAdj(opts.oomScoreAdj);
    } catch (err) {
      this.logger.info('the agent\'s OOM score adjustment was not set', { oomScoreAdj: opts.oomScoreAdj, error: (err as Error).message });
    }
    // As the kubelet: nothing talks to the API server before the node has its identity.
    if (!(await this.identity.start())) return;
    this.podCgroups.recordStartEvents();
    let endpoint = opts.runtimeEndpoint;
    if (opts.runtime === 'process') {
      this.processRuntime = await startEmbeddedRuntime(opts, this.logger);
      endpoint = this.processRuntime.endpoint;
    }
    this.cri = new CriClient(endpoint, { observer: this.metrics.criObserver() });
    ({ generic: this.pleg, evented: this.eventedPleg } = newPlegs(this.cri, {
      nodeName: opts.nodeName,
      clock: this.clock,
      logger: this.logger,
      metrics: this.metrics,
      normalPeriodMs: opts.plegRelistPeriodMs,
      eventedPeriodMs: opts.eventedPlegRelistPeriodMs,
      onEvent: (e) => {
        this.podCache.changed(e.uid);
        this.workers.wake(e.uid);
      },
    }));
    this.runtimeState = new RuntimeState(this.cri, this.clock);
    this.runtimeState.addHealthCheck('PLEG', () => this.pleg.healthProblem());
    this.probes = new ProbeManager({
      clock: this.clock,
      recorder: this.recorder,
      metrics: this.metrics,
      runInContainer: execInContainer(this.cri),
      podStatus: (uid) => this.statusManager.podStatus(uid),
      // As the kubelet's sync loop: a liveness result matters when it fails; readiness and startup always (status).
      onUpdate: (type, u) => {
        if (type !== 'Liveness' || u.result === 'Failure') this.workers.wake(u.podUID);
        // While a pod stops (its preStop hooks run), its worker is busy: readiness goes to the status at once.
        if (type === 'Readiness') void this.refreshTerminatingStatus(u.podUID);
      },
    });
    const version = await checkRuntimeVersion(this.cri);
    this.logger.info('container runtime initialized', { runtime: version.runtime_name, version: version.runtime_version, apiVersion: version.runtime_api_version });
    this.deps = runtimeManagerDeps(this.config, {
      cri: this.cri,
      runtimeName: version.runtime_name,
      recorder: this.recorder,
      clock: this.clock,
      logger: this.logger,
      metrics: this.metrics,
      workers: this.workers,
      probes: this.probes,
      volumes: this.volumes,
      services: this.services,
      runtimeClasses: this.runtimeClasses,
      actuated: this.resizer.actuated,
      podCgroups: this.podCgroups,
    });
    const stats = statsSources(opts, () => this.cri, () => this.pods(), (uid) => this.statusManager.podStatus(uid), () => this.clock.now(), (pod) => this.podCgroups?.podProcessCount(pod));
    const parts = {
      clock: this.clock,
      logger: this.logger,
      recorder: this.recorder,
      stats,
      activePods: () => this.workers.activePods(),
      wake: (uid: string) => this.workers.wake(uid),
      nodeEvent: (type: 'Warning' | 'Normal', reason: string, message: string) => this.nodeEvent(type, reason, message),
      imageFsPath: () => this.imageGC?.imageFsStats()?.mountpoint || undefined,
      reclaimers: { deleteAllUnusedContainers: () => this.collectGarbage(true), deleteUnusedImages: async () => this.imageGC?.deleteUnusedImages() },
    };
    this.evictions = newPodEvictions(opts, readHostInfo(opts.podLogRoot), this.podCgroups, parts);
    this.nodeApi = await startNodeApi(this.config, {
      pods: () => this.pods(),
      podStatus: (uid) => this.statusManager.podStatus(uid),
      runtime: () => this.cri,
      runningPods: () => getPods(this.deps, false),
      debug: this.debug,
      stats,
      healthy: () => this.health(),
      metrics: this.metrics,
      clock: this.clock,
      logger: this.logger,
    }, this.kube, this.deps.nodeIP);
    // The node's first status already knows the runtime and a relist (the kubelet's first ones say
    // "PLEG is not healthy: pleg has yet to be successful" for a while).
    await Promise.all([this.runtimeState.refresh(), this.pleg.relist()]);
    this.imageGC = new ImageGCManager({
      images: this.cri,
      runtime: this.cri,
      recorder: this.recorder,
      nodeRef: () => this.nodeRef(),
      clock: this.clock,
      logger: this.logger,
      policy: { highThresholdPercent: opts.imageGCHighThresholdPercent, lowThresholdPercent: opts.imageGCLowThresholdPercent, minAgeMs: opts.imageMinimumGCAgeMs, maxAgeMs: opts.imageMaximumGCAgeMs },
      onRemoved: (id) => this.deps.imageManager.imageRemoved(id),
    });
    if (this.kube) {
      this.nodeController = new NodeController({
        pressure: () => this.evictions?.conditions() ?? new Set(),
        shuttingDown: () => this.shutdownManager.isShuttingDown(),
        api: this.kube,
        runtimeHealth: () => this.runtimeState.health(),
        config: this.config,
        nodeIP: this.deps.nodeIP,
        kubeletVersion: `v${NODELET_VERSION}-nodelet`,
        // The configured port until the node API listens (it waits for its serving certificate),
        // as the kubelet reports its own: the API server then dials the right port, not 10250.
        port: () => this.nodeApi?.ports.port || opts.port,
        clock: this.clock,
        logger: this.logger,
      });
      // Admission needs the node's allocatable: the node is registered before pods are taken.
      await this.nodeController.start();
    } else {
      this.logger.info('no API server configured: running standalone', { staticPodPath: this.config.staticPodPath || undefined });
      this.localNode = standaloneNode(this.config, readHostInfo(this.config.podLogRoot));
      // No API list to wait for: the static pods are every source there is.
      this.sourcesReady = true;
    }
    this.logRotation = new ContainerLogManager(this.cri, { maxSizeBytes: opts.containerLogMaxSizeBytes, maxFiles: opts.containerLogMaxFiles }, this.clock, this.logger, opts.containerLogMonitorIntervalMs, opts.nodeName);
    this.logRotation.start();
    this.metrics.sizes = () =>
      internalSizes({
        clock: this.clock,
        workers: this.workers,
        statusManager: this.statusManager,
        recorder: this.recorder instanceof ApiEventRecorder ? this.recorder : undefined,
        probes: this.probes,
        pleg: this.pleg,
        deps: this.deps,
        volumes: this.volumes.manager,
        reflector: this.reflector,
        services: this.services,
        logRotation: this.logRotation,
        agentMaps: { last_sync: this.lastSync, pod_cache: this.podCache, start_trace: this.startTrace, rejected: this.admission.rejected, sync_history: { size: this.debug.history.size().records }, actuated_resources: { size: this.resizer.actuated.size() } },
      });
    this.pleg.start();
    this.eventedPleg?.start();
    this.imageGC.start();
    this.evictions.start();
    this.reflector?.start();
    this.staticPods?.start();
    this.every(2000, () => this.housekeeping());
    this.every(60_000, () => this.collectGarbage());
    this.every(60_000, async () => this.podCgroups?.updateQOS(this.workers.activePods()));
    this.every(5000, () => this.runtimeState.refresh());
    // The image filesystem (its mountpoint is the eviction manager's imagefs), as often as the kubelet's eviction manager reads it.
    this.every(10_000, async () => void (await this.imageGC?.readImageFs().catch(() => undefined)));
    this.logger.info('nodelet started', { node: this.config.nodeName, ...this.nodeApi.ports });
  }

  /** The Node as events name it (with its UID once it is registered). */
  private nodeRef(): V1ObjectReference {
    return nodeObjectRef(this.config.nodeName, this.nodeController?.nodeObject?.metadata?.uid);
  }

  private nodeEvent(type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.recorder.event(this.nodeRef(), type, reason, message);
  }

  /** Why the node ended the pod, if it did (evicted, or the node shutting down): its final status says so. */
  private endedByNode(uid: string): NodeEnded | undefined {
    return this.evictions?.of(uid) ?? this.shutdownManager.of(uid) ?? this.admission.preemptions.of(uid);
  }

  /** Graceful node shutdown: every pod ended, group by group, within shutdownGracePeriod (then stop()). */
  shutdownNode(): Promise<void> {
    return this.shutdownManager.shutdown();
  }

  /** Stops sources and workers; running pods are left running (a restarted agent adopts them). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.identity.stop();
    for (const l of this.loops) l.timer?.cancel();
    this.staticPods?.stop();
    this.evictions?.stop();
    await this.reflector?.stop();
    this.eventedPleg?.stop();
    await this.pleg?.stop();
    await this.workers.stop();
    this.probes?.cleanupPods(() => false);
    await this.nodeController?.stop({ markUnschedulable: this.config.markUnschedulableOnShutdown });
    await this.imageGC?.stop();
    await Promise.race([Promise.all([this.statusManager.flush(), this.recorder.flush()]), this.clock.sleep(2000)]);
    this.logRotation?.stop();
    this.nodeApi?.certificates?.stop();
    await this.nodeApi?.server.close();
    this.volumes.stop();
    this.services?.stop();
    this.runtimeClasses?.stop();
    this.cri?.close();
    // The process runtime's containers keep running too: a restarted agent (and runtime) adopts them.
    await this.processRuntime?.server.close();
  }

  private every(ms: number, fn: () => Promise<void>): void {
    const loop: { timer?: Timer } = {};
    this.loops.push(loop);
    const tick = () => {
      if (this.stopping) return;
      loop.timer = this.clock.setTimer(ms, () => void fn().finally(tick));
    };
    tick();
  }

  private health(): { ok: boolean; detail: string } {
    if (this.reflector && !this.reflector.hasSynced) return { ok: false, detail: 'pods not listed from the API server yet' };
    return { ok: true, detail: 'ok' };
  }

  // PodSyncer

  /** The pod's API status from the runtime's view of it, the last sync's results, its probes and its resize. */
  private podStatus(pod: V1Pod, runtime: PodStatus, extra: Partial<GenerateInput> = {}): V1PodStatus {
    const uid = pod.metadata?.uid ?? '';
    return generateAPIPodStatus({ pod, runtime, lastSync: this.lastSync.get(uid), nodeIP: this.deps.nodeIP, now: this.clock.now(), probes: this.probes, resize: this.resizer.statusInput(pod), oldStatus: this.statusManager.podStatus(uid), ...extra });
  }

  private activeDeadline(pod: V1Pod): ActiveDeadline {
    const start = this.statusManager.podStatus(pod.metadata?.uid ?? '')?.startTime ?? pod.status?.startTime;
    return activeDeadline(pod.spec?.activeDeadlineSeconds, start, this.clock.now());
  }

  async syncPod(pod: V1Pod, _type: UpdateType, trigger: WorkTrigger = 'watch'): Promise<SyncOutcome> {
    const uid = pod.metadata?.uid ?? '';
    const at = this.clock.now();
    const before = this.lastSync.get(uid);
    try {
      const outcome = await this.syncPodNow(pod);
      const result = this.lastSync.get(uid);
      this.debug.recordSync(uid, trigger, at, result !== before ? result : undefined);
      return outcome;
    } catch (err) {
      const result = this.lastSync.get(uid);
      this.debug.recordSync(uid, trigger, at, result !== before ? result : undefined, err as Error);
      throw err;
    }
  }

  /**
   * A pod whose worker never reached the runtime and that the (healthy) PLEG has never seen has
   * nothing there: only its own worker makes its sandbox, and the PLEG's first relist runs before
   * any source delivers a pod, so one an earlier agent made would be in its view. The first read
   * of a new pod (two lists, 8 ms of a 124 ms first sync on the process runtime) is skipped.
   */
  private neverRan(uid: string): boolean {
    return !this.lastSync.has(uid) && this.pleg.seen()?.has(uid) === false;
  }

  private async syncPodNow(pod: V1Pod): Promise<SyncOutcome> {
    const uid = pod.metadata?.uid ?? '';
    this.startTrace.syncBegan(uid);
    // A pod the API already shows as finished is never started again (after a restart, or once GC took its containers).
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return { terminal: true };
    const deadline = this.activeDeadline(pod);
    // Evicted (its event went out then) or past its deadline: it ends here, Failed with the reason.
    const evicted = this.endedByNode(uid);
    if (evicted || deadline.exceeded) {
      if (!evicted) this.recorder.event(podRef(pod), 'Normal', deadline.exceeded!.reason, deadline.exceeded!.message);
      const { name = '', namespace = '' } = pod.metadata ?? {};
      const now = await getPodStatus(this.deps, uid, name, namespace);
      this.statusManager.setPodStatus(pod, this.podStatus(pod, now, { evict: evicted ?? deadline.exceeded }));
      return { terminal: true };
    }
    if (this.mirrors && isStaticPod(pod)) {
      // Best effort: a static pod runs whether or not its mirror could be made. A new mirror (the old
      // one deleted) starts with no status: the static pod's goes to it again.
      const made = await this.mirrors.ensure(pod).catch((err) => void this.logger.warn('mirror pod not created', { ...podFields(pod), error: (err as Error).message }));
      if (made) this.statusManager.resend(uid);
    }
    const { name = '', namespace = '' } = pod.metadata ?? {};
    const version = this.podCache.beginRead(uid);
    const before = this.podCache.get(uid) ?? (this.neverRan(uid) ? noRuntimeYet(uid, name, namespace, this.clock.now()) : await getPodStatus(this.deps, uid, name, namespace));
    const pre = this.podStatus(pod, before);
    if (pre.phase === 'Succeeded' || pre.phase === 'Failed') {
      this.statusManager.setPodStatus(pod, pre);
      return { terminal: true };
    }
    // As the kubelet: while the runtime's network is not ready, only host-network pods start (a
    // pod that has ended is still let go through, to be torn down).
    const networkDown = this.runtimeState.networkNotReady();
    if (networkDown && !pod.spec?.hostNetwork) {
      this.statusManager.setPodStatus(pod, pre);
      const message = `${NETWORK_NOT_READY_MESSAGE}: ${networkDown}`;
      this.recorder.event(podRef(pod), 'Warning', EventReasons.NetworkNotReady, message);
      throw new NetworkNotReadyError(message);
    }
    // Its cgroup first (the kubelet's order): the sandbox goes under it.
    this.podCgroups?.ensure(pod, this.workers.activePods());
    try {
      await this.volumes.manager.mountPod(pod);
    } catch (err) {
      if (!(err instanceof VolumesNotReadyError)) throw err;
      // The pod waits (ContainerCreating) with its FailedMount events; the volumes are tried again soon.
      this.statusManager.setPodStatus(pod, pre);
      return { requeueAfterMs: VOLUME_RETRY_MS };
    }
    // Its probes run from now on (workers already running keep going).
    this.probes.addPod(pod);
    // As the kubelet: the pod's IPs are the API status's (a hostNetwork pod's are the node's,
    // which its sandbox does not report), for $(POD_IP), status.podIP env vars and /etc/hosts.
    const apiIPs = (pre.podIPs ?? []).map((p) => p.ip).filter(Boolean);
    // Its containers run with the resources allocated to it (a resize not allocated yet waits).
    const result = await syncPod(this.deps, this.resizer.allocatedPod(pod), apiIPs.length ? { ...before, ips: apiIPs } : before);
    this.lastSync.set(uid, result);
    // Nothing was started or killed: the runtime is as it was read before the sync (PLEG wakes the
    // pod on any change behind its back), and a second read of it would cost 4 CRI calls for nothing.
    const idle = !result.syncError && result.results.every((r) => r.action === 'ConfigPodSandbox' && !r.failed);
    if (idle) this.podCache.set(uid, before, version);
    else this.podCache.changed(uid);
    const after = idle ? { ...before, timestamp: this.clock.now() } : await getPodStatus(this.deps, uid, name, namespace);
    this.resizer.afterSync(pod, after, result);
    const status = this.podStatus(pod, after);
    this.statusManager.setPodStatus(pod, status);
    this.startTrace.synced(uid, status.containerStatuses?.every((c) => c.state?.running) ?? false);
    if (status.phase === 'Succeeded' || status.phase === 'Failed') return { terminal: true };

    const failed = result.results.filter((r) => r.failed);
    if (result.syncError || failed.some((r) => !isBackOffReason(String(r.reason)))) throw result.error();
    // Only back-offs: come back when the first of them ends (PLEG wakes us sooner on any change).
    const waits = failed.map((r) => r.retryAfterMs).filter((ms): ms is number => ms !== undefined);
    // A pod with an active deadline is synced again when it passes.
    if (deadline.remainingMs !== undefined) waits.push(deadline.remainingMs);
    return waits.length ? { requeueAfterMs: Math.min(...waits) + 50 } : {};
  }

  /** A terminating pod's status made again from the runtime (a container's readiness changed meanwhile). */
  private async refreshTerminatingStatus(uid: string): Promise<void> {
    const pod = this.workers.terminatingPod(uid);
    if (!pod) return;
    try {
      const { name = '', namespace = '' } = pod.metadata ?? {};
      const now = await getPodStatus(this.deps, uid, name, namespace);
      if (!this.workers.terminatingPod(uid)) return; // its final status is being made
      this.statusManager.setPodStatus(pod, this.podStatus(pod, now));
    } catch (err) {
      this.logger.debug('status of a terminating pod not refreshed', { uid, error: (err as Error).message });
    }
  }

  async syncTerminatingPod(pod: V1Pod, signal: AbortSignal): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const { name = '', namespace = '' } = pod.metadata ?? {};
    const status = await getPodStatus(this.deps, uid, name, namespace);
    this.probes.stopLivenessAndStartup(pod);
    const at = this.clock.now();
    const steps = explainTermination(pod, status, terminationWhy(pod));
    const kill = await killPodWithSyncResult(this.deps, pod, runningPodFromStatus(this.deps.runtimeName, status), this.evictions?.gracePeriodOverride(uid) ?? this.shutdownManager.gracePeriodOverride(uid), signal);
    if (signal.aborted) throw new Error('kill cut short by a shorter grace period');
    const err = kill.error();
    this.debug.recordTermination(uid, at, steps, err);
    this.logger.debug('sync plan', { ...podFields(pod), plan: steps.map((s) => s.text) });
    if (err) throw err;
    // Its containers have stopped: nothing left to probe.
    this.probes.removePod(pod);
    const after = await getPodStatus(this.deps, uid, name, namespace);
    const stillRunning = after.containerStatuses.filter((c) => c.state === 'running').map((c) => c.name);
    if (stillRunning.length) throw new Error(`containers still running after kill: ${stillRunning.join(', ')}`);
    // Stopped for good: the final phase (Succeeded or Failed, whatever the restart policy).
    const evict = this.endedByNode(uid) ?? this.activeDeadline(pod).exceeded;
    this.statusManager.setPodStatus(pod, this.podStatus(pod, after, { podIsTerminal: true, evict }));
  }

  async syncTerminatedPod(pod: V1Pod, removedFromApi: boolean): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    // It runs here no more: its allocation is free for others' waiting resizes.
    this.resizer.forget(uid);
    // Its containers are gone: so go its volumes (its directory, with the termination messages, goes with the pod).
    if (removedFromApi) await this.volumes.manager.removePod(uid);
    else await this.volumes.manager.unmountPod(uid);
    if (removedFromApi || pod.metadata?.deletionTimestamp) {
      this.lastSync.delete(uid);
      this.podCache.forget(uid);
      this.debug.retire(pod);
      this.startTrace.forget(uid);
    }
    if (removedFromApi) {
      this.statusManager.forget(uid);
      this.evictions?.forget(uid);
      this.admission.preemptions.forget(uid);
      if (isStaticPod(pod)) {
        this.local.forget(uid);
        await this.mirrors?.remove(uid);
      }
      // Its containers and sandboxes go now, not at the next GC.
      await removeDeletedPod(this.deps, { uid, fields: podFields(pod) });
      return;
    }
    if (!pod.metadata?.deletionTimestamp || !this.kube || isStaticPod(pod)) return;
    await deleteFromApi(this.kube, this.statusManager, pod, this.logger);
    this.statusManager.forget(uid);
    await removeDeletedPod(this.deps, { uid, fields: podFields(pod) });
  }

  /** Kills what runs in the runtime for pods no worker has (the kubelet's HandlePodCleanups). */
  private async housekeeping(): Promise<void> {
    if (!this.sourcesReady || this.housekeepingRunning) return;
    this.housekeepingRunning = true;
    try {
      await handlePodCleanups({
        deps: this.deps,
        logger: this.logger,
        metrics: this.metrics,
        probes: this.probes,
        resizer: this.resizer,
        volumes: this.volumes.manager,
        services: this.services,
        pods: () => this.pods(),
        isKnown: (uid) => this.workers.isKnown(uid),
        activePods: () => this.workers.activePods(),
        resize: (pod) => this.admission.resize(pod),
        wake: (uid) => this.workers.wake(uid),
        plegSeen: () => this.pleg.seen(),
        podCgroups: this.podCgroups,
        isTerminated: (uid) => this.workers.isPodTerminated(uid),
      });
    } catch (err) {
      this.logger.warn('housekeeping failed', { error: (err as Error).message });
    } finally {
      this.housekeepingRunning = false;
    }
  }

  /** Container GC; for the eviction manager, with the dead containers of terminated pods too (DeleteAllUnusedContainers). */
  private async collectGarbage(evictTerminatedPods = false): Promise<void> {
    try {
      const report = await garbageCollect(this.deps, defaultGCPolicy, this.sourcesReady, evictTerminatedPods);
      if (report.containersRemoved + report.sandboxesRemoved + report.logDirsRemoved > 0) this.logger.info('garbage collected', { ...report });
    } catch (err) {
      this.logger.warn('garbage collection failed', { error: (err as Error).message });
    }
  }
}
