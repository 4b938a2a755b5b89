import assert from 'node:assert/strict';
import test from 'node:test';
import { podStatusPatch } from '../../../src/status/patch.js';

test('the status patch: the kubelet\'s conditions, and DisruptionTarget only when the kubelet ended the pod; others\' conditions left alone', () => {
  const types = (conditions: Array<{ type: string; reason?: string }>) =>
    ((podStatusPatch('u', { phase: 'Failed', conditions: conditions.map((c) => ({ status: 'True', ...c })) }).status.conditions as Array<{ type: string; $patch?: string }>) ?? [])
      .filter((c) => !c.$patch)
      .map((c) => c.type);
  assert.deepEqual(types([{ type: 'Ready' }, { type: 'DisruptionTarget', reason: 'TerminationByKubelet' }]), ['Ready', 'DisruptionTarget']);
  assert.deepEqual(types([{ type: 'Ready' }, { type: 'DisruptionTarget', reason: 'DeletionByTaintManager' }, { type: 'example.com/gate' }]), ['Ready'], 'another\'s DisruptionTarget is theirs');
});
