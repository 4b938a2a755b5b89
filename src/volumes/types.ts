// What a volume plugin is given and gives back. Each kind of volume is a plugin in a file of its own.
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import type { ConfigSource } from '../runtime/deps.js';
import type { Mounter } from './mounter.js';
import type { PluginName, PodPaths } from './paths.js';
import type { TokenManager } from './token-manager.js';

/** ConfigMaps and Secrets, as volumes and env vars read them. */
export type ObjectSource = ConfigSource;

export interface VolumeHost {
  paths: PodPaths;
  mounter: Mounter;
  /** Undefined when nodelet runs without an API server. */
  objects?: ObjectSource;
  tokens?: TokenManager;
  /** The node's allocatable CPU (cores) and memory (bytes): the default limits the downward API reports. */
  allocatable(): { cpu: number; memory: number };
}

export interface VolumeContext {
  pod: V1Pod;
  volume: V1Volume;
  host: VolumeHost;
  /** What this volume's last set-up made, when it is being set up again (a remount). */
  previous?: MountedVolume;
}

export interface MountedVolume {
  name: string;
  plugin: PluginName;
  /** The host path containers bind. */
  path: string;
  /** Every container sees it read-only (configMap, secret, downwardAPI, projected). */
  readOnly: boolean;
  /** Set up again on every sync, so that edits of its sources reach the files. */
  remount: boolean;
}

export interface VolumePlugin {
  name: PluginName;
  /** The volume's path, whether or not it is set up. */
  path(ctx: VolumeContext): string;
  setUp(ctx: VolumeContext): Promise<MountedVolume>;
  /**
   * Removes what setUp made (unmounting first where it mounted). `mounts`: the mount points at or
   * under `path`, deepest first, when the caller has just read them (else they are read here).
   */
  tearDown(host: VolumeHost, path: string, mounts?: string[]): Promise<void>;
}

/** A volume that could not be set up; its message is the plugin's, as the kubelet words it. */
export class VolumeSetUpError extends Error {
  override name = 'VolumeSetUpError';
  constructor(
    readonly volume: string,
    message: string,
  ) {
    super(message);
  }

  /** The FailedMount event's message. */
  get eventMessage(): string {
    return `MountVolume.SetUp failed for volume "${this.volume}" : ${this.message}`;
  }
}
