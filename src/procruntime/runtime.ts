// The process runtime: CRI's RuntimeService and ImageService over plain host processes. Sandboxes
// are directories with their metadata on disk; each container is one process tree started from
// its image's root filesystem under its launcher (or proot), in a session of its own, with its
// output in the CRI log format. Everything is persisted, so a restarted runtime finds its
// sandboxes and containers again, running processes included (by PID and start time).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ImageService, RuntimeService } from '../cri/services.js';
import type {
  AuthConfig,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatsFilter,
  ContainerStatusResponse,
  ExecSyncResponse,
  Image,
  ImageFsInfoResponse,
  ImageSpec,
  ImageStatusResponse,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStats,
  PodSandboxStatsFilter,
  PodSandboxStatusResponse,
  StatusResponse,
  VersionResponse,
} from '../cri/types.js';
import { NODELET_VERSION } from '../version.js';
import { hostIPv4 } from '../util/net.js';
import { cgroupAt, detectCgroups, type CgroupPlacement, type Cgroups } from './cgroups.js';
import { deviceRules } from './devices.js';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from './errors.js';
import { ImageStore } from './image-store.js';
import { ProcessImageService } from './image-service.js';
import { RecordStore } from './state.js';
import { execPlan, runExecSync, type ExecPlan } from './exec.js';
import { detectIsolation, launchArgv, type Isolation, type LaunchNamespaces, type LaunchSpec } from './isolation.js';
import { launchNamespaces, SandboxNamespaceManager } from './sandbox-namespaces.js';
import { ContainerSupervisor, type ProcSeam } from './container-supervisor.js';
import { ContainerEventHub, type ContainerEventType, type EventSnapshot } from './container-events.js';
import type { WatchDir } from './container-watch.js';
import { realClock, type Clock } from '../util/clock.js';
import { cgroupLimits, containerArgv, launchSpec, openStdin, prepareRootfs, SECCOMP_PROGRAM, spawnContainer, writeEnvFile } from './container-start.js';
import { containerSeccompProgram } from './seccomp/container.js';
import { stopContainerProcess } from './container-stop.js';
import { byIdOrPrefix, matchLabels, nowNs, type ContainerRecord, type SandboxRecord } from './records.js';
import { Sandboxes } from './sandboxes.js';
import { ProcessStatsService } from './stats-service.js';
import { resolveUser } from './users.js';
import { readFileInRoot } from '../util/in-root.js';
import { criMounts, invalidMount, touchLog } from './container-files.js';
import { killLeftovers, mountPointsUnder } from './procfs.js';


const run = promisify(execFile);
/** How much of an image's /etc/passwd and /etc/group is read (the user lookup's: a user past it is not found). */
const USER_DB_MAX_BYTES = 1 << 20;

export interface ProcessRuntimeOptions {
  /** State directory (sandboxes, containers, images). */
  root: string;
  /** Where PullImage looks for `<name>_<tag>.tar` archives (an offline source, tried before the registry). */
  imagesDir?: string;
  /** Registries' CAs in docker/containerd's certs.d layout: `<dir>/<host:port>/*.crt` (added to the system CAs). */
  registryCertsDir?: string;
  /** A pull that receives no bytes for this long is aborted (default 60 s). */
  pullProgressTimeoutMs?: number;
  /** The node's IP (what proot's pods, which share the host's network, report). */
  hostIP?: string;
  /** Which isolation to use: the launcher when not given (proot only when named: it isolates nothing). */
  isolation?: Isolation;
  /** CNI configuration directory (as containerd's `conf_dir`), default /etc/cni/net.d. */
  cniConfDir?: string;
  /** Where the CNI plugins are, default /usr/lib/cni and /opt/cni/bin. */
  cniBinDirs?: string[];
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** What went wrong but is handled (a log that cannot be written); `log` when not given. */
  warn?: (msg: string, fields?: Record<string, unknown>) => void;
  clock?: Clock;
  /** Seams for tests: how containers' directories are watched and processes looked at. */
  watchDir?: WatchDir;
  proc?: ProcSeam;
  /** The safety net's period: every running container looked at (default 5 s). */
  sweepMs?: number;
}

export const PROCESS_RUNTIME_HANDLER = 'process';

