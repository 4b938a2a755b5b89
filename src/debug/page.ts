// The live page at /debug: plain HTML and one small script, served as they are (no build step, no
// third-party code). The script follows /debug/pods/stream (server-sent events), ticks the
// countdowns itself every second, draws each pod's sync timeline, and shows a pod's plan and
// history when its row is clicked. Every value is put in as text, never as HTML.

export const DEBUG_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>nodelet</title>
<style>
  body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #1d2330; background: #fafbfc; }
  h1 { font-size: 16px; margin: 0 0 8px; }
  #conn { font-size: 12px; color: #667; margin-left: 8px; }
  table { border-collapse: collapse; width: 100%; background: #fff; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e3e6ea; vertical-align: top; }
  th { font-weight: 600; background: #f0f2f5; }
  tr.pod { cursor: pointer; }
  tr.pod:hover { background: #f5f8ff; }
  .c { display: block; white-space: nowrap; }
  .bad { color: #b3261e; } .ok { color: #1b7f3b; } .dim { color: #778; }
  svg.tl { display: block; }
  #detail { margin-top: 16px; }
  #detail pre { background: #fff; border: 1px solid #e3e6ea; padding: 8px; white-space: pre-wrap; }
</style>
</head>
<body>
<h1>nodelet: pods on this node <span id="conn">connecting…</span></h1>
<table>
  <thead><tr><th>POD</th><th>PHASE</th><th>CONTAINERS</th><th>RESTARTS</th><th>WORKER</th><th>NEXT</th><th>SYNCS (last 10 min)</th></tr></thead>
  <tbody id="pods"></tbody>
</table>
<div id="detail"></div>
<script src="debug/app.js"></script>
</body>
</html>
`;

export const DEBUG_PAGE_SCRIPT = `'use strict';
(function () {
  var base = location.pathname.replace(/\\/$/, '');
  var state = { pods: [], skew: 0, selected: null };
  var WINDOW_MS = 10 * 60 * 1000;
  var SVG = 'http://www.w3.org/2000/svg';

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function now() { return Date.now() + state.skew; }
  function secs(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    return s < 60 ? s + 's' : Math.floor(s / 60) + 'm' + (s % 60 ? (s % 60) + 's' : '');
  }
  function workerText(p) {
    var w = p.worker;
    if (!w) return 'no worker';
    if (w.busy) return w.phase === 'syncing' ? 'syncing' : w.phase;
    if (w.phase !== 'syncing') return w.phase;
    if (w.next && w.next.trigger === 'back-off') return 'waiting for back-off';
    if (w.next && w.next.trigger === 'retry') return 'waiting to retry';
    return 'idle';
  }
  function nextText(p) {
    var t = now();
    for (var i = 0; i < p.pending.length; i++) {
      var s = p.pending[i];
      if (s.verb === 'wait' && s.until) return 'start ' + s.target + ' in ' + secs(s.until - t);
    }
    var w = p.worker;
    if (w && w.next) return (w.next.trigger === 'resync' ? 'resync' : w.next.trigger) + ' in ' + secs(w.next.at - t);
    return '';
  }
  function timeline(p) {
    var width = 260, height = 18, t = now();
    var svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'tl');
    svg.setAttribute('width', width);
    svg.setAttribute('height', height);
    var axis = document.createElementNS(SVG, 'line');
    axis.setAttribute('x1', 0); axis.setAttribute('x2', width);
    axis.setAttribute('y1', height / 2); axis.setAttribute('y2', height / 2);
    axis.setAttribute('stroke', '#d0d4da');
    svg.appendChild(axis);
    p.timeline.forEach(function (m) {
      var x = width - ((t - m.at) / WINDOW_MS) * width;
      if (x < 0) return;
      var c = document.createElementNS(SVG, 'circle');
      c.setAttribute('class', 'mark ' + m.outcome);
      c.setAttribute('cx', x.toFixed(1));
      c.setAttribute('cy', height / 2);
      c.setAttribute('r', m.outcome === 'idle' ? 2.5 : 4);
      c.setAttribute('fill', m.outcome === 'failed' ? '#b3261e' : m.outcome === 'acted' ? '#1a5fd0' : '#9aa3ad');
      var title = document.createElementNS(SVG, 'title');
      title.textContent = new Date(m.at).toLocaleTimeString() + ' ' + m.trigger + ': ' + m.outcome + ' (' + m.durationMs + ' ms)' + (m.repeats ? ', and ' + m.repeats + ' more like it' : '');
      c.appendChild(title);
      svg.appendChild(c);
    });
    return svg;
  }
  function render() {
    var body = document.getElementById('pods');
    var rows = document.createDocumentFragment();
    state.pods.forEach(function (p) {
      var key = p.namespace + '/' + p.name;
      var tr = el('tr', null, 'pod');
      tr.dataset.pod = key;
      tr.appendChild(el('td', key));
      tr.appendChild(el('td', p.phase, p.phase === 'Failed' ? 'bad' : p.phase === 'Running' || p.phase === 'Succeeded' ? 'ok' : ''));
      var cs = el('td'), rs = el('td');
      p.containers.forEach(function (c) {
        var line = (c.init ? 'init ' : '') + c.name + ': ' + c.state + (c.ready ? ', ready' : '') + (c.started === false && c.state === 'Running' ? ', not started' : '');
        cs.appendChild(el('span', line, 'c ' + (c.ready ? 'ok' : /BackOff|Error|Terminated/.test(c.state) ? 'bad' : '')));
        rs.appendChild(el('span', c.restartCount, 'c'));
      });
      tr.appendChild(cs);
      tr.appendChild(rs);
      tr.appendChild(el('td', workerText(p), 'worker'));
      tr.appendChild(el('td', nextText(p), 'next'));
      var tl = el('td', null, 'timeline');
      tl.appendChild(timeline(p));
      tr.appendChild(tl);
      tr.addEventListener('click', function () { select(key); });
      rows.appendChild(tr);
    });
    body.replaceChildren(rows);
  }
  function select(key) {
    state.selected = key;
    var d = document.getElementById('detail');
    var parts = key.split('/').map(encodeURIComponent).join('/');
    Promise.all([
      fetch(base + '/pods/' + parts + '/plan').then(function (r) { return r.json(); }),
      fetch(base + '/pods/' + parts).then(function (r) { return r.json(); }),
    ]).then(function (res) {
      var plan = res[0], hist = res[1];
      var box = document.createDocumentFragment();
      box.appendChild(el('h2', key));
      box.appendChild(el('h3', 'Next sync'));
      var lines = (plan.note ? [plan.note] : []).concat(plan.steps.map(function (s) { return s.text; }));
      box.appendChild(el('pre', lines.join('\\n') || 'nothing to do', 'plan'));
      box.appendChild(el('h3', 'History'));
      box.appendChild(el('pre', hist.syncs.slice().reverse().map(function (s) {
        var head = new Date(s.at).toLocaleTimeString() + '  ' + s.trigger + '  ' + s.durationMs + ' ms' + (s.repeats ? '  (+' + s.repeats + ' like it)' : '');
        var acts = s.plan.map(function (p) { return '    ' + p.text; });
        var res = s.results.filter(function (r) { return !r.ok; }).map(function (r) { return '    failed ' + r.action + ' ' + r.target + ': ' + r.reason + (r.message ? ' ' + r.message : ''); });
        return [head].concat(acts, res, s.error ? ['    error: ' + s.error] : []).join('\\n');
      }).join('\\n'), 'history'));
      d.replaceChildren(box);
    }).catch(function (e) { d.replaceChildren(el('pre', String(e), 'bad')); });
  }
  function connect() {
    var es = new EventSource(base + '/pods/stream');
    es.onopen = function () { document.getElementById('conn').textContent = 'live'; };
    es.onerror = function () { document.getElementById('conn').textContent = 'reconnecting…'; };
    es.onmessage = function (ev) {
      var msg = JSON.parse(ev.data);
      state.skew = msg.now - Date.now();
      state.pods = msg.pods;
      render();
      if (state.selected) select(state.selected);
    };
  }
  connect();
  setInterval(render, 1000);
})();
`;
