// Real registries for tests: Debian's docker-registry (distribution 2.8) on 127.0.0.1 with TLS
// from a CA made here, with htpasswd or token auth (the token server is ours, below), or none.
// The pusher and the proxies that misbehave on purpose are in registry-push.ts and
// registry-proxy.ts, re-exported here.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createPrivateKey, randomBytes, sign, X509Certificate } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { freePort } from '../support/cluster.js';

export * from './registry-push.js';
export * from './registry-proxy.js';

export interface Certs {
  caFile: string;
  caKey: string;
  /** The servers' certificate (IP:127.0.0.1), signed by the CA. */
  certFile: string;
  keyFile: string;
  /** The token signer's self-signed certificate (the registry's rootcertbundle) and key. */
  signCertFile: string;
  signKeyFile: string;
}

const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** A CA, a server certificate for IP:127.0.0.1 from it, and a token signing certificate (made once per dir). */
export function makeCerts(dir: string): Certs {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  const c: Certs = { caFile: f('ca.crt'), caKey: f('ca.key'), certFile: f('server.crt'), keyFile: f('server.key'), signCertFile: f('token.crt'), signKeyFile: f('token.key') };
  if (existsSync(c.signKeyFile)) return c;
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=nodelet-test-registry-ca', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', c.caKey, '-out', c.caFile);
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', c.keyFile, '-out', f('server.csr'));
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n');
  openssl('x509', '-req', '-in', f('server.csr'), '-CA', c.caFile, '-CAkey', c.caKey, '-CAcreateserial', '-days', '2', '-extfile', f('server.ext'), '-out', c.certFile);
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=nodelet-test-token-signer', '-keyout', c.signKeyFile, '-out', c.signCertFile);
  return c;
}

/** Puts the CA where a store's certs.d looks for each of `hosts` (`<dir>/<host:port>/ca.crt`). */
export function trustIn(certsDir: string, caFile: string, ...hosts: string[]): void {
  for (const h of hosts) {
    mkdirSync(join(certsDir, h), { recursive: true });
    writeFileSync(join(certsDir, h, 'ca.crt'), readFileSync(caFile));
  }
}


const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export interface TokenRequest {
  method: string;
  user: string;
  scopes: string[];
  grant?: string;
}

export interface TokenServer {
  url: string;
  requests: TokenRequest[];
  stop(): Promise<void>;
}

export interface TokenServerOptions {
  certs: Certs;
  service: string;
  issuer: string;
  users: Record<string, string>;
  /** OAuth2 refresh tokens (CRI's identity_token) -> user. */
  refreshTokens?: Record<string, string>;
  /** Which field carries the token in answers to GET (both are in the spec). */
  field?: 'token' | 'access_token';
  lifetimeSec?: number;
}

/**
 * A token server as Docker Hub's behaves: known credentials get the scopes asked for, wrong ones
 * a 401, none an anonymous token with no access (so the registry answers insufficient_scope).
 * Tokens are JWTs signed RS256, the signer's certificate in the header's x5c.
 */
