// What the node is made of, read from the host: capacity, identity, the most processes it can have.
import { readFileSync, statfsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import os from 'node:os';

function readTrim(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

export interface HostInfo {
  hostname: string;
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  operatingSystem: string;
  architecture: string;
  cpus: number;
  memoryBytes: number;
  /** Size of the filesystem holding the pod logs (the node filesystem). */
  ephemeralStorageBytes: number;
}

export function goArch(nodeArch: string): string {
  return ({ x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' } as Record<string, string>)[nodeArch] ?? nodeArch;
}

function osImage(): string {
  const text = readTrim('/etc/os-release');
  const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(text);
  return m?.[1] ?? `${os.type()} ${os.release()}`;
}

function fsSize(path: string): { size: number; avail: number } {
  try {
    const s = statfsSync(path);
    return { size: s.blocks * s.bsize, avail: s.bavail * s.bsize };
  } catch {
    return { size: 0, avail: 0 };
  }
}

/** The first existing ancestor of `path` (the pod log root may not exist yet). */
export function existing(path: string): string {
  let p = path;
  for (;;) {
    try {
      statfsSync(p);
      return p;
    } catch {
      const parent = p.replace(/\/[^/]*$/, '') || '/';
      if (parent === p) return '/';
      p = parent;
    }
  }
}

export function readHostInfo(nodeFsPath: string): HostInfo {
  return {
    hostname: os.hostname(),
    machineID: readTrim('/etc/machine-id') || readTrim('/var/lib/dbus/machine-id'),
    systemUUID: readTrim('/sys/class/dmi/id/product_uuid').toLowerCase(),
    bootID: readTrim('/proc/sys/kernel/random/boot_id'),
    kernelVersion: os.release(),
    osImage: osImage(),
    operatingSystem: os.platform(),
    architecture: goArch(os.arch()),
    cpus: os.cpus().length,
    memoryBytes: os.totalmem(),
    ephemeralStorageBytes: fsSize(existing(nodeFsPath)).size,
  };
}


/** The most processes the node can have, as the kubelet's MaxPID: the smaller of pid_max and threads-max; undefined if neither can be read. */
export function maxPids(): number | undefined {
  const read = (f: string) => Number(readTrim(f)) || Infinity;
  const n = Math.min(read('/proc/sys/kernel/pid_max'), read('/proc/sys/kernel/threads-max'));
  return Number.isFinite(n) ? n : undefined;
}

/** The processes running on the node (the numbered entries of /proc); undefined without a /proc. */
export async function processCount(): Promise<number | undefined> {
  try {
    return (await readdir('/proc')).filter((d) => /^\d+$/.test(d)).length;
  } catch {
    return undefined;
  }
}
