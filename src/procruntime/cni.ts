// CNI for the process runtime, as containerd's CRI plugin uses it (through libcni): the first
// network configuration of the configuration directory, each of its plugins run in turn on ADD
// with the previous one's result, in reverse on DEL with the cached result, plus the loopback
// plugin for `lo`. Plugins are the machine's binaries (containernetworking-plugins).
import { spawn } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface NetworkList {
  cniVersion: string;
  name: string;
  plugins: Array<Record<string, unknown> & { type: string }>;
}

/** The network configuration CNI would use: the first valid file by name (.conf, .conflist, .json), as libcni orders them. */
export function loadNetworkList(confDir: string): { list: NetworkList } | { error: string } {
  let files: string[];
  try {
    files = readdirSync(confDir).filter((f) => /\.(conf|conflist|json)$/.test(f)).sort();
  } catch {
    files = [];
  }
  if (files.length === 0) return { error: `no network config found in ${confDir}` };
  const errors: string[] = [];
  for (const f of files) {
    try {
      const raw = JSON.parse(readFileSync(join(confDir, f), 'utf8')) as Record<string, unknown>;
      const list = f.endsWith('.conflist') || Array.isArray(raw.plugins) ? toList(raw) : toList({ cniVersion: raw.cniVersion, name: raw.name, plugins: [raw] });
      return { list };
    } catch (err) {
      errors.push(`${f}: ${(err as Error).message}`);
    }
  }
  return { error: `no valid network config in ${confDir} (${errors.join('; ')})` };
}

function toList(raw: Record<string, unknown>): NetworkList {
  if (typeof raw.name !== 'string' || !raw.name) throw new Error('no network name');
  const plugins = raw.plugins as NetworkList['plugins'];
  if (!Array.isArray(plugins) || plugins.length === 0) throw new Error('no plugins');
  for (const p of plugins) if (!p || typeof p.type !== 'string' || !p.type) throw new Error('a plugin without a type');
  return { cniVersion: typeof raw.cniVersion === 'string' ? raw.cniVersion : '0.4.0', name: raw.name, plugins };
}

/** The first directory of `binDirs` holding the plugin, or undefined. */
export function findPlugin(binDirs: string[], type: string): string | undefined {
  if (type.includes('/')) return undefined;
  for (const d of binDirs) {
    try {
      accessSync(join(d, type), constants.X_OK);
      return join(d, type);
    } catch {
      /* not here */
    }
  }
  return undefined;
}

export interface Attachment {
  containerId: string;
  netns: string;
  ifname: string;
  /** K8S_POD_NAMESPACE=...;K8S_POD_NAME=... as CNI_ARGS. */
  args: string;
  /** What plugins that declare the capability get as runtimeConfig (portMappings, ...). */
  capabilities: Record<string, unknown>;
}

export interface CniResult {
  cniVersion?: string;
  interfaces?: Array<{ name: string; sandbox?: string }>;
  ips?: Array<{ address: string; interface?: number; gateway?: string }>;
  [k: string]: unknown;
}

export type PluginRunner = (path: string, env: Record<string, string>, stdin: string) => Promise<{ code: number; stdout: string; stderr: string }>;

const runPlugin: PluginRunner = (path, env, stdin) =>
  new Promise((resolve, reject) => {
    const child = spawn(path, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
    child.stdin.end(stdin);
  });

/** A plugin that failed: its CNI error's message (and details), as libcni reports it. */
export class CniError extends Error {
  constructor(plugin: string, command: string, message: string) {
    super(`plugin type="${plugin}" failed (${command.toLowerCase()}): ${message}`);
    this.name = 'CniError';
  }
}

export class Cni {
  constructor(
    private readonly binDirs: string[],
    private readonly run: PluginRunner = runPlugin,
  ) {}

  /** Runs every plugin of the list on ADD, each given the previous result; the last result is the attachment's. */
  async add(list: NetworkList, a: Attachment): Promise<CniResult> {
    let prev: CniResult | undefined;
    for (const p of list.plugins) prev = await this.invoke('ADD', list, p, a, prev);
    return prev ?? {};
  }

  /** DEL in reverse order with the cached result (plugins must accept a netns that is gone). */
  async del(list: NetworkList, a: Attachment, cached: CniResult | undefined): Promise<void> {
    for (const p of [...list.plugins].reverse()) await this.invoke('DEL', list, p, a, cached);
  }

  private async invoke(command: 'ADD' | 'DEL', list: NetworkList, plugin: NetworkList['plugins'][number], a: Attachment, prev: CniResult | undefined): Promise<CniResult | undefined> {
    const path = findPlugin(this.binDirs, plugin.type);
    if (!path) throw new CniError(plugin.type, command, `failed to find plugin "${plugin.type}" in path [${this.binDirs.join(' ')}]`);
    const conf: Record<string, unknown> = { ...plugin, cniVersion: list.cniVersion, name: list.name };
    delete conf.capabilities;
    const wanted = (plugin.capabilities ?? {}) as Record<string, boolean>;
    const runtimeConfig = Object.fromEntries(Object.entries(a.capabilities).filter(([k]) => wanted[k]));
    if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
    if (prev) conf.prevResult = prev;
    const env = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      CNI_COMMAND: command,
      CNI_CONTAINERID: a.containerId,
      CNI_NETNS: a.netns,
      CNI_IFNAME: a.ifname,
      CNI_ARGS: a.args,
      CNI_PATH: this.binDirs.join(':'),
    };
    const r = await this.run(path, env, JSON.stringify(conf));
    if (r.code !== 0) {
      let msg = r.stderr.trim() || `exit ${r.code}`;
      try {
        const e = JSON.parse(r.stdout) as { msg?: string; details?: string };
        if (e.msg) msg = e.details ? `${e.msg}: ${e.details}` : e.msg;
      } catch {
        /* not a CNI error object */
      }
      throw new CniError(plugin.type, command, msg);
    }
    if (command === 'DEL') return undefined;
    try {
      return JSON.parse(r.stdout) as CniResult;
    } catch {
      throw new CniError(plugin.type, command, `unreadable result: ${r.stdout.slice(0, 200)}`);
    }
  }
}

/** The pod's IPs in a result: the addresses of the interface inside its namespace (IPv4 first, as the kubelet sorts). */
export function podIPs(result: CniResult): string[] {
  const inSandbox = new Set((result.interfaces ?? []).flatMap((ifc, i) => (ifc.sandbox ? [i] : [])));
  const ips = (result.ips ?? []).filter((ip) => ip.interface === undefined || inSandbox.size === 0 || inSandbox.has(ip.interface)).map((ip) => ip.address.split('/')[0]!);
  return [...ips.filter((ip) => !ip.includes(':')), ...ips.filter((ip) => ip.includes(':'))];
}