export class ProcessRuntime implements RuntimeService, ImageService {
  readonly images: ImageStore;
  private readonly sandboxes: Sandboxes;
  private readonly containers = new Map<string, ContainerRecord>();
  /** The record writes in flight, per container (persistContainer). */
  private readonly writes = new Map<string, Promise<void>>();
  private isolation?: Isolation;
  private isolationDetail = '';
  private cgroups!: Cgroups;
  /** Output and exits of running containers, as they happen (container-supervisor.ts). */
  private readonly supervisor: ContainerSupervisor;
  /** CRI GetContainerEvents' streams. */
  readonly events: ContainerEventHub;
  private readonly statsService: ProcessStatsService;
  private readonly imageService: ProcessImageService;
  private readonly store: RecordStore;
  /** The runtime's write end of each stdin: true container's FIFO (not kept across a restart of the runtime). */
  private readonly stdinWriters = new Map<string, number>();
  private readonly hostIP: string;
  /** Pods' namespaces and networks; none under proot, which cannot make namespaces (pods share the host's). */
  private namespaces?: SandboxNamespaceManager;
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly warn: (msg: string, fields?: Record<string, unknown>) => void;

  constructor(private readonly opts: ProcessRuntimeOptions) {
    this.store = new RecordStore(opts.root);
    this.images = new ImageStore(join(opts.root, 'images'), opts.imagesDir, { certsDir: opts.registryCertsDir, progressTimeoutMs: opts.pullProgressTimeoutMs });
    this.imageService = new ProcessImageService(this.images, (imageId) => [...this.containers.values()].some((c) => c.imageId === imageId));
    this.hostIP = opts.hostIP ?? hostIPv4();
    this.sandboxes = new Sandboxes({
      store: this.store,
      hostIP: this.hostIP,
      namespaces: () => this.namespaces,
      containersOf: (sandboxId) => [...this.containers.values()].filter((c) => c.sandboxId === sandboxId),
      stopContainer: (id, t) => this.stopContainer(id, t),
      removeContainer: (id) => this.removeContainer(id),
    });
    this.log = opts.log ?? (() => undefined);
    this.warn = opts.warn ?? this.log;
    const clock = opts.clock ?? realClock;
    this.events = new ContainerEventHub(clock);
    this.supervisor = new ContainerSupervisor({
      clock,
      container: (id) => this.containers.get(id),
      dir: (id) => this.cdir(id),
      persist: (c) => this.persistContainer(c),
      oomKilled: (id) => {
        const c = this.containers.get(id);
        return c ? this.cgroups.oomKilled(cgroupAt(c)) : false;
      },
      exited: (c) => void this.afterExit(c),
      warn: this.warn,
      proc: opts.proc,
      watchDir: opts.watchDir,
      sweepMs: opts.sweepMs,
      // A sandbox whose PID namespace holder died is not ready, and only the sweep sees it.
      swept: () => this.events.listening && this.sandboxes.newlyLost().forEach((s) => this.emit('CONTAINER_STOPPED_EVENT', s.id, s.id)),
    });
    this.statsService = new ProcessStatsService({
      containersOf: (sandboxId) => [...this.containers.values()].filter((c) => c.sandboxId === sandboxId),
      cgroups: () => this.cgroups,
      containerDir: (id) => this.cdir(id),
      root: opts.root,
    });
  }

  /**
   * Loads persisted state, probes isolation and cgroups, and starts watching containers.
   * `forCleanup` skips the isolation probe: stopping and removing need no way to launch.
   */
  async start(forCleanup = false): Promise<void> {
    const state = await this.store.load();
    await this.images.load();
    const iso = forCleanup ? { detail: 'not probed: started to clean up only' } : detectIsolation(this.opts.isolation);
    this.isolation = iso.isolation;
    this.isolationDetail = iso.detail;
    this.cgroups = detectCgroups();
    if (this.isolation !== 'proot') {
      const cgroups = this.cgroups;
      this.namespaces = new SandboxNamespaceManager({ confDir: this.opts.cniConfDir ?? '/etc/cni/net.d', binDirs: this.opts.cniBinDirs ?? ['/usr/lib/cni', '/opt/cni/bin'] }, () => cgroups.helpers());
    }
    this.log('process runtime started', { isolation: this.isolation ?? 'none', detail: iso.detail, cgroups: this.cgroups.detail });
    for (const sb of state.sandboxes) this.sandboxes.records.set(sb.id, sb);
    for (const c of state.containers) this.containers.set(c.id, c);
    await this.sandboxes.recover(this.log);
    // What ran before a restart is adopted: watched again, and looked at once (it may have ended).
    this.supervisor.start(this.containers.values());
  }

