// Which CAs a registry's TLS is checked against: the system's, plus those a docker/containerd
// `certs.d` directory holds for that host (`<dir>/<host[:port]>/*.crt`, the layout both read, so one
// directory serves the node's containerd and nodelet alike; a `hosts.toml` there is not ours).
import { readdir, readFile } from 'node:fs/promises';
import { rootCertificates } from 'node:tls';
import { join } from 'node:path';
import { InvalidArgumentError } from '../errors.js';

/** The directory names certs.d may use for a host: as named, and with or without HTTPS's default port. */
export function certsDirNames(host: string): string[] {
  if (host.endsWith(':443')) return [host, host.slice(0, -4)];
  return /:\d+$/.test(host) ? [host] : [host, `${host}:443`];
}

/** PEM texts of the `*.crt` files under `<certsDir>/<host>` for each of `hosts` (none when absent). */
export async function hostCAs(certsDir: string | undefined, hosts: string[]): Promise<string[]> {
  if (!certsDir) return [];
  const out: string[] = [];
  for (const host of new Set(hosts.flatMap(certsDirNames))) {
    const dir = join(certsDir, host);
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => n.endsWith('.crt')).sort();
    } catch {
      continue; // no directory for this host: the system CAs only
    }
    for (const n of names) {
      const pem = await readFile(join(dir, n), 'utf8');
      // A broken file would otherwise surface as an obscure OpenSSL error on every pull.
      if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new InvalidArgumentError(`registry CA file ${join(dir, n)} holds no PEM certificate`);
      out.push(pem);
    }
  }
  return out;
}

/** The trust for a TLS connection: the system CAs and the extra ones. */
export function trustedCAs(extra: string[]): string[] {
  return [...rootCertificates, ...extra];
}
