// Where a node keeps the certificates it was issued, laid out as the kubelet's certificate store:
// each key and certificate in one PEM file <prefix>-<UTC time>.pem (mode 0600), and
// <prefix>-current.pem a symlink to the one in use, swapped in one rename, so a reader sees the old
// pair or the new one, never half of each. nodelet-client-* are the node's client certificates,
// nodelet-server-* the node API's serving ones.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, symlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** A key and its certificate (PEM), as TLS takes them. */
export interface KeyAndCertificate {
  cert: Buffer;
  key: Buffer;
}

/** A pair as read back: with the certificate's validity (ms since the epoch). */
export interface StoredPair extends KeyAndCertificate {
  notBefore: number;
  notAfter: number;
}

/** The certificate blocks and the private key block of a PEM text. */
export function splitPem(text: string): { cert: string; key: string } {
  const blocks = text.match(/-----BEGIN [^-]+-----[\s\S]*?-----END [^-]+-----\n?/g) ?? [];
  const withNewline = (b: string) => (b.endsWith('\n') ? b : `${b}\n`);
  return {
    cert: blocks.filter((b) => b.includes('CERTIFICATE')).map(withNewline).join(''),
    key: withNewline(blocks.find((b) => b.includes('PRIVATE KEY')) ?? ''),
  };
}

/**
 * Reads a file holding a key and its certificate: undefined when it is missing, when they do not
 * parse, or when the key is not the certificate's.
 */
export function readPair(file: string): StoredPair | undefined {
  try {
    const { cert, key } = splitPem(readFileSync(file, 'utf8'));
    return parsePair({ cert: Buffer.from(cert), key: Buffer.from(key) });
  } catch {
    return undefined;
  }
}

/** The pair with its validity; throws when it does not parse or the key does not match. */
export function parsePair(pair: KeyAndCertificate): StoredPair {
  const x = new X509Certificate(pair.cert);
  if (!x.checkPrivateKey(createPrivateKey(pair.key))) throw new Error('the private key is not the certificate\'s');
  return { ...pair, notBefore: Date.parse(x.validFrom), notAfter: Date.parse(x.validTo) };
}

/** The UTC time as the file names carry it: 2026-12-02-15-04-05. */
function stamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace(/[T:]/g, '-');
}

export class CertificateStore {
  constructor(
    readonly dir: string,
    readonly prefix: string,
  ) {}

  /** The path that always names the pair in use (a symlink). */
  get currentPath(): string {
    return join(this.dir, `${this.prefix}-current.pem`);
  }

  /** The pair in use, if there is one that parses (expired or not: the caller judges). */
  current(): StoredPair | undefined {
    return readPair(this.currentPath);
  }

  /** Writes a new pair beside the others and makes it the current one; returns its file. */
  update(pair: KeyAndCertificate, nowMs: number): string {
    parsePair(pair);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const file = resolve(this.dir, `${this.prefix}-${stamp(nowMs)}.pem`);
    const fd = openSync(file, 'w', 0o600);
    try {
      writeSync(fd, Buffer.concat([Buffer.from(splitPem(pair.cert.toString('utf8')).cert), Buffer.from(splitPem(pair.key.toString('utf8')).key)]));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // An existing file keeps its mode through open(): make sure of it.
    chmodSync(file, 0o600);
    const updated = join(this.dir, `${this.prefix}-updated.pem`);
    rmSync(updated, { force: true });
    symlinkSync(file, updated);
    // rename() replaces the old link (or the plain file an older nodelet kept there) at once.
    renameSync(updated, this.currentPath);
    return file;
  }
}
