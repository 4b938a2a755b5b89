// The process runtime's launcher on its own (dist/bin/nodelet-launch, as the runtime runs it):
// its report protocol, that no link in an image can aim a mount at the host, propagation both
// ways, exec seeing the container's mounts as they are, and the device filter of cgroup v2. A root
// filesystem of busybox's.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync, copyFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_DEVICE_RULES, launcherDeviceRule } from '../../src/procruntime/devices.js';
import { launcherPath } from '../../src/procruntime/isolation.js';

const work = mkdtempSync(join(tmpdir(), 'launcher-it-'));
const rootfs = join(work, 'rootfs');
for (const d of ['bin', 'etc', 'tmp']) mkdirSync(join(rootfs, d), { recursive: true });
copyFileSync('/bin/busybox', join(rootfs, 'bin/busybox'));
chmodSync(join(rootfs, 'bin/busybox'), 0o755);
for (const a of ['sh', 'cat', 'ls', 'mount', 'sleep', 'touch', 'grep', 'id', 'head']) symlinkSync('busybox', join(rootfs, 'bin', a));
// Links in the image that point at the host's directories.
symlinkSync('/etc', join(rootfs, 'hostetc'));
symlinkSync('../../../../../../tmp', join(rootfs, 'up'));
const mounts: string[] = [];
after(() => {
  for (const m of mounts.reverse()) spawnSync('umount', ['-l', m]);
  rmSync(work, { recursive: true, force: true });
});

const base = ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--hostname', 'box', '--rootfs', rootfs, '--env', 'PATH=/bin'];

/** Runs the launcher to its end: its status reports, output and exit code. */
function launch(args: string[], cmd: string[]): { status: string; out: string; err: string; code: number | null } {
  const statusFile = join(work, `status-${Math.random().toString(36).slice(2)}`);
  const fd = spawnSync('sh', ['-c', `exec 3>"$0"; exec "$@"`, statusFile, launcherPath(), '--status-fd', '3', ...args, '--', ...cmd], { encoding: 'utf8', timeout: 20_000 });
  return { status: existsSync(statusFile) ? readFileSync(statusFile, 'utf8') : '', out: fd.stdout, err: fd.stderr, code: fd.status };
}

test('the monitor reports the PID once the command runs and its exit code; a command that cannot run is an error, not an exit', () => {
  const ok = launch(base, ['sh', '-c', 'echo $$; exit 7']);
  assert.equal(ok.code, 7);
  assert.equal(ok.out.trim(), '1', 'PID 1 of its own PID namespace');
  assert.match(ok.status, /^\{"child-pid": \d+\}\n\{"exit-code": 7\}\n$/);
  // Not PID 1 of a namespace (which no signal from inside kills): the node's PID namespace.
  const killed = launch(base.filter((a) => a !== '--unshare-pid'), ['sh', '-c', 'kill -9 $$']);
  assert.match(killed.status, /"exit-code": 137/);
  const missing = launch(base, ['/bin/nosuch']);
  assert.match(missing.status, /^\{"error": "exec \/bin\/nosuch: No such file or directory"\}\n$/);
  assert.doesNotMatch(missing.status, /child-pid/);
  const bad = launch([...base, '--bind', join(work, 'not-there'), '/x', 'rw'], ['true']);
  assert.match(bad.status, /"error": "the mount source .*not-there: No such file or directory"/);
});

test('no link in the image takes a mount, a masked path or a mount point out of the root', () => {
  const src = join(work, 'src');
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'marker'), 'from-src');
  const hostsBefore = readFileSync('/etc/hosts', 'utf8');
  const r = launch([...base, '--bind', src, '/hostetc/nodelet-it', 'rw', '--bind', join(src, 'marker'), '/up/nodelet-it-file', 'ro', '--mask', '/hostetc/hosts'], ['sh', '-c', 'cat /hostetc/nodelet-it/marker; echo; cat /up/nodelet-it-file']);
  assert.equal(r.code, 0, r.status + r.err);
  assert.equal(r.out, 'from-src\nfrom-src');
  // The links resolved inside the root: the mount points were made there, nothing on the host.
  assert.ok(existsSync(join(rootfs, 'etc/nodelet-it')) && existsSync(join(rootfs, 'tmp/nodelet-it-file')));
  assert.ok(!existsSync('/etc/nodelet-it') && !existsSync('/tmp/nodelet-it-file'));
  assert.equal(readFileSync('/etc/hosts', 'utf8'), hostsBefore);
});