  stop(): void {
    this.supervisor.stop();
  }

  get isolationMode(): string {
    return this.isolation ?? 'none';
  }

  private cdir(id: string): string {
    return this.store.containerDir(id);
  }

  /**
   * Saves the record, one write at a time per container, and none once it is removed: an exit
   * recorded while RemoveContainer runs would otherwise re-make the directory it deletes (a ghost
   * container at the next start) or fail on it.
   */
  private persistContainer(c: ContainerRecord): Promise<void> {
    const write = (this.writes.get(c.id) ?? Promise.resolve()).then(() => (this.containers.get(c.id) === c ? this.store.saveContainer(c) : undefined));
    const settled = write.catch(() => undefined);
    this.writes.set(c.id, settled);
    void settled.then(() => this.writes.get(c.id) === settled && this.writes.delete(c.id));
    return write;
  }

  private async afterExit(c: ContainerRecord): Promise<void> {
    this.cgroups.remove(cgroupAt(c));
    this.emit('CONTAINER_STOPPED_EVENT', c.id, c.sandboxId);
    await this.persistContainer(c);
  }

  /** A CRI container event, with the pod's statuses as they are now (nothing built when nobody listens). */
  private emit(type: ContainerEventType, id: string, sandboxId: string, snapshot?: Promise<EventSnapshot>): void {
    if (!this.events.listening) return;
    this.events.emit(type, id, snapshot ?? this.eventSnapshot(sandboxId));
  }

  private async eventSnapshot(sandboxId: string): Promise<EventSnapshot> {
    const sandbox = this.sandboxes.findSandbox(sandboxId) ? (await this.sandboxes.podSandboxStatus(sandboxId)).status : null;
    const containers = [...this.containers.values()].filter((c) => c.sandboxId === sandboxId);
    const statuses = await Promise.all(containers.map(async (c) => (await this.containerStatus(c.id)).status));
    return { sandbox, containers: statuses.filter((st): st is NonNullable<typeof st> => st !== null) };
  }

  // RuntimeService

  async version(): Promise<VersionResponse> {
    return { version: '0.1.0', runtime_name: 'nodelet-process', runtime_version: NODELET_VERSION, runtime_api_version: 'v1' };
  }

  async status(verbose = false): Promise<StatusResponse> {
    const ready = this.isolation !== undefined;
    return {
      status: {
        conditions: [
          { type: 'RuntimeReady', status: ready, reason: ready ? '' : 'NoIsolation', message: ready ? '' : this.isolationDetail },
          // Under proot pods share the host's network, ready whenever the host is.
          { type: 'NetworkReady', ...this.sandboxes.networkCondition() },
        ],
      },
      info: verbose ? { isolation: JSON.stringify({ mode: this.isolationMode, detail: this.isolationDetail }), cgroups: JSON.stringify(this.cgroups.detail) } : {},
      // The launcher makes recursive read-only binds (mount_setattr); proot makes none read-only.
      runtime_handlers: [{ name: '', features: { recursive_read_only_mounts: this.isolation === 'launcher', user_namespaces: false } }],
      features: null,
    } as unknown as StatusResponse;
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    const id = await this.sandboxes.runPodSandbox(config, runtimeHandler);
    // As containerd: a sandbox's changes are events under its own ID.
    this.emit('CONTAINER_CREATED_EVENT', id, id);
    this.emit('CONTAINER_STARTED_EVENT', id, id);
    return id;
  }

  async stopPodSandbox(id: string): Promise<void> {
    const s = this.sandboxes.findSandbox(id);
    const wasReady = s?.state === 'SANDBOX_READY';
    await this.sandboxes.stopPodSandbox(id);
    if (s && wasReady) this.emit('CONTAINER_STOPPED_EVENT', s.id, s.id);
  }

