// Reading a static pod directory: every file that is not a pod is said once with its reason, and
// nothing in it can reach code that trusts the API's types (a CPU request "lots" crashed the agent in
// admission: the bad-input drill's bad-static/bad-quantity.yaml).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readManifests, type ManifestCache } from '../../../src/pods/static-pods.js';
import { apiObjectReference, validateManifest } from '../../../src/pods/static-pod-validation.js';

const pod = (spec: object, name = 'p') => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'i' }], ...spec } });

test('fields of the wrong shape are refused, naming the field', () => {
  assert.equal(validateManifest(pod({})), undefined);
  const c = (extra: object) => pod({ containers: [{ name: 'c', image: 'i', ...extra }] });
  assert.equal(validateManifest(c({ resources: { requests: { cpu: 'lots' } } })), 'spec.containers[0].resources.requests.cpu: "lots" is not a quantity');
  assert.equal(validateManifest(c({ env: { A: 'b' } })), 'spec.containers[0].env: expected a list');
  assert.equal(validateManifest(c({ env: [{ name: 'A', value: 1 }] })), 'spec.containers[0].env[0].value: expected a string');
  assert.equal(validateManifest(c({ ports: [{ containerPort: 'http' }] })), 'spec.containers[0].ports[0].containerPort: expected a port number, got "http"');
  assert.equal(validateManifest(c({ volumeMounts: [{ name: 'v' }] })), 'spec.containers[0].volumeMounts[0]: name and mountPath are required');
  assert.equal(validateManifest(pod({ volumes: 'data' })), 'spec.volumes: expected a list of volumes, each with a name');
  assert.equal(validateManifest(pod({ initContainers: [{ name: 'c', image: 'i' }] })), 'spec.containers[0].name: duplicate name "c"');
  assert.equal(validateManifest({ ...pod({}), metadata: { name: 'p', labels: { a: 1 } } }), 'metadata.labels: expected a map of strings');
  assert.equal(validateManifest({ ...pod({}), spec: [] }), 'spec: expected a map');
});

test('references to API objects are refused as the kubelet refuses them', () => {
  assert.equal(apiObjectReference({ serviceAccountName: 'sa' }), 'serviceaccounts');
  assert.equal(apiObjectReference({ imagePullSecrets: [{ name: 's' }] }), 'secrets');
  assert.equal(apiObjectReference({ containers: [{ env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }] }] }), 'configmaps');
  assert.equal(apiObjectReference({ volumes: [{ name: 'v', configMap: { name: 'c' } }] }), 'configmaps');
  assert.equal(apiObjectReference({ volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] }), 'persistentvolumeclaims');
  assert.equal(apiObjectReference({ volumes: [{ name: 'v', projected: { sources: [{ serviceAccountToken: { path: 't' } }] } }] }), 'serviceaccounts (via projected volumes)');
  assert.equal(apiObjectReference({ volumes: [{ name: 'v', hostPath: { path: '/x' } }, { name: 'w', projected: { sources: [{ downwardAPI: {} }] } }] }), undefined);
  assert.equal(validateManifest(pod({ volumes: [{ name: 'v', secret: { secretName: 's' } }] })), 'static pods may not reference secrets');
});

test('a directory read: bad files each reported, the first of two same-named pods kept, other files said to be no manifests', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-static-'));
  const yaml = (o: object) => JSON.stringify(o);
  writeFileSync(join(dir, 'a.yaml'), yaml(pod({}, 'web')));
  writeFileSync(join(dir, 'b.yaml'), yaml(pod({}, 'web')));
  writeFileSync(join(dir, 'c.yaml'), yaml(pod({ containers: [{ name: 'c', image: 'i', resources: { requests: { cpu: 'lots' } } }] }, 'q')));
  writeFileSync(join(dir, 'empty.yaml'), '\n');
  writeFileSync(join(dir, 'notes.txt'), yaml(pod({}, 'txt')));
  writeFileSync(join(dir, '.hidden.yaml'), 'not: [read');
  mkdirSync(join(dir, 'sub.yaml'));
  const { pods, errors } = readManifests(dir, 'n1');
  assert.deepEqual(pods.map((p) => p.metadata!.name), ['web-n1']);
  assert.deepEqual(errors.map((e) => [e.file.slice(dir.length + 1), e.message]), [
    ['b.yaml', `duplicate pod name "default/web": ${join(dir, 'a.yaml')} defines it first; ignored`],
    ['c.yaml', 'spec.containers[0].resources.requests.cpu: "lots" is not a quantity'],
    ['empty.yaml', 'empty file: no pod'],
    ['notes.txt', 'not a manifest: only *.yaml, *.yml and *.json files are read'],
    ['sub.yaml', 'a directory: manifests in subdirectories are not read'],
  ]);
  assert.deepEqual(readManifests(join(dir, 'gone'), 'n1').errors, [{ file: join(dir, 'gone'), message: 'no such directory' }]);
});

test('with a cache, an unchanged file is not parsed again; an edited one is, and a removed one is forgotten', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-static-cache-'));
  const cache: ManifestCache = new Map();
  writeFileSync(join(dir, 'a.yaml'), JSON.stringify(pod({}, 'web')));
  writeFileSync(join(dir, 'b.yaml'), 'kind: [broken');
  const first = readManifests(dir, 'n1', cache);
  assert.equal(cache.size, 2);
  // The cache is what is read while the stat is the same: a planted entry shows it was used.
  const stamp = cache.get(join(dir, 'a.yaml'))!.stamp;
  cache.set(join(dir, 'a.yaml'), { stamp, docs: [{ problem: 'from the cache' }] });
  assert.deepEqual(readManifests(dir, 'n1', cache).errors.map((e) => e.message).sort(), ['from the cache', first.errors[0]!.message].sort());
  // Edited (a new size): read again. The same pod parsed twice has the same UID.
  writeFileSync(join(dir, 'a.yaml'), JSON.stringify(pod({}, 'web')) + '\n');
  const again = readManifests(dir, 'n1', cache);
  assert.equal(again.pods[0]!.metadata!.uid, first.pods[0]!.metadata!.uid);
  // Each read builds its own objects: a change to one pod is not seen by the next read.
  again.pods[0]!.spec!.containers[0]!.image = 'changed';
  assert.equal(readManifests(dir, 'n1', cache).pods[0]!.spec!.containers[0]!.image, 'i');
  rmSync(join(dir, 'b.yaml'));
  readManifests(dir, 'n1', cache);
  assert.deepEqual([...cache.keys()], [join(dir, 'a.yaml')]);
});
