// The two X.509 documents the node API needs to make itself, in DER as RFC 2986 and RFC 5280
// lay them out: a certificate signing request for the kubelet-serving signer (subject
// O=system:nodes, CN=system:node:<name>, the node's names as subjectAltName), and a self-signed
// serving certificate for when no signer is asked. Keys are ECDSA P-256, signed with SHA-256.
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One DER element: tag, length, contents. */
export function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
}

const seq = (...p: Buffer[]) => der(0x30, ...p);
const set = (...p: Buffer[]) => der(0x31, ...p);

export function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const n of rest) {
    const groups: number[] = [];
    let v = n;
    do {
      groups.unshift(v & 0x7f);
      v = Math.floor(v / 128);
    } while (v > 0);
    for (let i = 0; i < groups.length - 1; i++) groups[i]! |= 0x80;
    out.push(...groups);
  }
  return der(0x06, Buffer.from(out));
}

function integer(value: Buffer | number): Buffer {
  let b = typeof value === 'number' ? Buffer.from([value]) : value;
  // DER wants the shortest form: no leading zero bytes (a random serial may start with some;
  // OpenSSL refuses such a certificate with "illegal padding")...
  let start = 0;
  while (start < b.length - 1 && b[start] === 0 && !(b[start + 1]! & 0x80)) start++;
  b = b.subarray(start);
  // ...and positive: a leading 0x00 when the top bit is set.
  if (b[0]! & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return der(0x02, b);
}

const utf8 = (s: string) => der(0x0c, Buffer.from(s, 'utf8'));

/** X.509 time: UTCTime before 2050, GeneralizedTime after. */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(`${iso.slice(2)}Z`)) : der(0x18, Buffer.from(`${iso}Z`));
}

const OID = {
  O: '2.5.4.10',
  CN: '2.5.4.3',
  ecdsaSha256: '1.2.840.10045.4.3.2',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};

export interface Subject {
  organization?: string;
  commonName: string;
}

function name(s: Subject): Buffer {
  const rdns: Buffer[] = [];
  if (s.organization) rdns.push(set(seq(oid(OID.O), utf8(s.organization))));
  rdns.push(set(seq(oid(OID.CN), utf8(s.commonName))));
  return seq(...rdns);
}

/** GeneralNames of DNS names and IPv4/IPv6 addresses. */
function altNames(names: string[]): Buffer {
  return seq(
    ...names.map((n) => {
      const v = isIP(n);
      if (v === 4) return der(0x87, Buffer.from(n.split('.').map(Number)));
      if (v === 6) return der(0x87, ipv6Bytes(n));
      return der(0x82, Buffer.from(n, 'ascii'));
    }),
  );
}

function ipv6Bytes(ip: string): Buffer {
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

function extension(id: string, value: Buffer, critical = false): Buffer {
  return seq(oid(id), ...(critical ? [der(0x01, Buffer.from([0xff]))] : []), der(0x04, value));
}

function signed(tbs: Buffer, key: KeyObject): Buffer {
  const signature = sign('sha256', tbs, key);
  return seq(tbs, seq(oid(OID.ecdsaSha256)), der(0x03, Buffer.from([0]), signature));
}

const pem = (label: string, body: Buffer) => `-----BEGIN ${label}-----\n${body.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END ${label}-----\n`;

export interface KeyPair {
  privateKeyPem: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

export function newKey(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { privateKey, publicKey, privateKeyPem: privateKey.export({ type: 'sec1', format: 'pem' }).toString() };
}

export function keyFromPem(text: string): KeyPair {
  const privateKey = createPrivateKey(text);
  return { privateKey, publicKey: createPublicKey(privateKey), privateKeyPem: text };
}

/** A PKCS#10 request for `subject` with `sans` in an extensionRequest attribute, as PEM. */
export function certificateRequest(key: KeyPair, subject: Subject, sans: string[]): string {
  const spki = key.publicKey.export({ type: 'spki', format: 'der' });
  const extReq = seq(oid(OID.extensionRequest), set(seq(extension(OID.subjectAltName, altNames(sans)))));
  const info = seq(integer(0), name(subject), spki, der(0xa0, extReq));
  return pem('CERTIFICATE REQUEST', signed(info, key.privateKey));
}

/** A self-signed serving certificate for `sans`, valid from now for `days`. */
export function selfSignedCertificate(key: KeyPair, subject: Subject, sans: string[], now: Date, days: number): string {
  const spki = key.publicKey.export({ type: 'spki', format: 'der' });
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  const notAfter = new Date(now.getTime() + days * 86_400_000);
  const exts = seq(
    // digitalSignature (bit 0) only: an ECDSA server key signs its handshakes.
    extension(OID.keyUsage, der(0x03, Buffer.from([7, 0x80])), true),
    extension(OID.extKeyUsage, seq(oid(OID.serverAuth))),
    extension(OID.basicConstraints, seq(), true),
    extension(OID.subjectAltName, altNames(sans)),
  );
  const tbs = seq(der(0xa0, integer(2)), integer(serial), seq(oid(OID.ecdsaSha256)), name(subject), seq(time(new Date(now.getTime() - 60_000)), time(notAfter)), name(subject), spki, der(0xa3, exts));
  return pem('CERTIFICATE', signed(tbs, key.privateKey));
}
