// CRI ContainerStats and PodSandboxStats of the process runtime: CPU and memory from each
// container's cgroup (or /proc where it has none), a CPU rate from two readings, the writable
// layer's usage walked at most every 10 s; a sandbox is the sum of its containers.
import type { ContainerStats, PodSandboxStats } from '../cri/types.js';
import { cgroupAt, type Cgroups } from './cgroups.js';
import { nowNs, type ContainerRecord, type SandboxRecord } from './records.js';
import { DiskUsageCache, nanoCores, readProc, type UsageSample } from './stats.js';
import { join } from 'node:path';


export class ProcessStatsService {
  /** The last CPU reading of each container, for usage_nano_cores (a rate needs two readings). */
  private readonly lastCpu = new Map<string, { cpuNs: bigint; atNs: bigint }>();
  private readonly layerUsage = new DiskUsageCache(10_000);

  constructor(
    private readonly state: {
      containersOf(sandboxId: string): ContainerRecord[];
      cgroups(): Cgroups;
      containerDir(id: string): string;
      root: string;
    },
  ) {}

  /** A removed container's readings are forgotten with it. */
  forget(id: string): void {
    this.lastCpu.delete(id);
    this.layerUsage.forget(id);
  }

  private usage(c: ContainerRecord): UsageSample | undefined {
    if (c.state !== 'CONTAINER_RUNNING' || c.pid === undefined) return undefined;
    return this.state.cgroups().usage(cgroupAt(c)) ?? readProc(c.pid);
  }

  async containerStats(c: ContainerRecord): Promise<ContainerStats> {
    const ts = nowNs();
    const u = this.usage(c);
    const v = (n: number | bigint | undefined) => (n === undefined ? null : { value: String(n) });
    let nano: bigint | undefined;
    if (u?.cpuNs !== undefined) {
      const cur = { cpuNs: u.cpuNs, atNs: BigInt(ts) };
      nano = nanoCores(this.lastCpu.get(c.id), cur);
      this.lastCpu.set(c.id, cur);
    }
    const layer = await this.layerUsage.get(c.id, join(this.state.containerDir(c.id), c.rootfsMounted ? 'upper' : 'rootfs'));
    return {
      attributes: { id: c.id, metadata: c.config.metadata, labels: c.config.labels ?? {}, annotations: c.config.annotations ?? {} },
      // A container that is not running uses nothing: the readings are there, with zero values.
      cpu: { timestamp: ts, usage_core_nano_seconds: v(u?.cpuNs ?? 0), usage_nano_cores: v(nano ?? 0) },
      memory: {
        timestamp: ts,
        working_set_bytes: v(u?.workingSetBytes ?? 0),
        available_bytes: v(u?.availableBytes),
        usage_bytes: v(u?.memoryUsageBytes ?? 0),
        rss_bytes: v(u?.rssBytes ?? 0),
        page_faults: v(u?.pageFaults ?? 0),
        major_page_faults: v(u?.majorPageFaults ?? 0),
      },
      writable_layer: { timestamp: ts, fs_id: { mountpoint: this.state.root }, used_bytes: v(layer.bytes), inodes_used: v(layer.inodes) },
    };
  }

  /** A sandbox's usage is the sum of its containers' (it has no process of its own). */
  async sandboxStats(s: SandboxRecord): Promise<PodSandboxStats> {
    const ts = nowNs();
    const containers = await Promise.all(this.state.containersOf(s.id).map((c) => this.containerStats(c)));
    const sum = (get: (x: ContainerStats) => { value?: unknown } | null | undefined) =>
      ({ value: String(containers.reduce((acc, x) => acc + BigInt(String(get(x)?.value ?? 0)), 0n)) });
    const running = this.state.containersOf(s.id).filter((c) => c.state === 'CONTAINER_RUNNING');
    const processes = running.reduce((n, c) => n + (this.state.cgroups().processCount(cgroupAt(c)) ?? 1), 0);
    return {
      attributes: { id: s.id, metadata: s.config.metadata, labels: s.config.labels ?? {}, annotations: s.config.annotations ?? {} },
      linux: {
        cpu: { timestamp: ts, usage_core_nano_seconds: sum((x) => x.cpu?.usage_core_nano_seconds), usage_nano_cores: sum((x) => x.cpu?.usage_nano_cores) },
        memory: {
          timestamp: ts,
          working_set_bytes: sum((x) => x.memory?.working_set_bytes),
          usage_bytes: sum((x) => x.memory?.usage_bytes),
          rss_bytes: sum((x) => x.memory?.rss_bytes),
          page_faults: sum((x) => x.memory?.page_faults),
          major_page_faults: sum((x) => x.memory?.major_page_faults),
        },
        // Not counted here: the agent reads the pod's interfaces from a process of its sandbox (verbose status).
        network: null,
        process: { timestamp: ts, process_count: { value: String(processes) } },
        containers,
      },
    };
  }
}
