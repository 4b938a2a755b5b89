// The runtime's errors in the words the kubelet quotes them: a container's start or create failure
// as the runtime's own message ("Error: <message>"), a sandbox's as the gRPC error
// ("rpc error: code = Unknown desc = ..."). nodelet said "StartContainer: ..." and
// "RunPodSandbox: ..." (found by the bad-input drill's sysctl-bad-value and command cases).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { criErrorText, criStatusMessage, fromGrpcError } from '../../../src/cri/errors.js';

test('a runtime answer: its message alone, or as the gRPC error', () => {
  const err = fromGrpcError({ code: 2, details: 'failed to create containerd task: exec: "/x": no such file' }, 'StartContainer', 'unix:///run/c.sock', 2000);
  assert.equal(err.message, 'StartContainer: failed to create containerd task: exec: "/x": no such file');
  assert.equal(criStatusMessage(err), 'failed to create containerd task: exec: "/x": no such file');
  assert.equal(criErrorText(err), 'rpc error: code = Unknown desc = failed to create containerd task: exec: "/x": no such file');
  const invalid = fromGrpcError({ code: 3, details: 'bad sysctl' }, 'RunPodSandbox', 'unix:///run/c.sock', 2000);
  assert.equal(criErrorText(invalid), 'rpc error: code = InvalidArgument desc = bad sysctl');
});

test('no answer from the runtime: our own words, naming what failed', () => {
  const down = fromGrpcError({ code: 14, details: 'No connection established. Last error: connect ENOENT /run/c.sock' }, 'StartContainer', 'unix:///run/c.sock', 2000);
  assert.match(criStatusMessage(down), /no socket at that path/);
  assert.equal(criStatusMessage(new Error('plain')), 'plain');
});
