// The churn drill's arithmetic: least-squares slopes and /metrics text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fitLine, mean, slopePerMinute } from '../../drills/slope.js';
import { parseProm } from '../../drills/prom-text.js';

const near = (a: number, b: number, eps = 1e-9) => assert.ok(Math.abs(a - b) < eps, `${a} is not ${b}`);

test('a line through exact points is found; per minute is 60 times per second', () => {
  const pts = [0, 10, 20, 30].map((t) => ({ t, y: 5 + 0.5 * t }));
  const l = fitLine(pts);
  near(l.slope, 0.5);
  near(l.intercept, 5);
  assert.equal(l.n, 4);
  near(slopePerMinute(pts), 30);
});

test('noise around a flat level fits a slope near 0; a warm-up is left out', () => {
  const flat = [100, 102, 98, 101, 99, 100, 102, 98].map((y, i) => ({ t: i * 5, y }));
  assert.ok(Math.abs(slopePerMinute(flat)) < 3, String(slopePerMinute(flat)));
  // Growth during the first 20 s (warm-up), flat after it.
  const warm = [...[0, 5, 10, 15].map((t) => ({ t, y: t * 10 })), ...[20, 25, 30, 35, 40].map((t) => ({ t, y: 200 }))];
  assert.ok(slopePerMinute(warm) > 100);
  near(slopePerMinute(warm, 20), 0);
});

test('degenerate inputs: no points, one point, one time', () => {
  assert.deepEqual(fitLine([]), { slope: 0, intercept: 0, n: 0 });
  assert.equal(fitLine([{ t: 3, y: 7 }]).slope, 0);
  assert.equal(fitLine([{ t: 3, y: 7 }, { t: 3, y: 9 }]).intercept, 8);
  assert.ok(Number.isNaN(mean([])));
  assert.equal(mean([{ t: 0, y: 2 }, { t: 1, y: 4 }]), 3);
});

test('/metrics text: series by labels, sums by name, comments and odd lines skipped', () => {
  const s = parseProm(
    [
      '# HELP kubelet_working_pods Pods',
      '# TYPE kubelet_working_pods gauge',
      'kubelet_working_pods{lifecycle="sync"} 20',
      'kubelet_working_pods{lifecycle="terminated"} 3',
      'process_resident_memory_bytes 1.5e+08',
      'rest_client_requests_total{code="200",method="GET",host="127.0.0.1:6443"} 12',
      'garbage line',
      '',
    ].join('\n'),
  );
  assert.equal(s.sum('kubelet_working_pods'), 23);
  assert.equal(s.get('kubelet_working_pods', { lifecycle: 'sync' }), 20);
  assert.equal(s.get('process_resident_memory_bytes'), 150_000_000);
  assert.equal(s.get('rest_client_requests_total', { code: '200', method: 'GET', host: '127.0.0.1:6443' }), 12);
  assert.equal(s.sum('absent'), 0);
  assert.equal(s.get('absent'), undefined);
});
