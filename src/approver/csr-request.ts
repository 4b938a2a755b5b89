// A PKCS#10 certificate request (RFC 2986) read as an approver must read it before saying yes:
// the subject's organizations and common names, every subjectAltName, and whether the request is
// signed by the key it asks a certificate for (proof that the requester holds that key). What Go's
// x509.ParseCertificateRequest gives the controller-manager's approver, for the fields it checks.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { element } from '../server/x509.js';

export interface CertificateRequestInfo {
  organizations: string[];
  commonNames: string[];
  dnsNames: string[];
  emailAddresses: string[];
  ipAddresses: string[];
  uris: string[];
  /** subjectAltNames of any other kind (otherName, directoryName ...), counted. */
  otherNames: number;
  publicKey: KeyObject;
  /** The request's signature verifies with its own public key. */
  signatureValid: boolean;
}

export class CsrParseError extends Error {}

const OIDS = {
  O: '2.5.4.10',
  CN: '2.5.4.3',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
};

/** The signature algorithms a request may be signed with, and the digest each verifies with. */
const SIGNATURE_DIGEST: Record<string, string | null> = {
  '1.2.840.10045.4.3.2': 'sha256', // ecdsa-with-SHA256
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.2.840.113549.1.1.11': 'sha256', // sha256WithRSAEncryption
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.3.101.112': null, // Ed25519
};

function oidString(b: Buffer): string {
  if (b.length === 0) throw new CsrParseError('empty object identifier');
  const out = [Math.floor(b[0]! / 40), b[0]! % 40];
  let v = 0;
  for (let i = 1; i < b.length; i++) {
    v = v * 128 + (b[i]! & 0x7f);
    if (!(b[i]! & 0x80)) {
      out.push(v);
      v = 0;
    }
  }
  return out.join('.');
}

/** The elements directly inside a constructed element. */
function children(buf: Buffer, parent: { start: number; end: number }): Array<{ tag: number; start: number; end: number; at: number }> {
  const out = [];
  for (let at = parent.start; at < parent.end; ) {
    const e = element(buf, at);
    if (e.end > parent.end) throw new CsrParseError('element overruns its parent');
    out.push({ ...e, at });
    at = e.end;
  }
  return out;
}

function ipString(b: Buffer): string {
  if (b.length === 4) return [...b].join('.');
  if (b.length === 16) return Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2).toString(16)).join(':');
  return `<${b.length}-byte address>`;
}

/** Reads a request in PEM ("CERTIFICATE REQUEST") or base64 of PEM, as a CSR's spec.request holds it. */
export function readCertificateRequest(pemText: string): CertificateRequestInfo {
  const m = /-----BEGIN (NEW )?CERTIFICATE REQUEST-----([\s\S]*?)-----END (NEW )?CERTIFICATE REQUEST-----/.exec(pemText);
  if (!m) throw new CsrParseError('no PEM block of type CERTIFICATE REQUEST');
  const body = Buffer.from(m[2]!.replace(/\s+/g, ''), 'base64');
  try {
    const outer = element(body, 0);
    const [info, algorithm, signature] = children(body, outer);
    if (outer.tag !== 0x30 || info?.tag !== 0x30 || algorithm?.tag !== 0x30 || signature?.tag !== 0x03) throw new CsrParseError('not a certificate request');
    const [version, subject, spki, attributes] = children(body, info);
    if (version?.tag !== 0x02 || subject?.tag !== 0x30 || spki?.tag !== 0x30) throw new CsrParseError('not a certificate request');
    const out: CertificateRequestInfo = {
      organizations: [],
      commonNames: [],
      dnsNames: [],
      emailAddresses: [],
      ipAddresses: [],
      uris: [],
      otherNames: 0,
      publicKey: createPublicKey({ key: body.subarray(spki.at, spki.end), format: 'der', type: 'spki' }),
      signatureValid: false,
    };
    for (const rdn of children(body, subject)) {
      for (const atv of children(body, rdn)) {
        const [type, value] = children(body, atv);
        if (type?.tag !== 0x06 || !value) throw new CsrParseError('bad subject attribute');
        const id = oidString(body.subarray(type.start, type.end));
        const text = body.subarray(value.start, value.end).toString(value.tag === 0x1e ? 'utf16le' : 'utf8');
        if (id === OIDS.O) out.organizations.push(text);
        if (id === OIDS.CN) out.commonNames.push(text);
      }
    }
    if (attributes && attributes.tag === 0xa0) {
      for (const attr of children(body, attributes)) {
        const [type, values] = children(body, attr);
        if (type?.tag !== 0x06 || values?.tag !== 0x31) throw new CsrParseError('bad request attribute');
        if (oidString(body.subarray(type.start, type.end)) !== OIDS.extensionRequest) continue;
        for (const extensions of children(body, values)) {
          for (const ext of children(body, extensions)) {
            const parts = children(body, ext);
            const id = parts[0];
            const value = parts[parts.length - 1];
            if (id?.tag !== 0x06 || value?.tag !== 0x04) throw new CsrParseError('bad extension');
            if (oidString(body.subarray(id.start, id.end)) !== OIDS.subjectAltName) continue;
            const names = element(body, value.start);
            for (const n of children(body, names)) {
              const v = body.subarray(n.start, n.end);
              if (n.tag === 0x82) out.dnsNames.push(v.toString('ascii'));
              else if (n.tag === 0x81) out.emailAddresses.push(v.toString('ascii'));
              else if (n.tag === 0x86) out.uris.push(v.toString('ascii'));
              else if (n.tag === 0x87) out.ipAddresses.push(ipString(v));
              else out.otherNames++;
            }
          }
        }
      }
    }
    const [algId] = children(body, algorithm);
    if (algId?.tag !== 0x06) throw new CsrParseError('bad signature algorithm');
    const alg = oidString(body.subarray(algId.start, algId.end));
    if (!(alg in SIGNATURE_DIGEST)) throw new CsrParseError(`unsupported signature algorithm ${alg}`);
    // A BIT STRING's first byte counts unused bits: a signature has none.
    const sig = body.subarray(signature.start + 1, signature.end);
    try {
      out.signatureValid = verify(SIGNATURE_DIGEST[alg] ?? null, body.subarray(info.at, info.end), out.publicKey, sig);
    } catch {
      out.signatureValid = false;
    }
    return out;
  } catch (err) {
    if (err instanceof CsrParseError) throw err;
    throw new CsrParseError((err as Error).message);
  }
}
