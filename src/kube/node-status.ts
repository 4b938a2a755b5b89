// The Node object nodelet keeps: labels, taints, addresses, nodeInfo, capacity/allocatable and the
// Ready/MemoryPressure/DiskPressure/PIDPressure conditions, computed as the kubelet does (pure).
import type { V1Node, V1NodeCondition, V1NodeStatus, V1Taint } from '@kubernetes/client-node';
import type { NodeletConfig } from '../config/config.js';
import { parseQuantity } from '../util/quantity.js';
import { nodeCapacity, nodeReserved } from '../cm/node-allocatable.js';
import { hardEvictionReservation, parseThresholds, type NodeConditionType } from '../eviction/thresholds.js';
import type { HostInfo } from './host.js';

export interface RuntimeHealth {
  /** `containerd://1.6.20` */
  runtimeVersion: string;
  /** Undefined when the runtime is ready; else why not, in the kubelet's words. */
  notReadyMessage?: string;
}

export interface NodeStatusInput {
  config: NodeletConfig;
  host: HostInfo;
  nodeIP: string;
  kubeletVersion: string;
  port: number;
  runtime: RuntimeHealth;
  /** The pressure conditions the eviction manager reports. */
  pressure: ReadonlySet<NodeConditionType>;
  /** The node is going down (graceful node shutdown): Ready False. */
  shuttingDown?: boolean;
  previous?: V1NodeStatus;
  now: number;
}

export function nodeLabels(config: NodeletConfig, host: HostInfo): Record<string, string> {
  return {
    'kubernetes.io/hostname': config.nodeName,
    'kubernetes.io/os': host.operatingSystem,
    'kubernetes.io/arch': host.architecture,
    'beta.kubernetes.io/os': host.operatingSystem,
    'beta.kubernetes.io/arch': host.architecture,
    ...config.nodeLabels,
  };
}

export function nodeTaints(config: NodeletConfig): V1Taint[] {
  return config.registerWithTaints.map((t) => ({ key: t.key, value: t.value, effect: t.effect }));
}

/** The Node object a first registration creates. */
export function newNode(config: NodeletConfig, host: HostInfo, status: V1NodeStatus): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: config.nodeName, labels: nodeLabels(config, host) },
    spec: { taints: nodeTaints(config) },
    status,
  };
}

const KiB = 1024;

export function capacityAndAllocatable(config: NodeletConfig, host: HostInfo): { capacity: Record<string, string>; allocatable: Record<string, string> } {
  const { milliCPU: cpu, memory, ephemeralStorage: storage } = nodeCapacity(config, host);
  const reserved = nodeReserved(config);
  const pods = config.capacity.pods !== undefined ? parseQuantity(config.capacity.pods) : config.maxPods;
  // As the kubelet: hard eviction thresholds are kept out of allocatable too.
  const thresholds = parseThresholds(config);
  const memEviction = hardEvictionReservation(thresholds, 'memory.available', memory);
  const fsEviction = hardEvictionReservation(thresholds, 'nodefs.available', storage);
  const milli = (m: number) => Math.max(0, m);
  const cpuText = (m: number) => (m % 1000 === 0 ? String(m / 1000) : `${m}m`);
  const memText = (b: number) => `${Math.max(0, Math.floor(b / KiB))}Ki`;
  return {
    capacity: {
      cpu: cpuText(milli(cpu)),
      memory: memText(memory),
      'ephemeral-storage': String(Math.floor(storage)),
      pods: String(Math.floor(pods)),
    },
    allocatable: {
      cpu: cpuText(milli(cpu - reserved.milliCPU)),
      memory: memText(memory - reserved.memory - memEviction),
      'ephemeral-storage': String(Math.max(0, Math.floor(storage - reserved.ephemeralStorage - fsEviction))),
      pods: String(Math.floor(pods)),
    },
  };
}

function condition(type: string, status: boolean, reason: string, message: string, previous: V1NodeStatus | undefined, now: number): V1NodeCondition {
  const text = status ? 'True' : 'False';
  const prev = previous?.conditions?.find((c) => c.type === type);
  return {
    type,
    status: text,
    reason,
    message,
    lastHeartbeatTime: new Date(now),
    // Moves only when the status does.
    lastTransitionTime: prev && prev.status === text && prev.lastTransitionTime ? prev.lastTransitionTime : new Date(now),
  };
}

export function computeNodeStatus(input: NodeStatusInput): V1NodeStatus {
  const { config, host, pressure, previous, now } = input;
  const { capacity, allocatable } = capacityAndAllocatable(config, host);
  const memPressure = pressure.has('MemoryPressure');
  const diskPressure = pressure.has('DiskPressure');
  const pidPressure = pressure.has('PIDPressure');
  // As the kubelet's Ready: every reason the node is not, one message ("[a, b]" for more than one).
  const notReady = [input.runtime.notReadyMessage, input.shuttingDown ? 'node is shutting down' : undefined].filter((m): m is string => m !== undefined);
  const ready = notReady.length === 0;
  const notReadyMessage = notReady.length > 1 ? `[${notReady.join(', ')}]` : notReady[0];
  return {
    capacity,
    allocatable,
    conditions: [
      condition('MemoryPressure', memPressure, memPressure ? 'KubeletHasInsufficientMemory' : 'KubeletHasSufficientMemory', memPressure ? 'kubelet has insufficient memory available' : 'kubelet has sufficient memory available', previous, now),
      condition('DiskPressure', diskPressure, diskPressure ? 'KubeletHasDiskPressure' : 'KubeletHasNoDiskPressure', diskPressure ? 'kubelet has disk pressure' : 'kubelet has no disk pressure', previous, now),
      condition('PIDPressure', pidPressure, pidPressure ? 'KubeletHasInsufficientPID' : 'KubeletHasSufficientPID', pidPressure ? 'kubelet has insufficient PID available' : 'kubelet has sufficient PID available', previous, now),
      condition('Ready', ready, ready ? 'KubeletReady' : 'KubeletNotReady', ready ? 'kubelet is posting ready status' : notReadyMessage!, previous, now),
    ],
    addresses: [
      { type: 'InternalIP', address: input.nodeIP },
      { type: 'Hostname', address: host.hostname },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: input.port } },
    // The API server passes WebSocket streams through to a node that declares it takes them.
    ...({ declaredFeatures: ['ExtendWebSocketsToKubelet'] } as object),
    nodeInfo: {
      machineID: host.machineID,
      systemUUID: host.systemUUID,
      bootID: host.bootID,
      kernelVersion: host.kernelVersion,
      osImage: host.osImage,
      containerRuntimeVersion: input.runtime.runtimeVersion,
      kubeletVersion: input.kubeletVersion,
      kubeProxyVersion: '',
      operatingSystem: host.operatingSystem,
      architecture: host.architecture,
    },
  };
}

/** Two statuses differ in something other than heartbeat times (the kubelet's "changed" test). */
export function nodeStatusChanged(a: V1NodeStatus | undefined, b: V1NodeStatus): boolean {
  if (!a) return true;
  const strip = (s: V1NodeStatus) =>
    JSON.stringify({ ...s, conditions: (s.conditions ?? []).map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })).sort((x, y) => x.type.localeCompare(y.type)) });
  return strip(a) !== strip(b);
}

/** The node a standalone agent admits its static pods against: no API object, the same capacity and labels. */
export function standaloneNode(config: NodeletConfig, host: HostInfo): V1Node {
  return newNode(config, host, capacityAndAllocatable(config, host));
}
