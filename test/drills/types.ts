// The contract between `make drills`' runner (test/drills/run.ts) and each drill
// (test/drills/drills/<name>.ts): a drill gets a node with its standing workload running, does its
// fault, waits for recovery, and returns its figures; the runner then checks the invariants.
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../../src/cri/client.js';

export type RuntimeName = 'containerd' | 'process';

/** A drill's figures: one line of `make drills` and its entry in results/latest.json. */
export type Figures = Record<string, number | string | boolean>;

/** nodelet as the drill runs it: a child process that can be crashed and started again on the same state. */
export interface DrillAgent {
  readonly nodeName: string;
  /** The agent process's PID now (it changes on each start). */
  readonly pid: number;
  /** Its read-only port on loopback: /healthz, /pods, /metrics over plain HTTP. */
  readonly localPort: number;
  /** --root-dir: pod directories (volumes, etc-hosts, termination logs). */
  readonly rootDir: string;
  /** --pod-log-root: a small loop-mounted filesystem of its own (the disk-full drill fills it). */
  readonly podLogRoot: string;
  /** --static-pod-path: static pod manifests (watched). */
  readonly staticPodDir: string;
  /** Every log line of the current process so far, parsed (JSON logs). */
  readonly lines: ReadonlyArray<Record<string, unknown>>;
  /** SIGKILL, as a crash; resolves when it is gone. */
  kill(): Promise<void>;
  /** Starts it again with the same flags and state; resolves when /healthz answers. */
  start(): Promise<void>;
  /** Whether the process is alive (a drill asserting "nodelet does not crash" checks this). */
  alive(): boolean;
  /** GET on the read-only port (e.g. '/metrics'); the body as text. */
  get(path: string): Promise<string>;
}

/** The container runtime under the agent, with what a drill may do to it. */
export interface DrillRuntime {
  readonly name: RuntimeName;
  readonly endpoint: string;
  /** Stops it (containerd: SIGTERM, its shims and containers keep running; the process runtime: SIGKILL, its monitors keep running). */
  stop(): Promise<void>;
  /** Starts it again on the same state; resolves when it answers CRI. */
  start(): Promise<void>;
  /** The host PIDs of the processes a container runs (its init first), from the runtime (CRI verbose status or /proc). */
  containerPids(containerId: string): Promise<number[]>;
}

/** The ~20 pods that stand on the node through every drill (test/drills/workload.ts). */
export interface Workload {
  /** The pods as last read, by name. */
  pods(): Promise<V1Pod[]>;
  /** Every workload pod Running (containers ready where they should be) and every Job pod Succeeded. */
  settled(): Promise<boolean>;
}

/** The agent reaches the API server through this TCP proxy (test/drills/api-proxy.ts). */
export interface DrillApiProxy {
  /** Every connection open now goes silent (held open, nothing forwarded); returns how many. New ones work. */
  freeze(): number;
  /** The silent connections are closed. */
  dropFrozen(): void;
}

/** What a drill gets. */
export interface DrillContext {
  readonly runtime: DrillRuntime;
  readonly apiProxy: DrillApiProxy;
  readonly agent: DrillAgent;
  readonly workload: Workload;
  readonly cri: CriClient;
  /** The namespace the drill's pods live in (one per runtime's run; deleted at the end). */
  readonly namespace: string;
  /** The short run of `make test`: fewer pods, shorter outages and churn. */
  readonly reduced: boolean;
  /** Figures recorded as the drill goes: kept, with those it returns, even when it fails. */
  readonly figures: Figures;
  /**
   * Containers the drill killed or restarted on purpose, by pod UID and container name: the
   * restart-count invariant allows exactly these extra restarts (at least one each).
   */
  expectRestart(podUid: string, container: string): void;
  /** A progress line on stderr (the figures line is the runner's). */
  log(message: string): void;
}

export interface Drill {
  /** Short, kebab-case: the `DRILLS=` filter and the results key. */
  readonly name: string;
  /** One sentence: what is done to the node. */
  readonly description: string;
  readonly runtimes: readonly RuntimeName[];
  /** Does the fault, waits for recovery, checks what is particular to it (throwing on failure), and returns its figures. */
  run(ctx: DrillContext): Promise<Figures>;
}
