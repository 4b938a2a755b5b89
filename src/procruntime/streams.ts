// CRI Exec, Attach and PortForward of the process runtime, served by its own streaming server:
// exec runs the command as ExecSync does (the container's namespaces and user), with a
// pseudo-terminal from util-linux's script when a tty is asked for (resized with stty on its
// slave side); attach follows the container's output files and writes to its stdin FIFO;
// port-forward connects to the port on localhost of the pod's network namespace, as containerd
// does, through the launcher's small relay started in that namespace (the host's network under proot).
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, createWriteStream, readdirSync, readlinkSync, watch } from 'node:fs';
import { open } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import { Duplex, type Writable } from 'node:stream';
import type { ExecOutcome, StreamIO, StreamOptions } from '../cri/streaming/remotecommand.js';
import { StreamingServer } from '../cri/streaming/server.js';
import { InvalidArgumentError } from './errors.js';
import { closePlan, endExec, planFds } from './exec.js';
import { launcherPath } from './isolation.js';
import type { ProcessRuntime } from './runtime.js';

function dialHere(port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    sock.once('connect', () => resolve(sock));
    sock.once('error', reject);
  });
}

/**
 * A connection to localhost:port inside a network namespace, as a stream: nodelet-launch --dial
 * connects there (its first byte says so; a failure is its line on stderr) and copies both ways.
 */
function dialInNetns(netns: string, port: number, sandboxId: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const child = spawn(launcherPath(), ['--dial', netns, String(port), sandboxId], { stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    let stream: Duplex | undefined;
    child.stderr.on('data', (b: Buffer) => (err += b.toString('utf8')));
    child.once('error', reject);
    child.stdin.on('error', () => undefined);
    child.once('close', () => {
      if (!stream) reject(new Error(err.trim() || `dial tcp4 127.0.0.1:${port}: the relay ended`));
    });
    child.stdout.on('data', (b: Buffer) => {
      if (!stream) {
        // The relay's first byte says it is connected; what follows is the pod's.
        stream = new Duplex({
          read: () => void child.stdout.resume(),
          write: (chunk: Buffer, _enc, cb) => void child.stdin.write(chunk, cb),
          final: (cb) => {
            child.stdin.end();
            cb();
          },
          destroy: (e, cb) => {
            child.kill();
            cb(e);
          },
        });
        child.stdout.on('end', () => stream!.push(null));
        resolve(stream);
        b = b.subarray(1);
        if (b.length === 0) return;
      }
      if (!stream.push(b)) child.stdout.pause();
    });
  });
}

const shellQuote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;

/** The pseudo-terminal a process runs on, once it has one (/proc/PID/fd/0 of script's child). */
function ptyOf(scriptPid: number): string | undefined {
  try {
    for (const task of readdirSync(`/proc/${scriptPid}/task`)) {
      const children = spawnSync('cat', [`/proc/${scriptPid}/task/${task}/children`], { encoding: 'utf8' }).stdout.trim().split(/\s+/).filter(Boolean);
      for (const child of children) {
        const tty = readlinkSync(`/proc/${child}/fd/0`);
        if (tty.startsWith('/dev/pts/')) return tty;
      }
    }
  } catch {
    /* not there yet, or gone */
  }
  return undefined;
}

async function execIn(runtime: ProcessRuntime, id: string, cmd: string[], io: StreamIO): Promise<ExecOutcome> {
  const plan = runtime.prepareExec(id, cmd);
  const { argv, env, missing } = plan;
  if (missing) {
    closePlan(plan);
    // As runc: a command that is not there is a failure of the exec, not an exit code.
    return { error: `error executing command in container: failed to exec in container: ${missing}` };
  }
  // With a tty: script gives the command a pseudo-terminal and copies it to and from its pipes.
  const [file, args] = io.tty ? ['script', ['-qfec', argv.map(shellQuote).join(' '), '/dev/null']] : [argv[0]!, argv.slice(1)];
  const child = spawn(file, args, { stdio: [io.stdin ? 'pipe' : 'ignore', io.stdout ? 'pipe' : 'ignore', io.stderr && !io.tty ? 'pipe' : 'ignore', ...planFds(plan)], env: io.tty ? { ...env, SHELL: '/bin/sh' } : env, detached: true });
  closePlan(plan);
  if (io.stdin && child.stdin) {
    io.stdin.pipe(child.stdin);
    child.stdin.on('error', () => undefined);
  }
  if (io.stdout && child.stdout) child.stdout.pipe(io.stdout, { end: false });
  if (io.stderr && child.stderr) child.stderr.pipe(io.stderr, { end: false });
  if (io.tty) {
    io.onResize(({ width, height }) => {
      // The first size can come before the terminal exists: look for it a little while.
      const apply = (tries: number) => {
        const pty = child.pid ? ptyOf(child.pid) : undefined;
        if (pty) spawnSync('stty', ['-F', pty, 'rows', String(height), 'cols', String(width)]);
        else if (tries > 0) setTimeout(() => apply(tries - 1), 20);
      };
      apply(50);
    });
  }
  const onAbort = () => endExec(plan, child.pid!);
  io.signal.addEventListener('abort', onAbort, { once: true });
  return new Promise<ExecOutcome>((resolve) => {
    child.on('error', (e) => resolve({ error: e.message }));
    child.on('close', (code, sig) => {
      io.signal.removeEventListener('abort', onAbort);
      const exitCode = code ?? 128 + (sig ? (os.constants.signals[sig] ?? 9) : 9);
      resolve({ exitCode, message: `error executing command [${cmd.join(' ')}], exit code ${exitCode}` });
    });
  });
}