export async function startTokenServer(o: TokenServerOptions): Promise<TokenServer> {
  const key = createPrivateKey(readFileSync(o.certs.signKeyFile));
  const x5c = [new X509Certificate(readFileSync(o.certs.signCertFile)).raw.toString('base64')];
  const requests: TokenRequest[] = [];
  const jwt = (user: string, scopes: string[]) => {
    const now = Math.floor(Date.now() / 1000);
    const access = user
      ? scopes.map((s) => {
          const first = s.indexOf(':');
          const last = s.lastIndexOf(':');
          return { type: s.slice(0, first), name: s.slice(first + 1, last), actions: s.slice(last + 1).split(',') };
        })
      : [];
    const claims = { iss: o.issuer, sub: user, aud: o.service, exp: now + (o.lifetimeSec ?? 300), nbf: now - 10, iat: now, jti: randomBytes(8).toString('hex'), access };
    const input = `${b64url(JSON.stringify({ typ: 'JWT', alg: 'RS256', x5c }))}.${b64url(JSON.stringify(claims))}`;
    return `${input}.${b64url(sign('sha256', Buffer.from(input), key))}`;
  };
  const server = https.createServer({ key: readFileSync(o.certs.keyFile), cert: readFileSync(o.certs.certFile) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'https://x');
      const answer = (status: number, body: object) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'POST') {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        const user = o.refreshTokens?.[form.get('refresh_token') ?? ''];
        requests.push({ method: 'POST', user: user ?? '', scopes: (form.get('scope') ?? '').split(' ').filter(Boolean), grant: form.get('grant_type') ?? '' });
        if (form.get('grant_type') !== 'refresh_token' || !user || form.get('service') !== o.service) return answer(401, { error: 'invalid_grant', error_description: 'unknown refresh token' });
        return answer(200, { access_token: jwt(user, (form.get('scope') ?? '').split(' ').filter(Boolean)), expires_in: o.lifetimeSec ?? 300 });
      }
      const scopes = url.searchParams.getAll('scope');
      const authz = req.headers.authorization ?? '';
      let user = '';
      if (authz.startsWith('Basic ')) {
        const [u, ...p] = Buffer.from(authz.slice(6), 'base64').toString('utf8').split(':');
        if (o.users[u!] === undefined || o.users[u!] !== p.join(':')) {
          requests.push({ method: 'GET', user: `!${u}`, scopes });
          return answer(401, { details: 'incorrect username or password' });
        }
        user = u!;
      }
      requests.push({ method: 'GET', user, scopes });
      if (url.searchParams.get('service') !== o.service) return answer(400, { details: `unknown service ${url.searchParams.get('service')}` });
      const token = jwt(user, scopes);
      answer(200, o.field === 'access_token' ? { access_token: token, expires_in: o.lifetimeSec ?? 300 } : { token, expires_in: o.lifetimeSec ?? 300, issued_at: new Date().toISOString() });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `https://127.0.0.1:${port}/token`,
    requests,
    stop: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export interface Registry {
  /** `127.0.0.1:<port>` */
  host: string;
  caFile: string;
  certs: Certs;
  /** The filesystem driver's rootdirectory. */
  storage: string;
  tokenServer?: TokenServer;
  /** The registry's output, access log included. */
  log(): string;
  /** "GET /v2/…" for each request the access log shows. */
  requests(): string[];
  /** Where the registry keeps a blob's bytes. */
  blobData(digest: string): string;
  stop(): Promise<void>;
}

export interface RegistryOptions {
  auth: 'htpasswd' | 'token' | 'none';
  dir: string;
  /** user -> password (htpasswd and token); default {user: 'pass'}. */
  users?: Record<string, string>;
  certs?: Certs;
  token?: Partial<Pick<TokenServerOptions, 'refreshTokens' | 'field' | 'lifetimeSec'>>;
}

/** Starts `docker-registry serve` on a free port of 127.0.0.1, TLS on, and waits until it answers. */
export async function startRegistry(o: RegistryOptions): Promise<Registry> {
  mkdirSync(o.dir, { recursive: true });
  const certs = o.certs ?? makeCerts(join(o.dir, 'certs'));
  const users = o.users ?? { user: 'pass' };
  const storage = join(o.dir, 'storage');
  mkdirSync(storage, { recursive: true });
  const port = await freePort();
  let auth = '';
  let tokenServer: TokenServer | undefined;
  if (o.auth === 'htpasswd') {
    const file = join(o.dir, 'htpasswd');
    writeFileSync(file, Object.entries(users).map(([u, p]) => execFileSync('htpasswd', ['-Bbn', u, p], { encoding: 'utf8' }).trim()).join('\n') + '\n');
    auth = `auth:\n  htpasswd: {realm: nodelet-test, path: ${file}}\n`;
  } else if (o.auth === 'token') {
    tokenServer = await startTokenServer({ certs, service: 'nodelet-test-registry', issuer: 'nodelet-test-issuer', users, ...o.token });
    auth = `auth:\n  token: {realm: "${tokenServer.url}", service: nodelet-test-registry, issuer: nodelet-test-issuer, rootcertbundle: ${certs.signCertFile}}\n`;
  }
  const config = join(o.dir, 'config.yml');
  writeFileSync(
    config,
    `version: 0.1\nlog: {level: info, accesslog: {disabled: false}}\nstorage:\n  filesystem: {rootdirectory: ${storage}}\n  delete: {enabled: true}\n  maintenance: {uploadpurging: {enabled: false}}\n` +
      `http:\n  addr: 127.0.0.1:${port}\n  secret: ${randomBytes(8).toString('hex')}\n  tls: {certificate: ${certs.certFile}, key: ${certs.keyFile}}\n${auth}`,
  );
  const logFile = join(o.dir, 'registry.log');
  const out = openSync(logFile, 'a');
  const child: ChildProcess = spawn('/usr/bin/docker-registry', ['serve', config], { stdio: ['ignore', out, out] });
  closeSync(out);
  let exited = false;
  child.on('exit', () => (exited = true));
  const log = () => readFileSync(logFile, 'utf8');
  const ca = readFileSync(certs.caFile);
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (exited) throw new Error(`docker-registry exited:\n${log()}`);
    const status = await new Promise<number>((resolve) => {
      const req = https.get({ host: '127.0.0.1', port, path: '/v2/', ca, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', () => resolve(0));
    });
    if (status === 200 || status === 401) break;
    if (Date.now() > deadline) throw new Error(`docker-registry did not answer on 127.0.0.1:${port}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    host: `127.0.0.1:${port}`,
    caFile: certs.caFile,
    certs,
    storage,
    ...(tokenServer ? { tokenServer } : {}),
    log,
    requests: () => [...log().matchAll(/"(GET|HEAD|PUT|POST|PATCH|DELETE) (\S+) HTTP\/[\d.]+"/g)].map((m) => `${m[1]} ${m[2]}`),
    blobData: (digest) => join(storage, 'docker/registry/v2/blobs/sha256', digest.slice(7, 9), digest.slice(7), 'data'),
    stop: async () => {
      // By its PID only: this registry, not others that may run on the machine.
      if (!exited && child.pid) {
        const gone = new Promise((r) => child.once('exit', r));
        process.kill(child.pid, 'SIGTERM');
        await gone;
      }
      await tokenServer?.stop();
    },
  };
}
