// The volume manager: before a pod's containers start, every volume they mount is set up under the
// pod's directory (and set up again on each sync where its sources may change); a volume that
// cannot be set up gets a FailedMount event and the pod waits; when the pod has terminated its
// volumes are torn down, and the directories of pods that are gone are removed.
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { EventReasons, podRef, type EventRecorder } from '../kube/object-ref.js';
import { podFields, type Logger } from '../observability/logger.js';
import { configMapPlugin } from './configmap.js';
import { downwardAPIPlugin } from './downward-api.js';
import { emptyDirPlugin } from './empty-dir.js';
import { hostPathPlugin } from './host-path.js';
import { mountsAtOrUnder } from './mounter.js';
import type { ObjectCache } from './object-cache.js';
import { PLUGINS, type PluginName } from './paths.js';
import { projectedPlugin } from './projected.js';
import { secretPlugin } from './secret.js';
import { VolumeSetUpError, type MountedVolume, type VolumeHost, type VolumePlugin } from './types.js';

const plugins: VolumePlugin[] = [configMapPlugin, secretPlugin, downwardAPIPlugin, projectedPlugin, emptyDirPlugin, hostPathPlugin];

function pluginFor(v: V1Volume): VolumePlugin | undefined {
  if (v.configMap) return configMapPlugin;
  if (v.secret) return secretPlugin;
  if (v.downwardAPI) return downwardAPIPlugin;
  if (v.projected) return projectedPlugin;
  if (v.emptyDir) return emptyDirPlugin;
  if (v.hostPath) return hostPathPlugin;
  return undefined;
}

/** The volume's kind, as the API names its field (persistentVolumeClaim, csi, nfs, ...). */
function volumeKind(v: V1Volume): string {
  return Object.keys(v).find((k) => k !== 'name') ?? 'unknown';
}

/** Volumes some container of the pod mounts (the kubelet sets up no other). */
export function mountedVolumeNames(pod: V1Pod): Set<string> {
  const cs = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return new Set(cs.flatMap((c) => [...(c.volumeMounts ?? []), ...(c.volumeDevices ?? [])].map((m) => m.name)));
}

/** The ConfigMaps and Secrets a pod reads, through its volumes and its containers' environment. */
export function podObjectReferences(pod: V1Pod): { configMaps: string[]; secrets: string[] } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const v of pod.spec?.volumes ?? []) {
    if (v.configMap?.name) configMaps.add(v.configMap.name);
    if (v.secret?.secretName) secrets.add(v.secret.secretName);
    for (const s of v.projected?.sources ?? []) {
      if (s.configMap?.name) configMaps.add(s.configMap.name);
      if (s.secret?.name) secrets.add(s.secret.name);
    }
  }
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const e of c.env ?? []) {
      if (e.valueFrom?.configMapKeyRef?.name) configMaps.add(e.valueFrom.configMapKeyRef.name);
      if (e.valueFrom?.secretKeyRef?.name) secrets.add(e.valueFrom.secretKeyRef.name);
    }
    for (const f of c.envFrom ?? []) {
      if (f.configMapRef?.name) configMaps.add(f.configMapRef.name);
      if (f.secretRef?.name) secrets.add(f.secretRef.name);
    }
  }
  return { configMaps: [...configMaps], secrets: [...secrets] };
}

/** Volumes that could not be set up; each already has its FailedMount event. */
export class VolumesNotReadyError extends Error {
  override name = 'VolumesNotReadyError';
  constructor(readonly failures: VolumeSetUpError[]) {
    super(`unmounted volumes=[${failures.map((f) => f.volume).sort().join(' ')}]: ${failures.map((f) => f.eventMessage).join('; ')}`);
  }
}

export interface VolumeManagerOptions {
  host: VolumeHost;
  recorder: EventRecorder;
  logger: Logger;
  configMaps?: ObjectCache;
  secrets?: ObjectCache;
}

export class VolumeManager {
  /** pod UID -> volume name -> what is set up. */
  private readonly mounted = new Map<string, Map<string, MountedVolume>>();

  constructor(private readonly opts: VolumeManagerOptions) {}

  get host(): VolumeHost {
    return this.opts.host;
  }

  /** Pods with volumes set up, and the entries of the caches behind them (for /metrics). */
  sizes(): { pods: number; maps: Record<string, number> } {
    const maps: Record<string, number> = { service_account_tokens: this.opts.host.tokens?.size ?? 0 };
    for (const [name, cache] of [['configmap', this.opts.configMaps], ['secret', this.opts.secrets]] as const) {
      const s = cache?.sizes();
      maps[`${name}_cache_objects`] = s?.objects ?? 0;
      maps[`${name}_cache_pods`] = s?.pods ?? 0;
    }
    return { pods: this.mounted.size, maps };
  }

