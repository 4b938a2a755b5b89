// The process runtime: CRI's RuntimeService and ImageService over plain host processes. Sandboxes
// are directories with their metadata on disk; each container is one process tree started from
// its image's root filesystem under bubblewrap (or proot), in a session of its own, with its
// output in the CRI log format. Everything is persisted, so a restarted runtime finds its
// sandboxes and containers again, running processes included (by PID and start time).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, statfsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ImageService, RuntimeService } from '../cri/services.js';
import type {
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
import { detectCgroups, type Cgroups } from './cgroups.js';
import { DeadlineExceededError, FailedPreconditionError, InvalidArgumentError, NotFoundError } from './errors.js';
import { ImageStore, type StoredImage } from './image-store.js';
import { detectIsolation, execArgv, launchArgv, type Isolation, type LaunchSpec } from './isolation.js';
import { forward } from './log-forwarder.js';
import type { ContainerRecord, SandboxRecord } from './records.js';
import { ProcessStatsService } from './stats-service.js';
import { resolveUser } from './users.js';
import { bytesToString, criMounts, DEFAULT_PATH, makeMountPoint, missingExecutable, resolvConf, stageMounts, touchLog } from './container-files.js';
import { catchesSigterm, execedFromParent, procStart } from './procfs.js';


const run = promisify(execFile);
const nowNs = () => String(BigInt(Date.now()) * 1_000_000n);

export interface ProcessRuntimeOptions {
  /** State directory (sandboxes, containers, images). */
  root: string;
  /** Where PullImage looks for `<name>_<tag>.tar` archives. */
  imagesDir?: string;
  /** The pod IP to report: the host's. */
  hostIP?: string;
  /** Which isolation to use; probed when not given (bubblewrap where it can run, else proot). */
  isolation?: Isolation;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

function byIdOrPrefix<T extends { id: string }>(records: Map<string, T>, id: string): T | undefined {
  return records.get(id) ?? [...records.values()].find((x) => id.length >= 6 && x.id.startsWith(id));
}

function matchLabels(labels: Record<string, string> | undefined, selector: Record<string, string> | undefined): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
}

export class ProcessRuntime implements RuntimeService, ImageService {
  readonly images: ImageStore;
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly containers = new Map<string, ContainerRecord>();
  private isolation?: Isolation;
  private isolationDetail = '';
  private cgroups!: Cgroups;
  private ticker?: NodeJS.Timeout;
  private readonly offsetsSavedAt = new Map<string, number>();
  /** When each running container's process was first seen gone (its exit code may follow). */
  private readonly goneAt = new Map<string, number>();
  private readonly statsService: ProcessStatsService;
  /** The runtime's write end of each stdin: true container's FIFO (not kept across a restart of the runtime). */
  private readonly stdinWriters = new Map<string, number>();
  private readonly hostIP: string;
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;

  constructor(private readonly opts: ProcessRuntimeOptions) {
    this.images = new ImageStore(join(opts.root, 'images'), opts.imagesDir);
    this.hostIP = opts.hostIP ?? hostIPv4();
    this.log = opts.log ?? (() => undefined);
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
    await mkdir(join(this.opts.root, 'sandboxes'), { recursive: true });
    await mkdir(join(this.opts.root, 'containers'), { recursive: true });
    await this.images.load();
    const iso = forCleanup ? { detail: 'not probed: started to clean up only' } : detectIsolation(this.opts.isolation);
    this.isolation = iso.isolation;
    this.isolationDetail = iso.detail;
    this.cgroups = detectCgroups();
    this.log('process runtime started', { isolation: this.isolation ?? 'none', detail: iso.detail, cgroups: this.cgroups.detail });
    for (const id of await readdir(join(this.opts.root, 'sandboxes'))) {
      try {
        const s = JSON.parse(await readFile(join(this.opts.root, 'sandboxes', id, 'sandbox.json'), 'utf8')) as SandboxRecord;
        this.sandboxes.set(s.id, s);
      } catch {
        /* half-written: ignore */
      }
    }
    for (const id of await readdir(join(this.opts.root, 'containers'))) {
      try {
        const c = JSON.parse(await readFile(join(this.opts.root, 'containers', id, 'container.json'), 'utf8')) as ContainerRecord;
        this.containers.set(c.id, c);
      } catch {
        /* half-written: ignore */
      }
    }
    this.tick();
    this.ticker = setInterval(() => this.tick(), 100);
    this.ticker.unref();
  }

  stop(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.tick();
  }

  get isolationMode(): string {
    return this.isolation ?? 'none';
  }

  private cdir(id: string): string {
    return join(this.opts.root, 'containers', id);
  }

  private async persistSandbox(s: SandboxRecord): Promise<void> {
    const dir = join(this.opts.root, 'sandboxes', s.id);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.sandbox.json.${randomBytes(3).toString('hex')}`);
    await writeFile(tmp, JSON.stringify(s));
    await rename(tmp, join(dir, 'sandbox.json'));
  }

  private async persistContainer(c: ContainerRecord): Promise<void> {
    const dir = this.cdir(c.id);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.container.json.${randomBytes(3).toString('hex')}`);
    await writeFile(tmp, JSON.stringify(c));
    await rename(tmp, join(dir, 'container.json'));
  }

  /** Every 100 ms: move output to the CRI logs and notice exits. */
  private tick(): void {
    const now = Date.now();
    for (const c of this.containers.values()) {
      if (c.state !== 'CONTAINER_RUNNING') continue;
      // Under bubblewrap the exit code is looked for only once the process is gone (one read per
      // running container per tick); its monitor writes it just after, so a gone process gets a
      // second's grace. Under proot the PID is the monitor's own, which writes the code just before
      // it ends.
      const alive = this.running(c);
      const exit = alive && c.isolation !== 'proot' ? undefined : this.readExit(c);
      if (alive) this.goneAt.delete(c.id);
      else if (!this.goneAt.has(c.id)) this.goneAt.set(c.id, now);
      const ended = exit !== undefined || (!alive && now - this.goneAt.get(c.id)! >= 1000);
      const before = c.stdout.offset + c.stderr.offset;
      forward(join(this.cdir(c.id), 'stdout'), 'stdout', c.logPath, c.stdout, now, ended);
      forward(join(this.cdir(c.id), 'stderr'), 'stderr', c.logPath, c.stderr, now, ended);
      // Log offsets are saved at most once a second: a runtime that dies repeats at most that much.
      if (c.stdout.offset + c.stderr.offset !== before && now - (this.offsetsSavedAt.get(c.id) ?? 0) >= 1000) {
        this.offsetsSavedAt.set(c.id, now);
        void this.persistContainer(c).catch(() => undefined);
      }
      if (ended) {
        this.goneAt.delete(c.id);
        this.killLeftovers(c);
        c.state = 'CONTAINER_EXITED';
        c.finishedAt = nowNs();
        const oom = this.cgroups.oomKilled(c.id);
        c.exitCode = exit ?? 137;
        c.reason = oom ? 'OOMKilled' : exit === undefined ? 'Error' : c.exitCode === 0 ? 'Completed' : 'Error';
        if (exit === undefined) c.message = 'the container process is gone and its exit code was not recorded';
        void this.afterExit(c);
      }
    }
  }

  /**
   * Under proot there is no PID namespace whose end takes every process with it: what the
   * container started and left running (its process group) goes when it ends, as in a container.
   */
  private killLeftovers(c: ContainerRecord): void {
    if (c.isolation !== 'proot' || c.pid === undefined) return;
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      /* none left */
    }
  }

  /**
   * Whether the container's process still runs: its PID with the start time recorded at start. A
   * process gone before its start time could be read is not running (an unknown start time must
   * not compare equal to the unknown start time of a PID that is gone).
   */
  private running(c: ContainerRecord): boolean {
    return c.pid !== undefined && c.pidStart !== undefined && procStart(c.pid) === c.pidStart;
  }

  private readExit(c: ContainerRecord): number | undefined {
    try {
      const text = readFileSync(join(this.cdir(c.id), 'status.json'), 'utf8');
      const m = /"exit-code"\s*:\s*(-?\d+)/.exec(text);
      return m ? Number(m[1]) : undefined;
    } catch {
      return undefined;
    }
  }

  private async afterExit(c: ContainerRecord): Promise<void> {
    this.cgroups.remove(c.id);
    await this.persistContainer(c);
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
          // Pods share the host's network: it is ready whenever the host is.
          { type: 'NetworkReady', status: true, reason: '', message: '' },
        ],
      },
      info: verbose ? { isolation: JSON.stringify({ mode: this.isolationMode, detail: this.isolationDetail }), cgroups: JSON.stringify(this.cgroups.detail) } : {},
      runtime_handlers: [],
      features: null,
    } as unknown as StatusResponse;
  }

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    if (!config.metadata?.name || !config.metadata.uid) throw new InvalidArgumentError('sandbox metadata needs a name and a uid');
    const id = randomBytes(32).toString('hex');
    const s: SandboxRecord = { id, config, state: 'SANDBOX_READY', createdAt: nowNs(), ip: this.hostIP };
    await this.persistSandbox(s);
    // The pod's own resolv.conf, as containerd writes one from the DNS config it is given.
    const dns = config.dns_config;
    if (dns && (dns.servers?.length || dns.searches?.length || dns.options?.length)) {
      await writeFile(join(this.opts.root, 'sandboxes', id, 'resolv.conf'), resolvConf(dns));
    }
    this.sandboxes.set(id, s);
    return id;
  }

  /** By full ID, or by a unique-enough prefix of one (crictl shortens IDs). */
  private findSandbox(id: string): SandboxRecord | undefined {
    return byIdOrPrefix(this.sandboxes, id);
  }

  private sandbox(id: string): SandboxRecord {
    const s = this.findSandbox(id);
    if (!s) throw new NotFoundError(`pod sandbox ${id}`);
    return s;
  }

  async stopPodSandbox(id: string): Promise<void> {
    // Idempotent, as CRI asks: stopping what is not there is not an error.
    const s = this.findSandbox(id);
    if (!s) return;
    await Promise.all([...this.containers.values()].filter((c) => c.sandboxId === s.id && c.state === 'CONTAINER_RUNNING').map((c) => this.stopContainer(c.id, 0)));
    s.state = 'SANDBOX_NOTREADY';
    await this.persistSandbox(s);
  }

  async removePodSandbox(id: string): Promise<void> {
    const s = this.findSandbox(id);
    if (!s) return; // idempotent
    for (const c of [...this.containers.values()].filter((x) => x.sandboxId === s.id)) {
      if (c.state === 'CONTAINER_RUNNING') await this.stopContainer(c.id, 0);
      await this.removeContainer(c.id);
    }
    this.sandboxes.delete(s.id);
    await rm(join(this.opts.root, 'sandboxes', s.id), { recursive: true, force: true });
  }

  private sandboxView(s: SandboxRecord) {
    return {
      id: s.id,
      metadata: s.config.metadata,
      state: s.state,
      created_at: s.createdAt,
      labels: s.config.labels ?? {},
      annotations: s.config.annotations ?? {},
      runtime_handler: '',
    };
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatusResponse> {
    const s = this.sandbox(id);
    const ns = s.config.linux?.security_context?.namespace_options;
    return {
      status: {
        ...this.sandboxView(s),
        network: { ip: s.ip, additional_ips: [] },
        // Processes share the host's network whatever was asked; the mode asked for is echoed back so
        // the agent does not see a "changed" sandbox on every sync.
        linux: { namespaces: { options: { network: ns?.network ?? 'POD', pid: ns?.pid ?? 'CONTAINER', ipc: ns?.ipc ?? 'POD', target_id: '', userns_options: null } } },
      },
      info: {},
      containers_statuses: [],
      timestamp: nowNs(),
    } as unknown as PodSandboxStatusResponse;
  }

  async listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
    return [...this.sandboxes.values()]
      .filter((s) => (!filter?.id || s.id.startsWith(filter.id)) && (!filter?.state || filter.state.state === s.state) && matchLabels(s.config.labels, filter?.label_selector))
      .map((s) => this.sandboxView(s) as unknown as PodSandbox);
  }

  async createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string> {
    const s = this.sandbox(podSandboxId);
    if (s.state !== 'SANDBOX_READY') throw new FailedPreconditionError(`pod sandbox ${s.id} is not ready`);
    if (!config.metadata?.name) throw new InvalidArgumentError('container metadata needs a name');
    const sc = config.linux?.security_context;
    // As runc's spec generation: a group without a user to go with it is refused.
    if (sc?.run_as_group && !sc.run_as_user && !sc.run_as_username) throw new InvalidArgumentError('runAsGroup is set without runAsUser or runAsUsername');
    const imageRef = config.image?.image ?? '';
    const img = this.images.find(imageRef);
    if (!img) throw new NotFoundError(`image ${JSON.stringify(imageRef)}`);
    const lower = await this.images.rootfs(img);
    const readImageFile = (f: string) => {
      try {
        return readFileSync(join(lower, f), 'utf8');
      } catch {
        return '';
      }
    };
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
    await this.persistContainer(c);
    this.containers.set(id, c);
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

  /** The argv by the OCI and Kubernetes rules: command replaces ENTRYPOINT, args replaces CMD. */
  static argv(config: ContainerConfig, image: StoredImage): string[] {
    const command = config.command ?? [];
    const args = config.args ?? [];
    if (command.length > 0) return [...command, ...args];
    const entrypoint = image.config.Entrypoint ?? [];
    return [...entrypoint, ...(args.length > 0 ? args : (image.config.Cmd ?? []))];
  }

  private async prepareRootfs(c: ContainerRecord, img: StoredImage): Promise<string> {
    const lower = await this.images.rootfs(img);
    const dir = this.cdir(c.id);
    const merged = join(dir, 'rootfs');
    await mkdir(merged, { recursive: true });
    await mkdir(join(dir, 'upper'), { recursive: true });
    await mkdir(join(dir, 'work'), { recursive: true });
    try {
      // The image's files are shared read-only; each container writes into its own upper layer.
      await run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${join(dir, 'upper')},workdir=${join(dir, 'work')}`, merged]);
      c.rootfsMounted = true;
    } catch {
      // No overlayfs for us (an unprivileged container): a private copy instead.
      await run('cp', ['-a', `${lower}/.`, `${merged}/`]);
      c.rootfsMounted = false;
    }
    return merged;
  }

  async startContainer(id: string): Promise<void> {
    const c = this.container(id);
    if (c.state !== 'CONTAINER_CREATED') throw new FailedPreconditionError(`container ${c.id} is ${c.state}, not created`);
    if (!this.isolation) throw new FailedPreconditionError(this.isolationDetail);
    const img = this.images.find(c.imageId);
    if (!img) throw new NotFoundError(`image ${c.imageId}`);
    const s = this.sandbox(c.sandboxId);
    const argv = ProcessRuntime.argv(c.config, img);
    if (argv.length === 0) throw new InvalidArgumentError('no command: neither the container nor its image has one');
    const rootfs = await this.prepareRootfs(c, img);
    const env = new Map<string, string>();
    for (const e of img.config.Env ?? []) {
      const eq = e.indexOf('=');
      if (eq > 0) env.set(e.slice(0, eq), e.slice(eq + 1));
    }
    if (!env.has('PATH')) env.set('PATH', DEFAULT_PATH);
    env.set('HOSTNAME', s.config.hostname || s.config.metadata?.name || 'pod');
    for (const e of c.config.envs ?? []) if (e.key) env.set(e.key, bytesToString(e.value));
    const mounts = criMounts(c.config);
    const podResolv = join(this.opts.root, 'sandboxes', s.id, 'resolv.conf');
    const resolv = existsSync(podResolv) ? podResolv : '/etc/resolv.conf';
    if (existsSync(resolv)) mounts.push({ hostPath: resolv, containerPath: '/etc/resolv.conf', readonly: true });
    const dir = this.cdir(c.id);
    // As runc: a command that is not there fails the start, rather than a container that exits at once.
    const missing = missingExecutable(rootfs, argv[0]!, env.get('PATH') ?? '', c.config.working_dir || img.config.WorkingDir || '/');
    if (missing) await this.failStart(c, missing);
    // Mount points are made in the container's own root first: a read-only root cannot get them later.
    for (const m of mounts) await makeMountPoint(rootfs, m.hostPath, m.containerPath);
    const binds = this.isolation === 'bubblewrap' && (c.user?.uid ?? 0) !== 0 ? await stageMounts(dir, mounts, (from, to) => run('mount', ['--bind', from, to]).then(() => undefined)) : mounts;
    const sc = c.config.linux?.security_context;
    const spec: LaunchSpec = {
      rootfs,
      argv,
      env: [...env],
      cwd: c.config.working_dir || img.config.WorkingDir || '/',
      hostname: (s.config.hostname || s.config.metadata?.name || 'pod').slice(0, 63),
      mounts: binds,
      statusFd: 3,
      readonlyRootfs: sc?.readonly_rootfs === true,
      user: c.user,
      // Privileged containers see everything, as with runc.
      maskedPaths: sc?.privileged ? [] : (sc?.masked_paths ?? []),
      readonlyPaths: sc?.privileged ? [] : (sc?.readonly_paths ?? []),
      capabilities: { privileged: sc?.privileged === true, add: sc?.capabilities?.add_capabilities ?? [], drop: sc?.capabilities?.drop_capabilities ?? [] },
    };
    c.launch = spec;
    const launch = launchArgv(this.isolation, spec);
    const res = c.config.linux?.resources as LinuxContainerResources | undefined;
    const procs = this.cgroups.create(c.id, {
      cpuShares: res?.cpu_shares ? Number(res.cpu_shares) : undefined,
      cpuQuotaUs: res?.cpu_quota && Number(res.cpu_quota) > 0 ? Number(res.cpu_quota) : undefined,
      cpuPeriodUs: res?.cpu_period ? Number(res.cpu_period) : undefined,
      memoryBytes: res?.memory_limit_in_bytes && Number(res.memory_limit_in_bytes) > 0 ? Number(res.memory_limit_in_bytes) : undefined,
    });
    const stdout = openSync(join(dir, 'stdout'), 'a');
    const stderr = openSync(join(dir, 'stderr'), 'a');
    const status = openSync(join(dir, 'status.json'), 'w');
    // stdin: true gets a FIFO: the container holds its read end, the runtime a write end that
    // attach writes to (and closes after the first attach when stdinOnce).
    let stdin: number | 'ignore' = 'ignore';
    if (c.config.stdin) {
      const fifo = join(dir, 'stdin');
      if (!existsSync(fifo)) await run('mkfifo', ['-m', '600', fifo]);
      this.stdinWriters.set(c.id, openSync(fifo, 'r+'));
      stdin = openSync(fifo, 'r');
    }
    // setsid -f: the container is nobody's child here, so it outlives a restart of the runtime; its
    // session is its own process group. The shell joins the cgroups before exec'ing the isolation.
    const joinCgroups = 'for p in $NODELET_CGROUP_PROCS; do echo $$ > "$p" 2>/dev/null; done; unset NODELET_CGROUP_PROCS';
    // bubblewrap reports the container's PID and exit code itself (fd 3). proot does not: the shell
    // stays as the container's monitor, the leader of its process group, and reports both (it
    // outlives the signals sent to the group: a handler, not an ignore, which the command would inherit).
    const wrapper =
      this.isolation === 'bubblewrap'
        ? `${joinCgroups}; exec "$@"`
        : `${joinCgroups}; trap : TERM INT HUP; echo '{"child-pid": '$$'}' >&3; "$@"; echo '{"exit-code": '$?'}' >&3`;
    const child = spawn('setsid', ['-f', 'sh', '-c', wrapper, 'sh', ...launch], {
      stdio: [stdin, stdout, stderr, status],
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', NODELET_CGROUP_PROCS: procs.join(' ') },
      detached: true,
    });
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', () => resolve());
    });
    closeSync(stdout);
    closeSync(stderr);
    closeSync(status);
    if (typeof stdin === 'number') closeSync(stdin);
    // Wait for the isolation to report the container's PID (or to fail at once).
    const deadline = Date.now() + 10_000;
    for (;;) {
      const text = existsSync(join(dir, 'status.json')) ? readFileSync(join(dir, 'status.json'), 'utf8') : '';
      const pid = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (pid) {
        c.pid = Number(pid[1]);
        c.pidStart = procStart(c.pid);
        // Running means the container's command runs: as runc's start, return once it is exec'd.
        while (!execedFromParent(c.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
        break;
      }
      const err = readFileSync(join(dir, 'stderr'), 'utf8').slice(c.stderr.offset);
      if (/^bwrap: /m.test(err) || Date.now() > deadline) {
        await this.failStart(c, err.trim().split('\n').pop() || 'the container did not start');
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    // As containerd: the log file is there once the container has started, output or not.
    await touchLog(c.logPath);
    c.state = 'CONTAINER_RUNNING';
    c.startedAt = nowNs();
    c.isolation = this.isolation;
    await this.persistContainer(c);
  }

  /** A start that failed leaves the container exited with 128 and StartError, as runc's do. */
  private async failStart(c: ContainerRecord, message: string): Promise<never> {
    c.state = 'CONTAINER_EXITED';
    c.exitCode = 128;
    c.reason = 'StartError';
    c.message = message;
    c.finishedAt = nowNs();
    await this.persistContainer(c);
    throw new FailedPreconditionError(`failed to start container ${c.id}: ${message}`);
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    const c = this.findContainer(id);
    if (!c) return; // idempotent
    if (c.state !== 'CONTAINER_RUNNING' || c.pid === undefined) return;
    const alive = () => this.running(c) && this.readExit(c) === undefined;
    // Under proot the PID is the monitor shell's, the leader of the container's process group.
    const target = c.isolation === 'proot' ? -c.pid : c.pid;
    const signal = (sig: NodeJS.Signals) => {
      try {
        process.kill(target, sig);
      } catch {
        /* already gone */
      }
    };
    if (timeoutSeconds > 0) {
      // The container's process is PID 1 of its namespace, which only gets the signals it has a
      // handler for: a SIGTERM sent just before the handler is installed is lost, so it is sent
      // once more when the handler appears (a process that never installs one waits for SIGKILL).
      let handled = catchesSigterm(c.pid);
      signal('SIGTERM');
      const deadline = Date.now() + timeoutSeconds * 1000;
      while (alive() && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        if (!handled && catchesSigterm(c.pid)) {
          handled = true;
          signal('SIGTERM');
        }
      }
    }
    if (alive()) signal('SIGKILL'); // the init of its PID namespace: everything in it goes
    const deadline = Date.now() + 10_000;
    while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // The monitor records the exit code a moment after the process ends; then the container is
    // exited when this call returns (the grace the ticker gives is spent here).
    const recorded = Date.now() + 1000;
    while (this.readExit(c) === undefined && Date.now() < recorded) await new Promise((r) => setTimeout(r, 10));
    if (!alive()) this.goneAt.set(c.id, 0);
    this.tick();
  }

  async removeContainer(id: string): Promise<void> {
    const c = this.findContainer(id);
    if (!c) return; // idempotent
    if (c.state === 'CONTAINER_RUNNING') await this.stopContainer(c.id, 0);
    this.closeStdin(c.id);
    this.killLeftovers(c);
    if (c.rootfsMounted) await run('umount', ['-l', join(this.cdir(c.id), 'rootfs')]).catch(() => undefined);
    for (const m of c.launch?.mounts ?? []) {
      if (m.hostPath.startsWith(join(this.cdir(c.id), 'mounts'))) await run('umount', ['-l', m.hostPath]).catch(() => undefined);
    }
    this.containers.delete(c.id);
    this.statsService.forget(c.id);
    this.offsetsSavedAt.delete(c.id);
    this.goneAt.delete(c.id);
    this.cgroups.remove(c.id);
    await rm(this.cdir(c.id), { recursive: true, force: true });
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
        resources: null,
        user: null,
      },
      // Verbose, as containerd: one "info" key holding JSON (crictl inspect shows it), with the PID.
      info: verbose ? { info: JSON.stringify({ pid: c.pid, isolation: c.isolation, user: c.user, sandboxID: c.sandboxId }) } : {},
    } as unknown as ContainerStatusResponse;
  }

  async updateContainerResources(id: string): Promise<void> {
    this.container(id);
    throw new FailedPreconditionError('updating the resources of a running container is not supported by the process runtime');
  }

  async reopenContainerLog(id: string): Promise<void> {
    const c = this.container(id);
    if (c.state !== 'CONTAINER_RUNNING') throw new FailedPreconditionError(`container ${c.id} is not running`);
    // Lines are appended by path, so a rotated log is written anew anyway; the new file exists at once.
    await touchLog(c.logPath);
  }

  /**
   * How to run a command in a running container: the argv and environment of its isolation, and
   * the container's PID namespace held open (fd 3 of the command; the caller closes it once
   * spawned), and why the command cannot run there, if it cannot.
   */
  prepareExec(id: string, cmd: string[]): { argv: string[]; env: Record<string, string>; pidns: number; missing?: string } {
    const c = this.container(id);
    if (c.state !== 'CONTAINER_RUNNING' || c.pid === undefined) throw new FailedPreconditionError(`container ${c.id} is not running`);
    if (cmd.length === 0) throw new InvalidArgumentError('no command to exec');
    // A container started before exec kept its launch: its root, binds and the image's defaults.
    const spec: LaunchSpec = c.launch ?? {
      rootfs: join(this.cdir(c.id), 'rootfs'),
      argv: [],
      env: [['PATH', DEFAULT_PATH]],
      cwd: c.config.working_dir || '/',
      hostname: '',
      mounts: criMounts(c.config),
      statusFd: 3,
      user: c.user,
    };
    // The container's PID namespace, held open for bubblewrap to join (and proof it still runs).
    let pidns: number;
    try {
      pidns = openSync(`/proc/${c.pid}/ns/pid`, 'r');
    } catch {
      throw new FailedPreconditionError(`container ${c.id} is not running`);
    }
    const { argv, env } = execArgv(c.isolation ?? 'bubblewrap', spec, c.pid, cmd, 3);
    const path = spec.env.find(([k]) => k === 'PATH')?.[1] ?? DEFAULT_PATH;
    return { argv, env, pidns, missing: missingExecutable(spec.rootfs, cmd[0]!, path, spec.cwd) };
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
  readySandbox(id: string): { name: string; uid: string } {
    const s = this.sandboxes.get(id) ?? [...this.sandboxes.values()].find((x) => id.length >= 6 && x.id.startsWith(id));
    if (!s) throw new NotFoundError(`pod sandbox ${id}`);
    if (s.state !== 'SANDBOX_READY') throw new FailedPreconditionError(`pod sandbox ${s.id} is not ready`);
    return { name: s.config.metadata?.name ?? '', uid: s.config.metadata?.uid ?? '' };
  }

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResponse> {
    const { argv, env, pidns } = this.prepareExec(id, cmd);
    return new Promise<ExecSyncResponse>((resolve, reject) => {
      // A group of its own: on timeout the whole group goes, nsenter's forked child included
      // (killing nsenter alone would leave the command running and its pipes open).
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe', pidns], env, detached: true });
      closeSync(pidns);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timedOut = false;
      child.stdout!.on('data', (b: Buffer) => out.push(b));
      child.stderr!.on('data', (b: Buffer) => err.push(b));
      const timer =
        timeoutSeconds > 0
          ? setTimeout(() => {
              timedOut = true;
              try {
                process.kill(-child.pid!, 'SIGKILL');
              } catch {
                /* already gone */
              }
            }, timeoutSeconds * 1000)
          : undefined;
      child.on('close', (code, sig) => {
        if (timer) clearTimeout(timer);
        // As containerd: a command that outlives its timeout is an error, not an exit code.
        if (timedOut) return reject(new DeadlineExceededError(`command ${JSON.stringify(cmd)} timed out after ${timeoutSeconds}s`));
        resolve({ stdout: Buffer.concat(out), stderr: Buffer.concat(err), exit_code: code ?? (sig ? 128 + (os.constants.signals[sig] ?? 9) : 1) } as unknown as ExecSyncResponse);
      });
      child.on('error', (e) => resolve({ stdout: Buffer.alloc(0), stderr: Buffer.from(e.message), exit_code: 127 } as unknown as ExecSyncResponse));
    });
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
    const chosen = [...this.sandboxes.values()].filter((s) => (!filter?.id || s.id.startsWith(filter.id)) && matchLabels(s.config.labels, filter?.label_selector));
    return Promise.all(chosen.map((s) => this.statsService.sandboxStats(s)));
  }

  // ImageService

  private imageView(img: StoredImage): Image {
    // The image's USER, as CRI reports it: a numeric user is a uid, a named one a username.
    const user = (img.config.User ?? '').split(':')[0] ?? '';
    const numeric = /^\d+$/.test(user);
    return {
      id: img.id,
      repo_tags: img.repoTags,
      repo_digests: img.repoDigests,
      size: String(img.size),
      uid: numeric ? { value: user } : null,
      username: numeric ? '' : user,
      spec: null,
      pinned: false,
    } as unknown as Image;
  }

  async listImages(): Promise<Image[]> {
    return this.images.list().map((i) => this.imageView(i));
  }

  async imageStatus(image: ImageSpec): Promise<ImageStatusResponse> {
    const img = this.images.find(image.image ?? '');
    return { image: img ? this.imageView(img) : null, info: {} } as unknown as ImageStatusResponse;
  }

  async pullImage(image: ImageSpec): Promise<string> {
    const img = await this.images.pull(image.image ?? '');
    return img.id;
  }

  async removeImage(image: ImageSpec): Promise<void> {
    const img = this.images.find(image.image ?? '');
    if (img && [...this.containers.values()].some((c) => c.imageId === img.id)) {
      throw new FailedPreconditionError(`image ${image.image} is in use by a container`);
    }
    await this.images.remove(image.image ?? '');
  }

  async imageFsInfo(): Promise<ImageFsInfoResponse> {
    let inodes = '0';
    try {
      inodes = String(statfsSync(this.images.root).files - statfsSync(this.images.root).ffree);
    } catch {
      /* not supported */
    }
    const used = await this.images.usedBytes();
    const usage = { timestamp: nowNs(), fs_id: { mountpoint: this.images.root }, used_bytes: { value: String(used) }, inodes_used: { value: inodes } };
    return { image_filesystems: [usage], container_filesystems: [usage] } as unknown as ImageFsInfoResponse;
  }
}
