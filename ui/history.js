// The Activity view: what agents and servers did, from the activity log
// (GET /api/activity with the filters `mcpool activity` takes), newest
// first, live (each `call` or `status` event fetches what came after the
// newest shown), older pages on demand; and the per-tool table
// (GET /api/activity/tools) with a sparkline per tool.

import { $, api, coalesce, h, latest, readJson, table } from './lib.js';
import { ms, sparkline } from './plots.js';

const OUTCOME_TEXT = {
  ok: 'OK', tool_error: 'Tool error', unavailable: 'Unavailable', refused: 'Refused', protocol_error: 'Error',
  cancelled: 'Cancelled', timeout: 'Timed out', task: 'Task', input_required: 'Needs input',
};
const EVENT_TEXT = { status: 'Status', connect: 'Connecting', signin: 'Sign-in', approval: 'Approval', config: 'Config' };
const FILTERS = ['server', 'tool', 'client', 'outcome', 'kind', 'since'];
const PAGE = 100;

function what(i) {
  // Code mode: a script run shows its id, and each call it made that run.
  if (i.kind === 'tool' && i.parent !== undefined) return [h('span', { class: 'mono' }, i.tool), h('span', { class: 'entry-text', 'data-role': 'in-run' }, ` in run #${i.parent}`)];
  if (i.kind === 'tool' && i.server === 'mcpool' && i.tool === 'run_script') return [h('span', { class: 'mono' }, i.tool), h('span', { class: 'entry-text', 'data-role': 'run' }, ` run #${i.id}`)];
  if (i.kind === 'tool') return [h('span', { class: 'mono' }, i.tool)];
  if (i.kind === 'prompt') return ['Prompt ', h('span', { class: 'mono' }, i.prompt)];
  if (i.kind === 'resource') return ['Read ', h('span', { class: 'mono' }, i.uri)];
  return [EVENT_TEXT[i.event] || i.event];
}

function outcome(i) {
  if (i.kind === 'server') return h('span', { class: 'outcome', 'data-outcome': i.outcome }, i.outcome.replace('_', ' '));
  return h('span', { class: 'outcome', 'data-outcome': i.outcome }, OUTCOME_TEXT[i.outcome] || i.outcome);
}

/** One row per entry (an item of GET /api/activity). */
export function renderActivity(items) {
  if (!items.length) {
    return [h('p', { class: 'empty', 'data-role': 'no-activity' }, 'Nothing recorded matches. Tool calls, prompts, reads and server events show here as they happen.')];
  }
  return [table('calls activity-table', ['When', 'Server', 'What', 'Agent', ['Duration', 'num'], 'Result'],
    items.map((i) => h('tr', { 'data-entry': i.id, 'data-parent': i.parent, 'data-kind': i.kind, 'data-ok': i.ok === undefined ? undefined : String(i.ok) },
      h('td', {}, h('time', { datetime: i.time, title: new Date(i.time).toLocaleString() }, new Date(i.time).toLocaleTimeString())),
      h('td', {}, i.server),
      h('td', {}, what(i)),
      h('td', {}, i.client ? `${i.client}${i.client_version ? ` ${i.client_version}` : ''}` : '–'),
      h('td', { class: 'num' }, i.duration_ms === null || i.duration_ms === undefined ? '' : ms(i.duration_ms)),
      h('td', {}, outcome(i), i.error || i.detail ? h('span', { class: 'entry-text' }, ` ${i.error || i.detail}`) : null))))];
}

/** The per-tool table: calls, failures, p50, p95 and a sparkline each. */
export function renderToolActivity(tools) {
  if (!tools.length) return [h('p', { class: 'empty', 'data-role': 'no-tool-activity' }, 'No tool calls in the last hour.')];
  return [table('calls tool-activity', ['Tool', 'Server', ['Calls', 'num'], ['Failed', 'num'], ['p50', 'num'], ['p95', 'num'], 'Per minute'],
    tools.map((t) => h('tr', { 'data-tool': `${t.server}/${t.tool}` },
      h('td', { class: 'mono' }, t.tool), h('td', {}, t.server), h('td', { class: 'num' }, String(t.calls)),
      h('td', { class: 'num' }, String(t.errors)), h('td', { class: 'num' }, ms(t.p50_ms)), h('td', { class: 'num' }, ms(t.p95_ms)),
      h('td', {}, sparkline(t, { width: 180, height: 24, label: `${t.server}/${t.tool}` })))))];
}