  async removePodSandbox(id: string): Promise<void> {
    const s = this.sandboxes.findSandbox(id);
    await this.sandboxes.removePodSandbox(id);
    // Its status as it was last (it is gone now): what containerd's deleted event carries too.
    if (s && this.events.listening) {
      const view = { ...this.sandboxes.sandboxView(s), state: 'SANDBOX_NOTREADY' };
      this.emit('CONTAINER_DELETED_EVENT', s.id, s.id, Promise.resolve({ sandbox: view, containers: [] }));
    }
  }

  podSandboxStatus(id: string, verbose = false): Promise<PodSandboxStatusResponse> {
    return this.sandboxes.podSandboxStatus(id, verbose);
  }

  listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
    return this.sandboxes.listPodSandbox(filter);
  }

  private sandbox(id: string): SandboxRecord {
    return this.sandboxes.sandbox(id);
  }

  async createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string> {
    const s = this.sandbox(podSandboxId);
    if (!this.sandboxes.sandboxReady(s)) throw new FailedPreconditionError(`pod sandbox ${s.id} is not ready`);
    if (!config.metadata?.name) throw new InvalidArgumentError('container metadata needs a name');
    const sc = config.linux?.security_context;
    // As runc's spec generation: a group without a user to go with it is refused.
    if (sc?.run_as_group && !sc.run_as_user && !sc.run_as_username) throw new InvalidArgumentError('runAsGroup is set without runAsUser or runAsUsername');
    const imageRef = config.image?.image ?? '';
    const img = this.images.find(imageRef);
    if (!img) throw new NotFoundError(`image ${JSON.stringify(imageRef)}`);
    const lower = await this.images.rootfs(img);
    // Inside the image's root, and bounded: its links and devices stay the image's.
    const readImageFile = (f: string) => readFileInRoot(lower, f, USER_DB_MAX_BYTES);
    const user = resolveUser(
      {
        runAsUser: sc?.run_as_user ? Number(sc.run_as_user.value) : undefined,
        runAsUsername: sc?.run_as_username || undefined,
        runAsGroup: sc?.run_as_group ? Number(sc.run_as_group.value) : undefined,
        supplementalGroups: (sc?.supplemental_groups ?? []).map(Number),
        imageUser: img.config.User,
      },
      readImageFile('etc/passwd'),
      readImageFile('etc/group'),
    );
    for (const m of criMounts(config)) {
      const bad = invalidMount(m);
      if (bad) throw new InvalidArgumentError(bad);
    }
    // An AppArmor profile this runtime cannot load is refused, never run without: it applies none.
    const aa = sc?.apparmor;
    const aaName = aa?.profile_type ? (aa.profile_type === 'Localhost' ? `localhost/${aa.localhost_ref ?? ''}` : aa.profile_type) : sc?.apparmor_profile;
    if (aaName && aaName !== 'Unconfined' && aaName !== 'unconfined') throw new InvalidArgumentError(`failed to apply AppArmor profile ${JSON.stringify(aaName)}: the process runtime does not apply AppArmor profiles`);
    // Decided now, as containerd: a profile that cannot be had fails the create (proot cannot apply one).
    const seccomp = this.isolation === 'proot' ? undefined : containerSeccompProgram(config);
    const id = randomBytes(32).toString('hex');
    const logDir = s.config.log_directory ?? sandboxConfig.log_directory ?? '';
    const c: ContainerRecord = {
      id,
      sandboxId: s.id,
      config,
      imageId: img.id,
      imageRef: img.repoTags[0] ?? img.id,
      state: 'CONTAINER_CREATED',
      createdAt: nowNs(),
      startedAt: '0',
      finishedAt: '0',
      exitCode: 0,
      reason: '',
      message: '',
      logPath: config.log_path ? join(logDir, config.log_path) : '',
      stdout: { offset: 0, pending: '' },
      stderr: { offset: 0, pending: '' },
      user,
    };
    if (s.config.linux?.cgroup_parent) c.cgroupParent = s.config.linux.cgroup_parent;
    // Known before its first write (persistContainer writes only the records it knows).
    this.containers.set(id, c);
    try {
      await this.persistContainer(c);
      if (seccomp) await writeFile(join(this.cdir(id), SECCOMP_PROGRAM), seccomp);
    } catch (err) {
      this.containers.delete(id);
      throw err;
    }
    this.emit('CONTAINER_CREATED_EVENT', id, c.sandboxId);
    return id;
  }

  private findContainer(id: string): ContainerRecord | undefined {
    return byIdOrPrefix(this.containers, id);
  }

  private container(id: string): ContainerRecord {
    const c = this.findContainer(id);
    if (!c) throw new NotFoundError(`container ${id}`);
    return c;
  }

  async startContainer(id: string): Promise<void> {
    const c = this.container(id);
    if (c.state !== 'CONTAINER_CREATED') throw new FailedPreconditionError(`container ${c.id} is ${c.state}, not created`);
    if (!this.isolation) throw new FailedPreconditionError(this.isolationDetail);
    try {
      await this.launch(c);
    } catch (err) {
      // Whatever stopped it leaves it exited (as runc's failed starts do), so that the kubelet's
      // crash-loop back-off applies; left created, it would be started again at once, forever.
      if (c.state === 'CONTAINER_CREATED') await this.failStart(c, (err as Error).message);
      throw err;
    }
  }

  private async launch(c: ContainerRecord): Promise<void> {
    const isolation = this.isolation!;
    const img = this.images.find(c.imageId);
    if (!img) throw new NotFoundError(`image ${c.imageId}`);
    const s = this.sandbox(c.sandboxId);
    const argv = containerArgv(c.config, img);
    if (argv.length === 0) throw new InvalidArgumentError('no command: neither the container nor its image has one');
    const dir = this.cdir(c.id);
    c.rootfsMounted = await prepareRootfs(dir, await this.images.rootfs(img));
    const podResolv = join(this.store.sandboxDir(s.id), 'resolv.conf');
    const joined = launchNamespaces(s, c.config, (id) => this.findContainer(id));
    if (typeof joined === 'string') await this.failStart(c, joined);
    const namespaces = joined as LaunchNamespaces | undefined;
    const prepared = await launchSpec({ container: c, sandbox: s.config, image: img, argv, dir, podResolv, namespaces });
    if ('missing' in prepared) await this.failStart(c, prepared.missing);
    const spec = (prepared as { spec: LaunchSpec }).spec;
    if (isolation === 'launcher') spec.envFile = await writeEnvFile(dir, spec.env);
    c.launch = spec;
    const privileged = spec.capabilities?.privileged === true;
    const devices = deviceRules(privileged);
    // Without cgroups nothing would keep a root container from the host's devices: it does not start.
    if (isolation === 'launcher' && this.cgroups.mode === 'none' && !privileged) await this.failStart(c, `the container's devices cannot be restricted: ${this.cgroups.detail}`);
    let placement: CgroupPlacement;
    try {
      placement = this.cgroups.create(cgroupAt(c), cgroupLimits(c.config), devices);
    } catch (err) {
      return this.failStart(c, (err as Error).message);
    }
    if (placement.deviceCgroup) spec.devices = { cgroup: placement.deviceCgroup, rules: devices };
    if (placement.views) spec.cgroupViews = placement.views;
    const procs = placement.procs;
    let stdin: number | undefined;
    if (c.config.stdin) {
      const fifo = await openStdin(dir);
      this.stdinWriters.set(c.id, fifo.writer);
      stdin = fifo.reader;
    }
    const started = await spawnContainer(isolation, dir, launchArgv(isolation, spec), { cgroupProcs: procs, stdin, stderrOffset: c.stderr.offset, seccomp: spec.seccomp });
    if ('error' in started) await this.failStart(c, started.error);
    const ok = started as { pid: number; pidStart?: string; pgid?: number };
    c.pid = ok.pid;
    c.pidStart = ok.pidStart;
    // Where its end does not end a PID namespace, what it leaves running goes by its process group.
    c.pgid = namespaces && namespaces.pid !== 'CONTAINER' ? ok.pgid : undefined;
    // As containerd: the log file is there once the container has started, output or not.
    await touchLog(c.logPath);
    c.state = 'CONTAINER_RUNNING';
    c.startedAt = nowNs();
    c.isolation = isolation;
    await this.persistContainer(c);
    this.emit('CONTAINER_STARTED_EVENT', c.id, c.sandboxId);
    // Watched from now: its output and its end come as events (it may have ended already).
    this.supervisor.supervise(c);
  }

  /** A start that failed leaves the container exited with 128 and StartError, as runc's do. */
  private async failStart(c: ContainerRecord, message: string): Promise<never> {
    c.state = 'CONTAINER_EXITED';
    c.exitCode = 128;
    c.reason = 'StartError';
    c.message = message;
    c.finishedAt = nowNs();
    await this.persistContainer(c);
    this.emit('CONTAINER_STOPPED_EVENT', c.id, c.sandboxId);
    throw new FailedPreconditionError(`failed to start container ${c.id}: ${message}`);
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    const c = this.findContainer(id);
    if (!c) return; // idempotent
    if (c.state !== 'CONTAINER_RUNNING' || c.pid === undefined) return;
    const { pid, pidStart, isolation } = c;
    const gone = await stopContainerProcess({ pid, pidStart, isolation }, this.cdir(c.id), timeoutSeconds);
    this.supervisor.stopped(c.id, gone);
  }

  async removeContainer(id: string): Promise<void> {
    const c = this.findContainer(id);
    if (!c) return; // idempotent
    if (c.state === 'CONTAINER_RUNNING') await this.stopContainer(c.id, 0);
    this.closeStdin(c.id);
    killLeftovers(c);
    if (c.rootfsMounted) await run('umount', ['-l', join(this.cdir(c.id), 'rootfs')]).catch(() => undefined);
    // What an earlier runtime mounted in the container's directory (a procfs, staged binds) goes too.
    for (const m of mountPointsUnder(this.cdir(c.id))) await run('umount', ['-l', m]).catch(() => undefined);
    this.containers.delete(c.id);
    this.statsService.forget(c.id);
    this.supervisor.forget(c.id);
    this.cgroups.remove(cgroupAt(c));
    await this.writes.get(c.id);
    await rm(this.cdir(c.id), { recursive: true, force: true });
    this.emit('CONTAINER_DELETED_EVENT', c.id, c.sandboxId);
  }

  private containerView(c: ContainerRecord) {
    return {
      id: c.id,
      pod_sandbox_id: c.sandboxId,
      metadata: c.config.metadata,
      image: { image: c.imageRef, annotations: {}, user_specified_image: c.config.image?.user_specified_image ?? '', runtime_handler: '' },
      image_ref: c.imageId,
      image_id: c.imageId,
      state: c.state,
      created_at: c.createdAt,
      labels: c.config.labels ?? {},
      annotations: c.config.annotations ?? {},
    };
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    return [...this.containers.values()]
      .filter(
        (c) =>
          (!filter?.id || c.id.startsWith(filter.id)) &&
          (!filter?.pod_sandbox_id || c.sandboxId.startsWith(filter.pod_sandbox_id)) &&
          (!filter?.state || filter.state.state === c.state) &&
          matchLabels(c.config.labels, filter?.label_selector),
      )
      .map((c) => this.containerView(c) as unknown as Container);
  }

  async containerStatus(id: string, verbose = false): Promise<ContainerStatusResponse> {
    const c = this.container(id);
    return {
      status: {
        ...this.containerView(c),
        started_at: c.startedAt,
        finished_at: c.finishedAt,
        exit_code: c.exitCode,
        reason: c.reason,
        message: c.message,
        mounts: c.config.mounts ?? [],
        log_path: c.logPath,
        // What it was created or last updated with, as containerd reports it.
        resources: c.config.linux?.resources ? { linux: c.config.linux.resources, windows: null } : null,
        user: null,
      },
      // Verbose, as containerd: one "info" key holding JSON (crictl inspect shows it), with the PID.
      info: verbose ? { info: JSON.stringify({ pid: c.pid, isolation: c.isolation, user: c.user, sandboxID: c.sandboxId }) } : {},
    } as unknown as ContainerStatusResponse;
  }

  /** A resize: the new limits written to the container's cgroups (where this host has them), and kept. */
  async updateContainerResources(id: string, resources: LinuxContainerResources): Promise<void> {
    const c = this.container(id);
    if (c.state !== 'CONTAINER_RUNNING' && c.state !== 'CONTAINER_CREATED') throw new FailedPreconditionError(`container ${c.id} is not running`);
    const config = { ...c.config, linux: { ...c.config.linux, resources: { ...c.config.linux?.resources, ...resources } } };
    // Written first: what the kernel refuses is the resize's error, and nothing is recorded.
    if (c.state === 'CONTAINER_RUNNING') {
      try {
        this.cgroups.update(cgroupAt(c), cgroupLimits(config));
      } catch (err) {
        throw new FailedPreconditionError(`failed to update resources of container ${c.id}: ${(err as Error).message}`);
      }
    }
    c.config = config;
    await this.persistContainer(c);
  }

  async reopenContainerLog(id: string): Promise<void> {
    const c = this.container(id);
    if (c.state !== 'CONTAINER_RUNNING') throw new FailedPreconditionError(`container ${c.id} is not running`);
    // Lines are appended by path, so a rotated log is written anew anyway; the new file exists at once.
    await touchLog(c.logPath);
  }

  /** How to run a command in a running container (src/procruntime/exec.ts). */
  prepareExec(id: string, cmd: string[]): ExecPlan {
    const c = this.container(id);
    return execPlan(c, this.cdir(id), cmd, this.cgroups.procs(cgroupAt(c)));
  }

  /** What attach needs of a container: its output files, whether it runs, its stdin's write end. */
  attachTarget(id: string): { stdoutPath: string; stderrPath: string; running: () => boolean; stdin?: number; stdinOnce: boolean; tty: boolean } {
    const c = this.container(id);
    if (c.state !== 'CONTAINER_RUNNING') throw new FailedPreconditionError(`container ${c.id} is not running`);
    const dir = this.cdir(c.id);
    return {
      stdoutPath: join(dir, 'stdout'),
      stderrPath: join(dir, 'stderr'),
      running: () => this.containers.get(c.id)?.state === 'CONTAINER_RUNNING',
      stdin: this.stdinWriters.get(c.id),
      stdinOnce: c.config.stdin_once === true,
      tty: c.config.tty === true,
    };
  }

  /** Closes a container's stdin (the end of a stdinOnce attach): it reads end-of-file. */
  closeStdin(id: string): void {
    const fd = this.stdinWriters.get(id);
    if (fd === undefined) return;
    this.stdinWriters.delete(id);
    closeSync(fd);
  }

  /** A pod sandbox that is ready (what port-forward needs). */
  readySandbox(id: string): { name: string; uid: string; netns?: string } {
    const s = this.sandboxes.sandbox(id);
    if (!this.sandboxes.sandboxReady(s)) throw new FailedPreconditionError(`pod sandbox ${s.id} is not ready`);
    return { name: s.config.metadata?.name ?? '', uid: s.config.metadata?.uid ?? '', netns: s.namespaces?.net };
  }

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResponse> {
    return runExecSync(this.prepareExec(id, cmd), cmd, timeoutSeconds);
  }

  // Stats (src/procruntime/stats-service.ts)

  async containerStats(id: string): Promise<ContainerStats> {
    return this.statsService.containerStats(this.container(id));
  }

  async listContainerStats(filter?: ContainerStatsFilter): Promise<ContainerStats[]> {
    const chosen = [...this.containers.values()].filter(
      (c) => (!filter?.id || c.id.startsWith(filter.id)) && (!filter?.pod_sandbox_id || c.sandboxId.startsWith(filter.pod_sandbox_id)) && matchLabels(c.config.labels, filter?.label_selector),
    );
    return Promise.all(chosen.map((c) => this.statsService.containerStats(c)));
  }

  async podSandboxStats(id: string): Promise<PodSandboxStats> {
    return this.statsService.sandboxStats(this.sandbox(id));
  }

  async listPodSandboxStats(filter?: PodSandboxStatsFilter): Promise<PodSandboxStats[]> {
    const chosen = [...this.sandboxes.records.values()].filter((s) => (!filter?.id || s.id.startsWith(filter.id)) && matchLabels(s.config.labels, filter?.label_selector));
    return Promise.all(chosen.map((s) => this.statsService.sandboxStats(s)));
  }

  // ImageService (src/procruntime/image-service.ts)

  listImages(): Promise<Image[]> {
    return this.imageService.listImages();
  }

  imageStatus(image: ImageSpec): Promise<ImageStatusResponse> {
    return this.imageService.imageStatus(image);
  }

  pullImage(image: ImageSpec, auth?: AuthConfig): Promise<string> {
    return this.imageService.pullImage(image, auth);
  }

  removeImage(image: ImageSpec): Promise<void> {
    return this.imageService.removeImage(image);
  }

  imageFsInfo(): Promise<ImageFsInfoResponse> {
    return this.imageService.imageFsInfo();
  }
}
