// The host's address as the node reports it.
import os from 'node:os';

/** The first non-internal IPv4 address of the host, else loopback. */
export function hostIPv4(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