  /** The pod's volumes, set up; throws VolumesNotReadyError (after its events) when any could not be. */
  async mountPod(pod: V1Pod): Promise<Map<string, MountedVolume>> {
    const uid = pod.metadata?.uid ?? '';
    const ns = pod.metadata?.namespace ?? '';
    const refs = podObjectReferences(pod);
    this.opts.configMaps?.setReferences(uid, refs.configMaps.map((name) => ({ namespace: ns, name })));
    this.opts.secrets?.setReferences(uid, refs.secrets.map((name) => ({ namespace: ns, name })));

    const paths = this.opts.host.paths;
    // Made once: the directories go only with unmountPod/removePod, which forget the pod too.
    if (!this.mounted.has(uid)) for (const d of [paths.podDir(uid), join(paths.podDir(uid), 'volumes'), join(paths.podDir(uid), 'plugins')]) await mkdir(d, { recursive: true, mode: 0o750 });
    const have = this.mounted.get(uid) ?? new Map<string, MountedVolume>();
    this.mounted.set(uid, have);
    const wanted = mountedVolumeNames(pod);
    const failures: VolumeSetUpError[] = [];
    for (const volume of pod.spec?.volumes ?? []) {
      if (!wanted.has(volume.name)) continue;
      const done = have.get(volume.name);
      if (done && !done.remount) continue;
      const plugin = pluginFor(volume);
      try {
        if (!plugin) throw new VolumeSetUpError(volume.name, `volume type ${volumeKind(volume)} is not supported by nodelet`);
        have.set(volume.name, await plugin.setUp({ pod, volume, host: this.opts.host, previous: done }));
      } catch (err) {
        const e = err instanceof VolumeSetUpError ? err : new VolumeSetUpError(volume.name, (err as Error).message);
        // A volume set up before keeps its last content: its pod goes on, with the event.
        if (!done) failures.push(e);
        this.opts.recorder.event(podRef(pod), 'Warning', EventReasons.FailedMountVolume, e.eventMessage);
        this.opts.logger.warn('volume setup failed', { ...podFields(pod), volume: volume.name, error: e.message });
      }
    }
    if (failures.length) throw new VolumesNotReadyError(failures);
    return have;
  }

  /**
   * Tears down the pod's volumes (its directory stays until the pod is gone: it holds its
   * termination messages). The mount table is read once for the whole pod (`known`: already read
   * by the caller): it is ~200 KB on a busy host, and was read once per volume. Answers whether
   * anything was mounted there.
   */
  async unmountPod(uid: string, known?: string[]): Promise<boolean> {
    const paths = this.opts.host.paths;
    const podDir = paths.podDir(uid);
    const mounts = known ?? (await this.opts.host.mounter.mountsUnder(podDir));
    const under = (dir: string) => mountsAtOrUnder(mounts, dir);
    const volumesDir = join(podDir, 'volumes');
    for (const plugin of plugins) {
      if (plugin.name === PLUGINS.hostPath) continue;
      const dir = join(volumesDir, plugin.name.replace(/\//g, '~'));
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const n of names) await plugin.tearDown(this.opts.host, join(dir, n), under(join(dir, n)));
    }
    const subpaths = join(podDir, 'volume-subpaths');
    for (const m of under(subpaths)) await this.opts.host.mounter.unmount(m);
    await rm(subpaths, { recursive: true, force: true });
    this.mounted.delete(uid);
    this.opts.configMaps?.forget(uid);
    this.opts.secrets?.forget(uid);
    this.opts.host.tokens?.forgetPod(uid);
    return mounts.length > 0;
  }

  /** Removes the pod's directory, after tearing down what is left in it (`known`: its mounts, just read). */
  async removePod(uid: string, known?: string[]): Promise<void> {
    const hadMounts = await this.unmountPod(uid, known);
    const dir = this.opts.host.paths.podDir(uid);
    // Nothing was mounted there a moment ago and nothing of the pod runs: no second read is needed.
    const left = hadMounts ? await this.opts.host.mounter.mountsUnder(dir) : [];
    // Never remove through a mount: what is mounted there is not the pod's to delete.
    if (left.length) throw new Error(`pod directory ${dir} still has mounts: ${left.join(', ')}`);
    await rm(dir, { recursive: true, force: true });
  }

  /**
   * Directories of pods that are not in `keep` (gone from every source) are removed. The mount
   * table is read once for the pass (after a deletion of hundreds of pods it was read twice per
   * directory, most of the agent's CPU for a minute).
   */
  async cleanupOrphans(keep: (uid: string) => boolean): Promise<string[]> {
    const removed: string[] = [];
    const podsDir = this.opts.host.paths.podsDir();
    const uids = (await readdir(podsDir).catch(() => [] as string[])).filter((uid) => !keep(uid));
    if (uids.length === 0) return removed;
    const mounts = await this.opts.host.mounter.mountsUnder(podsDir);
    for (const uid of uids) {
      const dir = this.opts.host.paths.podDir(uid);
      try {
        await this.removePod(uid, mountsAtOrUnder(mounts, dir));
        removed.push(uid);
      } catch (err) {
        this.opts.logger.warn('orphaned pod directory not removed', { uid, error: (err as Error).message });
      }
    }
    return removed;
  }

  /** What is set up for a pod, by volume name. */
  volumesOf(uid: string): Map<string, MountedVolume> {
    return this.mounted.get(uid) ?? new Map();
  }

  pluginName(v: V1Volume): PluginName | undefined {
    return pluginFor(v)?.name;
  }
}
