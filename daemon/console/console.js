// The MoonMQ console: reads the broker's client API every two seconds and draws it. Every value from the API is
// put into the page as text, never as markup.
'use strict';

// `lastLoads`: each broker's figures from the last pass that measured it, kept for when it stops answering.
// `actionError`: why the operator's last action was refused, shown until the next action.
const state = { token: sessionStorage.getItem('moonmq-token') || '', lastLoads: {}, actionError: '' };

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

async function api(path, method, body) {
  const headers = state.token ? { Authorization: 'Bearer ' + state.token } : {};
  const init = { headers, method: method || 'GET' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const write = init.method !== 'GET';
  if (r.status === 401 || (r.status === 403 && !write)) {
    document.getElementById('login').hidden = false;
    throw new Error(r.status === 401 ? 'this broker needs a token' : 'this token may not read ' + path);
  }
  if (!r.ok) {
    let why = 'HTTP ' + r.status;
    try { const e = await r.json(); if (e.message) why += ' ' + (e.error || '') + ': ' + e.message; } catch (_) { }
    throw new Error(path + ': ' + why);
  }
  return r.json();
}

// An operator's action (admin token): the page is redrawn after it, and a refusal is shown like any error.
async function act(method, path, body) {
  try {
    await api(path, method, body);
    state.actionError = '';
  } catch (e) {
    state.actionError = 'refused: ' + e.message;
  }
  refresh();
}

// Text cut to `n` characters, the whole of it in the tooltip (an error must not widen the page).
function short(text, n, cls) {
  text = String(text || '');
  const e = el('span', text.length > n ? text.slice(0, n - 1) + '…' : text, cls);
  e.title = text;
  return e;
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

// A load bar: the broker's value against the largest, the mean as a line and the band around it shaded, and the
// value in figures beside it. `stale`: the broker did not answer, so these are its last measured figures.
function loadBar(value, mean, max, deviation, format, stale) {
  const wrap = el('span', null, 'loadcell');
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
  bar.title = format(value) + ' (mean ' + format(mean) + ', band ±' + Math.round(deviation * 100) + '%)' +
              (stale ? '; last measured before the broker stopped answering' : '');
  wrap.append(bar, el('span', format(value), 'figure'));
  if (stale) wrap.classList.add('stale');
  return wrap;
}

const resources = {
  nw_in: { goal: 'NW_IN', format: v => bytes(v) + '/s' },
  nw_out: { goal: 'NW_OUT', format: v => bytes(v) + '/s' },
  disk: { goal: 'DISK', format: v => bytes(v) },
  partitions: { goal: 'PARTITION_COUNT', format: v => String(Math.round(v)) },
};

// How a goal's values read: in the unit of its resource, as a plain number for any other goal.
function goalFormat(goal) {
  for (const r of Object.values(resources))
    if (String(goal || '').toUpperCase().startsWith(r.goal)) return r.format;
  return v => Number(v).toFixed(0);
}

function deviationOf(balancer, resource) {
  for (const g of balancer.goals || [])
    if (g.name && g.name.toUpperCase().startsWith(resources[resource].goal) && g.deviation !== undefined)
      return g.deviation;
  return 0.1;
}

// A drain's progress: what waits for a slot is queued, not blocked.
function drainText(b) {
  if (!b.draining) return '';
  const d = b.drain || {};
  if (d.done) return 'drained';
  const waiting = (d.blocked || []).filter(x => String(x.reason || '').startsWith('waiting')).length;
  const blocked = (d.blocked || []).length - waiting;
  return 'draining: ' + (d.partitions_left ?? '?') + ' left, ' + bytes(d.bytes_left) + ', ETA ' +
         seconds(d.eta_seconds) + (waiting ? ', ' + waiting + ' queued' : '') + (blocked ? ', ' + blocked + ' blocked' : '');
}

// A broker that does not answer: why, cut short (the whole of it in the tooltip), and whether its bars are stale.
function downCell(error, stale) {
  const cell = el('span');
  // The broker's own words say "no answer: peer b3: …" where the row already names b3.
  const why = String(error || '').replace(/^no answer: /, '').replace(/^peer [^:]+: /, '');
  cell.append(short('unreachable: ' + why, 40, 'down'));
  if (stale) cell.append(el('span', ' · loads stale', 'muted'));
  return cell;
}

function drawBrokers(brokers, balancer) {
  const loads = {};
  for (const b of balancer.brokers || []) loads[b.id] = state.lastLoads[b.id] = b;
  // A broker that does not answer keeps its last measured figures (drawn as stale).
  for (const b of brokers.brokers)
    if (!b.reachable && !loads[b.id] && state.lastLoads[b.id]) loads[b.id] = state.lastLoads[b.id];
  const names = Object.keys(resources);
  const stats = {};
  for (const r of names) {
    const vals = Object.values(loads).filter(b => b.active !== false).map(b => Number(b[r]) || 0);
    stats[r] = { mean: vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : 0,
                 max: vals.length ? Math.max(...vals) * 1.1 : 0 };
  }
  const rows = brokers.brokers.map(b => {
    const l = loads[b.id];
    const cells = [b.id + (b.controller ? ' (controller)' : '') + (b.self ? ' · asked' : ''),
                   b.reachable ? el('span', 'up') : downCell(b.error, l !== undefined),
                   !b.reachable ? '' : b.strays ? el('span', b.partitions + ' + ' + b.strays + ' stray (not served)', 'down')
                                                : b.partitions,
                   b.reachable ? bytes(b.bytes) : ''];
    for (const r of names)
      cells.push(l ? loadBar(Number(l[r]) || 0, stats[r].mean, stats[r].max, deviationOf(balancer, r),
                             resources[r].format, !b.reachable) : '');
    cells.push(drainText(b));
    const tr = row(cells);
    tr.lastChild.className = 'wrap';
    if (!b.reachable) tr.children[1].className = 'wrap';
    tr.dataset.broker = b.id;
    tr.dataset.reachable = b.reachable ? 'yes' : 'no';
    return tr;
  });
  fill(document.querySelector('#brokers tbody'), rows);
  document.getElementById('asked').textContent = 'asked ' + brokers.answered_by;
}

function drawMoves(moves) {
  const rows = moves.reassignments.slice().reverse().slice(0, 50).map(m => {
    const p = el('progress');
    const total = Number(m.bytes_total) || 0, copied = m.finished && m.succeeded ? total : Number(m.bytes_copied) || 0;
    p.max = Math.max(1, total);
    p.value = m.finished && m.succeeded ? p.max : copied;
    const progress = el('span', null, 'progresscell');
    progress.append(p, el('span', (total ? Math.floor(copied / total * 100) : 0) + '% · ' + bytes(copied) + ' / ' +
                                  bytes(total), 'figure'));
    const note = m.stalled ? short('stalled: ' + m.stalled_reason, 60, 'stalled')
                           : short(m.error || (m.cancel_requested && !m.finished ? 'cancelling' : ''), 60);
    let control = '';
    if (!m.finished && !m.cancel_requested) {
      control = el('button', 'cancel', 'small');
      control.addEventListener('click', () => act('DELETE', '/v1/reassignments/' + m.id + '?source=' +
                                                               encodeURIComponent(m.source)));
    }
    const tr = row([m.id, m.topic + '-' + m.partition, m.source, m.dest, m.step, progress,
                    m.finished ? '' : bytes(m.rate_bytes_per_sec) + '/s', m.finished ? '' : seconds(m.eta_seconds),
                    note, control]);
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
  if (b.controller_silent) text += ' · the controller (' + b.controller_silent.id + ') did not answer: this broker\'s own state';
  document.getElementById('balancer').textContent = text;
  document.getElementById('pause').textContent = b.paused ? 'resume' : 'pause';
  document.getElementById('pause').dataset.paused = b.paused ? 'yes' : 'no';
  const plan = (b.plan || []).map(a => row([a.type, a.topic + '-' + a.partition, a.src, a.dest, short(a.chosen_by, 60)]));
  if (!plan.length) {
    const none = row([b.enabled ? 'no action planned' : '']);
    none.firstChild.colSpan = 5;
    none.firstChild.className = 'muted';
    plan.push(none);
  }
  fill(document.querySelector('#plan tbody'), plan);
  const out = (b.out_of_band || []).map(o => {
    const format = goalFormat(o.goal);
    return el('li', o.broker + ' ' + o.goal + ' ' + format(Number(o.value)) + ' outside [' + format(Number(o.lower)) +
                    ', ' + format(Number(o.upper)) + ']: ' + (o.why || ''));
  });
  document.getElementById('out_of_band').replaceChildren(...out);
}

// Every partition of every topic the catalog lists: its owner and size, marked when two brokers have it (a stray
// or a second server) or when no broker that answered serves it.
function drawPartitions(topics, partitions) {
  const served = new Map();
  for (const p of partitions.partitions || []) served.set(p.topic + '-' + p.partition, p);
  const rows = [];
  let total = 0;
  for (const t of (topics.topics || []).filter(t => t.catalog !== false && !t.deleted)) {
    total += Number(t.partitions) || 0;
    for (let i = 0; i < (Number(t.partitions) || 0) && rows.length < 500; i++) {
      const p = served.get(t.name + '-' + i);
      const conflict = p ? String(p.conflict || '') : '';
      const mark = !p ? el('span', (partitions.unreachable || []).length ? 'not served (or on a broker that did not answer)'
                                                                           : 'not served', 'down')
                 : conflict.startsWith('served by') ? short('served twice: ' + conflict, 60, 'down')
                 : conflict ? short(conflict, 60, 'stalled') : '';
      const tr = row([t.name + '-' + i, p ? p.owner : '', p ? bytes(p.size_bytes) : '',
                      p && p.open_transactions ? 'yes' : '', mark]);
      tr.dataset.partition = t.name + '-' + i;
      tr.dataset.owner = p ? p.owner : '';
      rows.push(tr);
    }
  }
  fill(document.querySelector('#partitions tbody'), rows);
  document.getElementById('partitions_more').textContent = total > rows.length ? 'the first ' + rows.length + ' of ' + total : '';
}

function drawCluster(c, groups) {
  const r = c.raft || {};
  document.getElementById('raft').textContent = r.enabled
      ? 'leader ' + (r.leader || 'none') + ' · term ' + r.term + ' · this broker ' + r.role
      : 'off (controller fenced by epochs; epoch ' + ((c.controller || {}).epoch ?? '?') + ')';
  const list = (groups.groups || []).map(g => el('li', g.group + ' (coordinator ' + g.coordinator + ')'));
  for (const b of groups.brokers || [])
    if (!b.answered) {
      const li = el('li');
      li.appendChild(short(b.id + ' did not answer: ' + ((b.error || {}).message || ''), 60, 'down'));
      list.push(li);
    }
  if (groups.next) list.push(el('li', 'the first ' + (groups.groups || []).length + ' shown (moonmqctl groups lists them all)', 'muted'));
  if (!list.length) list.push(el('li', 'none', 'muted'));
  document.getElementById('groups').replaceChildren(...list);
}

async function refresh() {
  const error = document.getElementById('error');
  try {
    const [brokers, moves, balancer, cluster, groups, topics, partitions] = await Promise.all([
      api('/v1/brokers'), api('/v1/reassignments'), api('/v1/autobalancer'), api('/v1/cluster'),
      api('/v1/groups?scope=cluster'), api('/v1/topics'), api('/v1/partitions')]);
    drawBrokers(brokers, balancer);
    drawMoves(moves);
    drawBalancer(balancer);
    drawPartitions(topics, partitions);
    drawCluster(cluster, groups);
    error.textContent = state.actionError;
    error.hidden = !state.actionError;
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    error.textContent = e.message;
    error.hidden = false;
  }
}

// The next refresh is scheduled once this one has ended, so that a slow cluster (a peer that does not answer
// costs a peer timeout) never has refreshes pile up, or an older answer drawn over a newer one.
async function refreshLoop() {
  await refresh();
  setTimeout(refreshLoop, 2000);
}

document.getElementById('login').addEventListener('submit', ev => {
  ev.preventDefault();
  state.token = document.getElementById('token').value;
  sessionStorage.setItem('moonmq-token', state.token);
  document.getElementById('login').hidden = true;
  refresh();
});

document.getElementById('pause').addEventListener('click', ev =>
  act('POST', ev.target.dataset.paused === 'yes' ? '/v1/autobalancer/resume' : '/v1/autobalancer/pause'));
document.getElementById('throttle_form').addEventListener('submit', ev => {
  ev.preventDefault();
  const text = document.getElementById('throttle_kib').value.trim();
  const kib = Number(text);
  if (text === '' || !Number.isFinite(kib) || kib < 0) {
    state.actionError = 'the throttle is a number of KiB/s, 0 for none';
    refresh();
    return;
  }
  act('PUT', '/v1/reassignments/throttle', { bytes_per_sec: Math.round(kib * 1024) });
});

refreshLoop();