test('propagation: rshared both ways, rslave from the host only, rprivate none; exec sees the container\'s mounts as they are', async () => {
  const shared = join(work, 'shared');
  mkdirSync(join(shared, 'from-host'), { recursive: true });
  mkdirSync(join(shared, 'from-ctr'), { recursive: true });
  assert.equal(spawnSync('sh', ['-c', `mount --bind '${shared}' '${shared}' && mount --make-rshared '${shared}'`]).status, 0);
  mounts.push(shared);
  const statusFile = join(work, 'status-long');
  const all = (1n << 41n) - 1n;
  const args = ['--rootfs-propagation', 'shared', '--bind', shared, '/s', 'rw,shared', '--bind', shared, '/l', 'rw,slave', '--bind', shared, '/p', 'rw,private', '--caps', all.toString(16)];
  const child = spawn('sh', ['-c', `exec 3>"$0"; exec "$@"`, statusFile, launcherPath(), '--status-fd', '3', ...base, ...args, '--', 'sh', '-c', 'mount -t tmpfs ctr /s/from-ctr && echo mounted && sleep 30'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no start')), 10_000);
    child.stdout.on('data', () => {
      const m = /"child-pid": (\d+)/.exec(readFileSync(statusFile, 'utf8'));
      if (m) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    });
  });
  try {
    mounts.push(join(shared, 'from-ctr'));
    // The container's mount reached the host through the rshared bind.
    assert.match(readFileSync('/proc/self/mountinfo', 'utf8'), new RegExp(`${join(shared, 'from-ctr')} `));
    // The host mounts under the volume after the start.
    assert.equal(spawnSync('sh', ['-c', `mount -t tmpfs host '${join(shared, 'from-host')}' && touch '${join(shared, 'from-host', 'flag')}'`]).status, 0);
    mounts.push(join(shared, 'from-host'));
    const enter = spawnSync(launcherPath(), ['--enter', String(pid), '--caps', '0', '--cwd', '/', '--env', 'PATH=/bin', '--', 'sh', '-c', 'ls /s/from-host; echo -; ls /l/from-host; echo -; ls /p/from-host; echo -; grep CapBnd /proc/self/status'], { encoding: 'utf8' });
    assert.equal(enter.status, 0, enter.stderr);
    const [s, l, p, caps] = enter.stdout.split('-\n');
    assert.equal(s!.trim(), 'flag', 'rshared: the host\'s mount is seen');
    assert.equal(l!.trim(), 'flag', 'rslave: the host\'s mount is seen');
    assert.equal(p!.trim(), '', 'rprivate: it is not, in exec either');
    assert.match(caps!, /CapBnd:\s+0{16}/, 'exec has its own capability set');
  } finally {
    child.kill('SIGKILL');
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
});

// A cgroup v2 hierarchy: the whole tree on a v2 host, the (controller-less) unified one of a hybrid
// v1 host such as this machine; device filters work on either.
const cgroup2 = readFileSync('/proc/self/mounts', 'utf8')
  .split('\n')
  .map((l) => l.split(' '))
  .find((f) => f[2] === 'cgroup2')?.[1];

test('cgroup v2: the device filter opens only the devices its rules allow, to the container and to a command exec\'d in its cgroup', { skip: cgroup2 ? false : 'no cgroup2 hierarchy mounted' }, async () => {
  const cg = join(cgroup2!, `nodelet-launcher-it-${process.pid}`);
  mkdirSync(cg);
  const join2 = (rules: string[], cmd: string) =>
    spawnSync('sh', ['-c', `echo $$ > "$0/cgroup.procs"; exec "$@"`, cg, launcherPath(), ...base, '--device-cgroup', cg, ...rules.flatMap((r) => ['--device', r]), '--', 'sh', '-c', cmd], { encoding: 'utf8', timeout: 20_000 });
  const opens = 'for d in null zero full random urandom ptmx; do head -c 0 /dev/$d 2>/dev/null && echo "$d ok" || echo "$d denied"; done';
  const statusFile = join(work, 'status-devices');
  let pid: number | undefined;
  try {
    // runc's defaults: the devices of the container's /dev all open.
    const defaults = join2(DEFAULT_DEVICE_RULES.map(launcherDeviceRule), opens);
    assert.equal(defaults.status, 0, defaults.stderr);
    assert.equal(defaults.stdout, 'null ok\nzero ok\nfull ok\nrandom ok\nurandom ok\nptmx ok\n');
    rmSync(statusFile, { force: true });
    // Only null (and mknod of any): zero, which /dev holds as well, does not open; the filter is the cgroup's.
    spawnSync('rmdir', [cg]);
    mkdirSync(cg);
    const child = spawn('sh', ['-c', `echo $$ > "$1/cgroup.procs"; exec 3>"$0"; shift; exec "$@"`, statusFile, cg, launcherPath(), '--status-fd', '3', ...base, '--device-cgroup', cg, '--device', 'c:1:3:rw', '--device', 'c:-1:-1:m', '--', 'sh', '-c', `${opens}; sleep 30`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    pid = await new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no start')), 10_000);
      const poll = setInterval(() => {
        const m = existsSync(statusFile) ? /"child-pid": (\d+)/.exec(readFileSync(statusFile, 'utf8')) : null;
        if (m && out.includes('ptmx')) {
          clearInterval(poll);
          clearTimeout(t);
          resolve(Number(m[1]));
        }
      }, 20);
    });
    assert.equal(out, 'null ok\nzero denied\nfull denied\nrandom denied\nurandom denied\nptmx denied\n');
    // An exec joins the container's cgroup first: the same filter holds it.
    const enter = spawnSync(launcherPath(), ['--enter', String(pid), '--join-cgroup', join(cg, 'cgroup.procs'), '--caps', '0', '--cwd', '/', '--env', 'PATH=/bin', '--', 'sh', '-c', `head -c 0 /dev/zero; grep -c nodelet-launcher-it /proc/self/cgroup`], { encoding: 'utf8' });
    assert.match(enter.stderr, /\/dev\/zero.*Operation not permitted/);
    assert.equal(enter.stdout.trim(), '1', 'the exec is in the container\'s cgroup');
    // A cgroup it cannot join stops the exec rather than running it outside.
    const lost = spawnSync(launcherPath(), ['--enter', String(pid), '--join-cgroup', join(cg, 'gone', 'cgroup.procs'), '--', 'true'], { encoding: 'utf8' });
    assert.notEqual(lost.status, 0);
    assert.match(lost.stderr + lost.stdout, /join the cgroup/);
    child.kill('SIGKILL');
  } finally {
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    for (let i = 0; i < 50 && existsSync(cg) && spawnSync('rmdir', [cg]).status !== 0; i++) await new Promise((r) => setTimeout(r, 100));
  }
});

test("--subpath-bind pins what it opened beneath the volume: a link swapped in before the bind, or one there already, does not lead it out", async () => {
  const base = join(work, 'subpath-volume');
  const outside = join(work, 'subpath-host');
  mkdirSync(join(base, 'sub'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(base, 'sub', 'inside'), 'volume');
  writeFileSync(join(outside, 'secret'), 'host');
  const pin = join(work, 'subpath-pin');
  const hook = join(work, 'subpath-hook');
  spawnSync('mkfifo', [hook, `${hook}.go`]);
  const child = spawn(launcherPath(), ['--subpath-bind', base, 'sub', pin, '-'], { env: { ...process.env, NODELET_LAUNCH_SUBPATH_PAUSE: hook }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d));
  // The helper has opened the subPath: now the directory becomes a link to the host's.
  assert.equal(readFileSync(hook, 'utf8'), 'opened\n');
  renameSync(join(base, 'sub'), join(base, 'sub.old'));
  symlinkSync(outside, join(base, 'sub'));
  writeFileSync(`${hook}.go`, 'x');
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, err);
  mounts.push(pin);
  assert.deepEqual(readdirSync(pin), ['inside'], 'the directory it opened, not the link swapped in');
  // A link there already that leads out is refused; so is making a directory through one.
  const refused = spawnSync(launcherPath(), ['--subpath-bind', base, 'sub/secret', join(work, 'pin-2'), '-'], { encoding: 'utf8' });
  assert.notEqual(refused.status, 0);
  assert.match(refused.stderr, /open the subPath sub\/secret beneath/);
  const made = spawnSync(launcherPath(), ['--subpath-bind', base, 'sub/newdir', join(work, 'pin-3'), '777'], { encoding: 'utf8' });
  assert.notEqual(made.status, 0);
  assert.deepEqual(readdirSync(outside), ['secret'], 'nothing made on the host');
});
