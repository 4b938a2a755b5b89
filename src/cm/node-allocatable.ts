// The node's amounts as the kubelet's container manager reckons them: capacity (the configured
// override, else the host's) and what is reserved for the OS and the node's daemons (systemReserved
// plus kubeReserved). Allocatable, as the Node reports it, is capacity less reserved less the hard
// eviction thresholds; the pods' cgroup (kubepods) is held to capacity less reserved. Pure.
import type { NodeletConfig, ResourceList } from '../config/config.js';
import type { HostInfo } from '../kube/host.js';
import { milliCPU, parseQuantity } from '../util/quantity.js';

export interface NodeAmounts {
  milliCPU: number;
  memory: number;
  ephemeralStorage: number;
}

type Sources = Pick<NodeletConfig, 'capacity' | 'systemReserved' | 'kubeReserved'>;

export function nodeCapacity(config: Pick<NodeletConfig, 'capacity'>, host: Pick<HostInfo, 'cpus' | 'memoryBytes'> & Partial<Pick<HostInfo, 'ephemeralStorageBytes'>>): NodeAmounts {
  const over = config.capacity;
  return {
    milliCPU: over.cpu !== undefined ? milliCPU(over.cpu) : Math.round(host.cpus * 1000),
    memory: over.memory !== undefined ? parseQuantity(over.memory) : host.memoryBytes,
    ephemeralStorage: over['ephemeral-storage'] !== undefined ? parseQuantity(over['ephemeral-storage']) : (host.ephemeralStorageBytes ?? 0),
  };
}

/** One reservation (systemReserved or kubeReserved) in the units limits are set in; what it leaves out is absent. */
export function reservedAmounts(r: ResourceList): Partial<NodeAmounts> {
  return {
    ...(r.cpu !== undefined ? { milliCPU: milliCPU(r.cpu) } : {}),
    ...(r.memory !== undefined ? { memory: parseQuantity(r.memory) } : {}),
    ...(r['ephemeral-storage'] !== undefined ? { ephemeralStorage: parseQuantity(r['ephemeral-storage']) } : {}),
  };
}

export function nodeReserved(config: Sources): NodeAmounts {
  const system = reservedAmounts(config.systemReserved);
  const kube = reservedAmounts(config.kubeReserved);
  const sum = (k: keyof NodeAmounts) => (system[k] ?? 0) + (kube[k] ?? 0);
  return { milliCPU: sum('milliCPU'), memory: sum('memory'), ephemeralStorage: sum('ephemeralStorage') };
}