/** Copies what is appended to `path` from now on into `out`, until stopped. */
async function follow(path: string, out: Writable, stop: AbortSignal): Promise<void> {
  const fh = await open(path, 'r');
  let pos = (await fh.stat()).size;
  const buf = Buffer.alloc(64 * 1024);
  let wake: (() => void) | undefined;
  const w = watch(path, { persistent: false }, () => wake?.());
  try {
    while (!stop.aborted) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead > 0) {
        pos += bytesRead;
        if (!out.write(Buffer.from(buf.subarray(0, bytesRead)))) await new Promise((r) => out.once('drain', r));
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          stop.removeEventListener('abort', done);
          wake = undefined;
          resolve();
        };
        const t = setTimeout(done, 200);
        wake = done;
        stop.addEventListener('abort', done, { once: true });
      });
    }
  } finally {
    w.close();
    await fh.close();
  }
}

async function attachTo(runtime: ProcessRuntime, id: string, io: StreamIO): Promise<ExecOutcome> {
  const t = runtime.attachTarget(id);
  if (t.tty) return { error: 'error attaching to container: the process runtime runs no container on a terminal (tty: true), so there is none to attach to' };
  const done = new AbortController();
  io.signal.addEventListener('abort', () => done.abort(), { once: true });
  if (io.stdin) {
    if (t.stdin === undefined) io.stdin.resume();
    else {
      const w = createWriteStream('', { fd: t.stdin, autoClose: false });
      // The FIFO may go with its container: a failed write ends this attach's stdin, nothing more.
      w.on('error', () => io.stdin?.unpipe(w));
      io.stdin.pipe(w);
      // Closed only once what was written has been handed to the FIFO.
      w.on('finish', () => {
        if (t.stdinOnce) runtime.closeStdin(id);
      });
    }
  }
  // Attach lasts while the container runs.
  const watcher = setInterval(() => {
    if (!t.running()) done.abort();
  }, 200);
  try {
    await Promise.all([io.stdout ? follow(t.stdoutPath, io.stdout, done.signal) : undefined, io.stderr ? follow(t.stderrPath, io.stderr, done.signal) : undefined, new Promise<void>((r) => done.signal.addEventListener('abort', () => r(), { once: true }))]);
  } finally {
    clearInterval(watcher);
  }
  return { exitCode: 0 };
}

/** The process runtime's streaming server and the three CRI calls that hand out its URLs. */
export class ProcessStreams {
  private readonly server = new StreamingServer();

  constructor(private readonly runtime: ProcessRuntime) {}

  start(): Promise<void> {
    return this.server.start();
  }

  close(): Promise<void> {
    return this.server.close();
  }

  exec(req: { container_id: string; cmd: string[]; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): { url: string } {
    if (!req.cmd?.length) throw new InvalidArgumentError('cmd must not be empty');
    if (!req.stdin && !req.stdout && !req.stderr) throw new InvalidArgumentError('one of stdin, stdout, or stderr must be set');
    // Checked now, so that a stopped container is an error of the call and not of the stream.
    closePlan(this.runtime.prepareExec(req.container_id, req.cmd));
    const opts: StreamOptions = { stdin: req.stdin, stdout: req.stdout, stderr: req.stderr && !req.tty, tty: req.tty };
    return { url: this.server.register({ kind: 'exec', opts, run: (io) => execIn(this.runtime, req.container_id, req.cmd, io) }) };
  }

  attach(req: { container_id: string; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): { url: string } {
    if (!req.stdin && !req.stdout && !req.stderr) throw new InvalidArgumentError('one of stdin, stdout, and stderr must be set');
    this.runtime.attachTarget(req.container_id);
    const opts: StreamOptions = { stdin: req.stdin, stdout: req.stdout, stderr: req.stderr && !req.tty, tty: req.tty };
    return { url: this.server.register({ kind: 'attach', opts, run: (io) => attachTo(this.runtime, req.container_id, io) }) };
  }

  portForward(req: { pod_sandbox_id: string }): { url: string } {
    const s = this.runtime.readySandbox(req.pod_sandbox_id);
    return {
      url: this.server.register({
        kind: 'portforward',
        podName: s.name,
        podUID: s.uid,
        dial: (port) => (s.netns ? dialInNetns(s.netns, port, req.pod_sandbox_id) : dialHere(port)),
      }),
    };
  }
}
