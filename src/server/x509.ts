// The X.509 documents a node makes itself, in DER as RFC 2986 and RFC 5280 lay them out:
// certificate signing requests (subject O=system:nodes, CN=system:node:<name>; a serving one names
// the node's addresses as subjectAltName, a client one names none), and certificates signed by a
// key of ours (the node API's self-signed one, and test signers). Keys are ECDSA P-256, signed with
// SHA-256. Reading a request is csr-request.ts's (src/approver).
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
  clientAuth: '1.3.6.1.5.5.7.3.2',
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

/** A PKCS#10 request for `subject`, with `sans` (if any) in an extensionRequest attribute, as PEM. */
export function certificateRequest(key: KeyPair, subject: Subject, sans: string[]): string {
  const spki = key.publicKey.export({ type: 'spki', format: 'der' });
  // No names, no attribute: the kube-apiserver-client-kubelet signer refuses any subjectAltName.
  const attributes = sans.length ? [seq(oid(OID.extensionRequest), set(seq(extension(OID.subjectAltName, altNames(sans)))))] : [];
  const info = seq(integer(0), name(subject), spki, der(0xa0, ...attributes));
  return pem('CERTIFICATE REQUEST', signed(info, key.privateKey));
}

/** One DER element of `buf` at `at`: where its contents start and where it ends. */
export function element(buf: Buffer, at: number): { tag: number; start: number; end: number } {
  if (at + 2 > buf.length) throw new Error('truncated DER');
  const tag = buf[at]!;
  let n = buf[at + 1]!;
  let start = at + 2;
  if (n & 0x80) {
    const bytes = n & 0x7f;
    // Four length bytes say 4 GiB: anything longer is not a request anyone sends.
    if (bytes === 0 || bytes > 4 || start + bytes > buf.length) throw new Error('bad DER length');
    n = 0;
    for (let i = 0; i < bytes; i++) n = n * 256 + buf[start + i]!;
    start += bytes;
  }
  if (start + n > buf.length) throw new Error('truncated DER');
  return { tag, start, end: start + n };
}

/** The public key a PKCS#10 request (PEM) asks a certificate for. */
export function requestPublicKey(csrPem: string): KeyObject {
  const body = Buffer.from(csrPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const outer = element(body, 0);
  const info = element(body, outer.start);
  const version = element(body, info.start);
  const subject = element(body, version.end);
  const spki = element(body, subject.end);
  if (outer.tag !== 0x30 || info.tag !== 0x30 || spki.tag !== 0x30) throw new Error('not a certificate request');
  return createPublicKey({ key: body.subarray(subject.end, spki.end), format: 'der', type: 'spki' });
}

/** Whether two keys are the same public key. */
export function samePublicKey(a: KeyObject, b: KeyObject): boolean {
  const der = (k: KeyObject) => (k.type === 'private' ? createPublicKey(k) : k).export({ type: 'spki', format: 'der' });
  return der(a).equals(der(b));
}

export interface CertificateSpec {
  subject: Subject;
  /** The key the certificate is for. */
  publicKey: KeyObject;
  /** Who signs it: its key and its subject (the same as `subject` for a self-signed one). */
  issuer: { key: KeyObject; subject: Subject };
  sans: string[];
  notBefore: Date;
  notAfter: Date;
  usage: 'server' | 'client';
}

/** A certificate as PEM, signed by `spec.issuer.key` (an ECDSA P-256 key). */
export function signCertificate(spec: CertificateSpec): string {
  const spki = spec.publicKey.export({ type: 'spki', format: 'der' });
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  const exts = seq(
    // digitalSignature (bit 0) only: an ECDSA key signs its handshakes.
    extension(OID.keyUsage, der(0x03, Buffer.from([7, 0x80])), true),
    extension(OID.extKeyUsage, seq(oid(spec.usage === 'server' ? OID.serverAuth : OID.clientAuth))),
    extension(OID.basicConstraints, seq(), true),
    ...(spec.sans.length ? [extension(OID.subjectAltName, altNames(spec.sans))] : []),
  );
  const tbs = seq(der(0xa0, integer(2)), integer(serial), seq(oid(OID.ecdsaSha256)), name(spec.issuer.subject), seq(time(spec.notBefore), time(spec.notAfter)), name(spec.subject), spki, der(0xa3, exts));
  return pem('CERTIFICATE', signed(tbs, spec.issuer.key));
}

/** A self-signed serving certificate for `sans`, valid from now for `days`. */
export function selfSignedCertificate(key: KeyPair, subject: Subject, sans: string[], now: Date, days: number): string {
  return signCertificate({
    subject,
    publicKey: key.publicKey,
    issuer: { key: key.privateKey, subject },
    sans,
    // A minute back, for clocks a little behind ours.
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + days * 86_400_000),
    usage: 'server',
  });
}
