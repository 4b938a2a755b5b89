// ExecSync's output is bounded per stream, as containerd bounds it (CVE-2022-31030).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cappedSink, EXEC_SYNC_MAX_STREAM_BYTES } from '../../../src/procruntime/exec.js';

test('each stream keeps its first 16 MiB and drops the rest as it comes', () => {
  assert.equal(EXEC_SYNC_MAX_STREAM_BYTES, 16 * 1024 * 1024);
  const sink = cappedSink(10);
  sink.write(Buffer.from('abcd'));
  sink.write(Buffer.from('efghij-cut'));
  sink.write(Buffer.from('more'));
  assert.equal(sink.bytes().toString(), 'abcdefghij');
  // A flood far past the cap keeps exactly the cap.
  const big = cappedSink();
  const chunk = Buffer.alloc(1024 * 1024, 1);
  for (let i = 0; i < 40; i++) big.write(chunk);
  assert.equal(big.bytes().length, EXEC_SYNC_MAX_STREAM_BYTES);
});