/**
 * The view's state and its wiring. `servers()` names the servers for the
 * filter's choice.
 */
export function activityView({ servers }) {
  const st = { items: [], cursor: null, last: 0, tools: [] };
  // A load for other filters drops what an older one, `older` or `newer` would show.
  const loads = latest();

  function params(extra) {
    const p = new URLSearchParams();
    for (const f of FILTERS) {
      const v = $(`activity-${f}`).value.trim();
      if (v) p.set(f, v);
    }
    for (const [k, v] of Object.entries(extra)) p.set(k, String(v));
    return p.toString();
  }

  function status(text) { $('activity-status').textContent = text; }

  function shown() {
    return st.items.length ? `${st.items.length}${st.cursor ? '+' : ''} shown, newest first.` : '';
  }

  function paint() {
    $('activity-list').replaceChildren(...renderActivity(st.items));
    $('activity-older').hidden = !st.cursor;
  }

  async function get(query, signal) {
    const response = await api(`/api/activity?${query}`, { signal });
    const body = await readJson(response);
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
    return body;
  }

  /** The newest page for the filters as they are now. */
  async function load() {
    status('Loading…');
    const body = await loads.ask((signal) => get(params({ limit: PAGE }), signal), (e) => ({ failed: e.message }));
    if (!body) return;
    if (body.failed !== undefined) {
      status(`Cannot load the activity: ${body.failed}`);
      return;
    }
    st.items = body.items;
    st.cursor = body.next_cursor;
    st.last = body.last_id;
    const off = body.enabled === false ? ' The activity log is off (config "activity": {"enabled": false}).' : '';
    status(`${body.problem ? `${body.problem} ` : ''}${shown()}${off}`);
    paint();
  }

  async function older() {
    if (!st.cursor) return;
    const current = loads.still();
    try {
      const body = await get(params({ limit: PAGE, cursor: st.cursor }));
      if (!current()) return;
      st.items = st.items.concat(body.items);
      st.cursor = body.next_cursor;
      status(shown());
      paint();
    } catch (e) {
      if (e.message !== 'signed out') status(`Cannot load older entries: ${e.message}`);
    }
  }

  /** What came after the newest shown (oldest first from the API). */
  async function newer() {
    const current = loads.still();
    try {
      const body = await get(params({ limit: 1000, after: st.last }));
      if (!current()) return;
      if (body.last_id < st.last) return load(); // the file was replaced
      st.last = Math.max(st.last, body.last_id);
      if (!body.items.length) return;
      const seen = new Set(st.items.map((i) => i.id));
      const fresh = body.items.filter((i) => !seen.has(i.id)).reverse();
      st.items = fresh.concat(st.items);
      status(`${body.problem ? `${body.problem} ` : ''}${shown()}`);
      paint();
    } catch (e) {
      if (e.message !== 'signed out') status(`Cannot follow the activity: ${e.message}`);
    }
  }

  /** Live: at most one follow-up fetch per 200 ms of events. */
  const poke = coalesce(() => newer(), 200);

  async function loadTools() {
    try {
      const response = await api('/api/activity/tools?minutes=60');
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      st.tools = (await response.json()).tools || [];
      $('tool-activity').replaceChildren(...renderToolActivity(st.tools));
    } catch (e) {
      if (e.message !== 'signed out') $('tool-activity').replaceChildren(h('p', { class: 'empty' }, `Cannot load the per-tool numbers: ${e.message}`));
    }
  }

  /** The server choice follows the server list. */
  function fillServers() {
    const select = $('activity-server');
    const names = servers().map((s) => s.name);
    const have = [...select.options].slice(1).map((o) => o.value);
    if (names.join('\n') === have.join('\n')) return;
    const chosen = select.value;
    select.replaceChildren(h('option', { value: '' }, 'All servers'), ...names.map((n) => h('option', { value: n }, n)));
    select.value = names.includes(chosen) ? chosen : '';
  }

  function start() {
    for (const f of FILTERS) {
      const el = $(`activity-${f}`);
      el.addEventListener(el.tagName === 'SELECT' ? 'change' : 'input', () => loads.soon(load, el.tagName === 'SELECT' ? 0 : 300));
    }
    $('activity-filters').addEventListener('submit', (e) => { e.preventDefault(); load(); });
    $('activity-older').addEventListener('click', older);
    load();
    loadTools();
    setInterval(loadTools, 60_000);
  }

  return { start, load, poke, loadTools, fillServers, state: st };
}
