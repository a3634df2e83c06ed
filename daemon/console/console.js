// The MoonMQ console: reads the broker's client API every two seconds and draws it. Every value from the API is
// put into the page as text, never as markup.
'use strict';

const state = { token: sessionStorage.getItem('moonmq-token') || '' };

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let u = 0;
  n = Number(n) || 0;
  while (n >= 1024 && u < units.length - 1) { n /= 1024; u++; }
  return (u ? n.toFixed(1) : n.toFixed(0)) + ' ' + units[u];
}

function seconds(s) {
  if (s === undefined || s < 0) return '?';
  s = Math.round(s);
  if (s >= 3600) return Math.floor(s / 3600) + 'h' + String(Math.floor(s % 3600 / 60)).padStart(2, '0') + 'm';
  if (s >= 60) return Math.floor(s / 60) + 'm' + String(s % 60).padStart(2, '0') + 's';
  return s + 's';
}

async function api(path) {
  const headers = state.token ? { Authorization: 'Bearer ' + state.token } : {};
  const r = await fetch(path, { headers });
  if (r.status === 401 || r.status === 403) {
    document.getElementById('login').hidden = false;
    throw new Error(r.status === 401 ? 'this broker needs a token' : 'this token may not read ' + path);
  }
  if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
  return r.json();
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function row(cells) {
  const tr = document.createElement('tr');
  for (const c of cells) {
    const td = document.createElement('td');
    if (c instanceof Node) td.appendChild(c); else td.textContent = c === undefined ? '' : String(c);
    tr.appendChild(td);
  }
  return tr;
}

// A load bar: the broker's value against the largest, the mean as a line and the band around it shaded.
function loadBar(value, mean, max, deviation) {
  const bar = el('span', null, 'load');
  const scale = v => Math.max(0, Math.min(100, max > 0 ? v / max * 100 : 0));
  const band = el('span', null, 'band');
  band.style.left = scale(mean * (1 - deviation)) + '%';
  band.style.width = (scale(mean * (1 + deviation)) - scale(mean * (1 - deviation))) + '%';
  const f = el('span', null, 'fill');
  f.style.width = scale(value) + '%';
  const m = el('span', null, 'mean');
  m.style.left = scale(mean) + '%';
  bar.append(band, f, m);
  if (mean > 0 && Math.abs(value - mean) > mean * deviation) bar.classList.add('out');
  bar.title = value.toFixed(0) + ' (mean ' + mean.toFixed(0) + ', band ±' + Math.round(deviation * 100) + '%)';
  return bar;
}

function deviationOf(balancer, resource) {
  const names = { nw_in: 'NW_IN', nw_out: 'NW_OUT', disk: 'DISK' };
  for (const g of balancer.goals || [])
    if (g.name && g.name.toUpperCase().startsWith(names[resource]) && g.deviation !== undefined) return g.deviation;
  return 0.1;
}

function drawBrokers(brokers, balancer) {
  const loads = {};
  for (const b of balancer.brokers || []) loads[b.id] = b;
  const resources = ['nw_in', 'nw_out', 'disk'];
  const stats = {};
  for (const r of resources) {
    const vals = Object.values(loads).filter(b => b.active !== false).map(b => Number(b[r]) || 0);
    stats[r] = { mean: vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : 0,
                 max: vals.length ? Math.max(...vals) * 1.1 : 0 };
  }
  const rows = brokers.brokers.map(b => {
    const l = loads[b.id];
    const cells = [b.id + (b.controller ? ' (controller)' : '') + (b.self ? ' · asked' : ''),
                   b.reachable ? el('span', 'up') : el('span', 'unreachable: ' + (b.error || ''), 'down'),
                   !b.reachable ? '' : b.strays ? el('span', b.partitions + ' + ' + b.strays + ' stray (not served)', 'down')
                                                : b.partitions,
                   b.reachable ? bytes(b.bytes) : ''];
    for (const r of resources)
      cells.push(l ? loadBar(Number(l[r]) || 0, stats[r].mean, stats[r].max, deviationOf(balancer, r)) : '');
    let drain = '';
    if (b.draining) {
      const d = b.drain || {};
      drain = d.done ? 'drained' : 'draining: ' + (d.partitions_left ?? '?') + ' left, ' + bytes(d.bytes_left) +
              ', ETA ' + seconds(d.eta_seconds) + ((d.blocked || []).length ? ', ' + d.blocked.length + ' blocked' : '');
    }
    cells.push(drain);
    const tr = row(cells);
    tr.dataset.broker = b.id;
    return tr;
  });
  fill(document.querySelector('#brokers tbody'), rows);
  document.getElementById('asked').textContent = 'asked ' + brokers.answered_by;
}

function drawMoves(moves) {
  const rows = moves.reassignments.slice().reverse().slice(0, 50).map(m => {
    const p = el('progress');
    p.max = Math.max(1, Number(m.bytes_total) || 0);
    p.value = m.finished && m.succeeded ? p.max : Number(m.bytes_copied) || 0;
    const note = m.stalled ? el('span', 'stalled: ' + m.stalled_reason, 'stalled')
                           : (m.error || (m.cancel_requested && !m.finished ? 'cancelling' : ''));
    const tr = row([m.id, m.topic + '-' + m.partition, m.source, m.dest, m.step, p,
                    m.finished ? '' : bytes(m.rate_bytes_per_sec) + '/s', m.finished ? '' : seconds(m.eta_seconds),
                    note]);
    tr.dataset.move = m.id;
    tr.dataset.step = m.step;
    tr.dataset.copied = m.bytes_copied;
    return tr;
  });
  fill(document.querySelector('#moves tbody'), rows);
  const t = Object.entries(moves.throttle || {}).map(([b, v]) => b + ' ' + (v ? bytes(v) + '/s' : 'unlimited'));
  document.getElementById('throttle').textContent = 'copy throttle: ' + (t.join(', ') || '?');
}

function drawBalancer(b) {
  let text = !b.enabled ? 'off on this broker' : (b.paused ? 'paused' : 'on') + (b.dry_run ? ' (dry run)' : '');
  if (b.enabled) text += ' · controller ' + ((b.controller || {}).id || 'none') + ' · ' + (b.passes || 0) +
                         ' passes · goals ' + (b.satisfied ? 'met' : 'not met');
  document.getElementById('balancer').textContent = text;
  fill(document.querySelector('#plan tbody'),
       (b.plan || []).map(a => row([a.type, a.topic + '-' + a.partition, a.src, a.dest])));
}

function drawCluster(c, groups) {
  const r = c.raft || {};
  document.getElementById('raft').textContent = r.enabled
      ? 'leader ' + (r.leader || 'none') + ' · term ' + r.term + ' · this broker ' + r.role
      : 'off (controller fenced by epochs; epoch ' + ((c.controller || {}).epoch ?? '?') + ')';
  const list = (groups.groups || []).map(g => el('li', g));
  if (!list.length) list.push(el('li', 'none coordinated by this broker', 'muted'));
  document.getElementById('groups').replaceChildren(...list);
}

async function refresh() {
  const error = document.getElementById('error');
  try {
    const [brokers, moves, balancer, cluster, groups] = await Promise.all([
      api('/v1/brokers'), api('/v1/reassignments'), api('/v1/autobalancer'), api('/v1/cluster'), api('/v1/groups')]);
    drawBrokers(brokers, balancer);
    drawMoves(moves);
    drawBalancer(balancer);
    drawCluster(cluster, groups);
    error.hidden = true;
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    error.textContent = e.message;
    error.hidden = false;
  }
}

document.getElementById('login').addEventListener('submit', ev => {
  ev.preventDefault();
  state.token = document.getElementById('token').value;
  sessionStorage.setItem('moonmq-token', state.token);
  document.getElementById('login').hidden = true;
  refresh();
});

refresh();
setInterval(refresh, 2000);
