// ExecSync's output is bounded, as containerd bounds it (CVE-2022-31030), and so that it fits the
// 16 MiB gRPC message it is sent in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cappedSinks, EXEC_SYNC_MAX_BYTES } from '../../../src/procruntime/exec.js';

test('stdout and stderr together keep their first bytes up to the budget and drop the rest as it comes', () => {
  assert.ok(EXEC_SYNC_MAX_BYTES < 16 * 1024 * 1024 && EXEC_SYNC_MAX_BYTES > 15 * 1024 * 1024);
  const [out, err] = cappedSinks(2, 10);
  out!.write(Buffer.from('abcd'));
  err!.write(Buffer.from('ef'));
  out!.write(Buffer.from('ghij-cut'));
  err!.write(Buffer.from('more'));
  assert.equal(out!.bytes().toString(), 'abcdghij');
  assert.equal(err!.bytes().toString(), 'ef');
  // A flood far past the budget keeps exactly the budget, on one stream or the two.
  const [a, b] = cappedSinks(2);
  const chunk = Buffer.alloc(1024 * 1024, 1);
  for (let i = 0; i < 40; i++) (i % 2 ? a : b)!.write(chunk);
  assert.equal(a!.bytes().length + b!.bytes().length, EXEC_SYNC_MAX_BYTES);
});
