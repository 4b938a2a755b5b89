// Paths an image names, resolved inside its root: links to host paths, "..", loops, devices.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileInRoot, resolveInRoot } from '../../../src/util/in-root.js';

const root = mkdtempSync(join(tmpdir(), 'in-root-'));
after(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, 'etc'));
mkdirSync(join(root, 'real'));
writeFileSync(join(root, 'real', 'passwd'), 'image:x:5:5::/:/bin/sh\n');

test('links are followed inside the root, whatever they point at', () => {
  symlinkSync('/etc', join(root, 'hostetc'));
  symlinkSync('../../../../../../../etc/passwd', join(root, 'up'));
  symlinkSync('/real', join(root, 'abs'));
  symlinkSync('../real/passwd', join(root, 'etc', 'rel'));
  assert.equal(resolveInRoot(root, 'hostetc/passwd'), join(root, 'etc/passwd'), 'an absolute link is the root\'s path');
  assert.equal(resolveInRoot(root, '/up'), join(root, 'etc/passwd'), '.. stops at the root');
  assert.equal(resolveInRoot(root, 'abs/passwd'), join(root, 'real/passwd'));
  assert.equal(resolveInRoot(root, 'etc/rel'), join(root, 'real/passwd'));
  assert.equal(resolveInRoot(root, 'etc/rel', true), join(root, 'etc/rel'), 'the last link left alone when asked');
  assert.equal(resolveInRoot(root, 'missing/../x/y'), join(root, 'x/y'));
  symlinkSync('loop', join(root, 'loop'));
  assert.throws(() => resolveInRoot(root, 'loop/x'), /too many levels of symbolic links/);
});

test("an image's file is read inside its root, bounded, and only when it is a regular file", () => {
  symlinkSync('/dev/zero', join(root, 'etc', 'zero'));
  symlinkSync('/etc/hostname', join(root, 'etc', 'host'));
  symlinkSync('/real/passwd', join(root, 'etc', 'passwd'));
  execFileSync('mkfifo', [join(root, 'etc', 'fifo')]);
  assert.equal(readFileInRoot(root, 'etc/passwd', 1 << 20), 'image:x:5:5::/:/bin/sh\n');
  assert.equal(readFileInRoot(root, 'etc/passwd', 5), 'image', 'no more than asked for');
  // The host's /dev/zero would never end; the image has none.
  assert.equal(readFileInRoot(root, 'etc/zero', 1 << 20), '');
  assert.equal(readFileInRoot(root, 'etc/host', 1 << 20), '', "not the host's /etc/hostname");
  assert.equal(readFileInRoot(root, 'etc/fifo', 1 << 20), '', 'a FIFO is not waited on');
  assert.equal(readFileInRoot(root, 'etc', 1 << 20), '', 'nor a directory read');
});
