// mcpool dashboard. `render(view)` builds the DOM from data alone; the rest
// fetches that data (/api/servers; the tool search and listing in search.js,
// the connect snippets in connect.js), follows /api/events, and posts the buttons' actions. No
// framework, no build step.

import { addCall, countdown, renderCalls, since, tick } from './activity.js';
import { activityView } from './history.js';
import { cardPlots } from './plots.js';
import { loadListing, renderListing, renderResults, toolSearch } from './search.js';
import { serverEditor } from './servers.js';
import { registryBrowser } from './registry.js';
import { connectPanel, renderSnippets } from './connect.js';
import { logsPanel } from './logs.js';

export const STATUS_TEXT = {
  connected: 'Connected',
  pending: 'Starting',
  failed: 'Failed',
  needs_auth: 'Needs sign-in',
  disabled: 'Disconnected',
};

/** A DOM element: `h('p', {class: 'x'}, 'text', child, ...)`. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'open' || k === 'disabled' || k === 'hidden') el[k] = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const NUMBER = new Intl.NumberFormat('en-US');

export function plural(n, word) {
  return `${NUMBER.format(n)} ${word}${n === 1 ? '' : 's'}`;
}

/** "≈ 1,234 tokens": an estimate (mcpool counts the definition's bytes). */
export function approx(tokens) {
  return `≈ ${plural(tokens || 0, 'token')}`;
}

/** One line per fact a user acts on: tools kept, next retry, network. */
function facts(s, now) {
  const items = [];
  const count = (state) => s.tools.filter((t) => t.state === state).length;
  const kept = count('kept');
  const cached = count('cached');
  const live = count('live');
  if (live) items.push(h('li', {}, `${plural(live, 'tool')} live`));
  if (kept) items.push(h('li', { class: 'fact-warn' }, `${plural(kept, 'tool')} kept: agents still see them; the server reconnects when next used`));
  if (cached) items.push(h('li', {}, `${plural(cached, 'tool')} cached from the last run`));
  const changed = count('changed');
  if (changed) items.push(h('li', { class: 'fact-warn', 'data-role': 'changed' }, `${plural(changed, 'tool')} changed: agents do not see ${changed === 1 ? 'it' : 'them'} until you approve`));
  const off = s.tools.filter((t) => t.enabled === false).length;
  if (off) items.push(h('li', {}, `${plural(off, 'tool')} switched off`));
  if (!s.tools.length) items.push(h('li', {}, 'No tools'));
  if (s.connecting) items.push(h('li', {}, 'Connecting…'));
  if (s.auth && s.auth.login === 'waiting') items.push(h('li', { 'data-role': 'signin' }, 'Waiting for the sign-in in your browser…'));
  if (s.auth && s.auth.login_error) items.push(h('li', { class: 'fact-bad', 'data-role': 'signin' }, s.auth.login_error));
  if (s.auth && s.auth.signed_in && !s.auth.stored) items.push(h('li', { class: 'fact-warn' }, 'Signed in until mcpool stops: no keyring to keep the sign-in'));
  if (s.waiting_for_network) items.push(h('li', { class: 'fact-warn', 'data-role': 'network' }, 'Waiting for the network'));
  // Backoff (rule 5): the next request may try again from this moment on.
  if (s.retry_at) {
    items.push(h('li', { class: 'fact-bad', 'data-role': 'retry' }, 'Retry in ', countdown(s.retry_at, now)));
  }
  if (s.last_connected) {
    items.push(h('li', { class: 'fact-quiet', 'data-role': 'last-connected' },
      s.status === 'connected' ? 'Connected ' : 'Last connected ', since(s.last_connected, now)));
  }
  return h('ul', { class: 'facts' }, items);
}

function errorBlock(s, view) {
  if (!s.error) return null;
  const [first, ...rest] = s.error.split('\n');
  const key = `error:${s.name}`;
  return h('details', { class: 'error', 'data-key': key, open: view.open.has(key), ontoggle: view.onToggle },
    h('summary', {}, first || 'Error'),
    h('pre', { class: 'mono stderr' }, rest.length ? s.error : first));
}

/** A local server's last stderr lines, redacted by mcpool; folded. */
function stderrBlock(s, view) {
  const lines = s.stderr_tail || [];
  if (!lines.length) return null;
  const key = `stderr:${s.name}`;
  return h('details', { class: 'stderr-tail', 'data-key': key, open: view.open.has(key), ontoggle: view.onToggle },
    h('summary', {}, `Stderr (last ${lines.length === 1 ? 'line' : `${lines.length} lines`})`),
    h('pre', { class: 'mono stderr-lines' }, lines.join('\n')));
}

/** What the check of the server's listing repaired or left out (rule 18). */
function toolWarningsBlock(s, view) {
  const warnings = s.tool_warnings || [];
  if (!warnings.length) return null;
  const out = warnings.filter((w) => w.left_out).length;
  const key = `tool-warnings:${s.name}`;
  const summary = out
    ? `${plural(out, 'tool')} left out, broken as the server lists ${out === 1 ? 'it' : 'them'}`
    : `${plural(warnings.length, 'tool definition')} repaired`;
  return h('details', { class: 'tool-warnings', 'data-role': 'tool-warnings', 'data-key': key, open: view.open.has(key), ontoggle: view.onToggle },
    h('summary', { class: out ? 'fact-warn' : 'fact-quiet' }, summary),
    h('ul', {}, warnings.map((w) =>
      h('li', { 'data-tool': w.tool, 'data-left-out': String(w.left_out) },
        h('span', { class: 'mono' }, w.tool), w.field ? [' ', h('span', { class: 'mono' }, w.field)] : null, `: ${w.problem}`))));
}

/** A tool's switch: on means agents see it (written to the config file).
 * `where` keeps the keys of the card's and the search result's apart. */
export function toolSwitch(s, t, view, where = 'switch') {
  const on = t.enabled !== false;
  const busy = view.busy.has(s.name);
  return h('button', {
    type: 'button',
    role: 'switch',
    class: 'switch',
    'aria-checked': on ? 'true' : 'false',
    'aria-label': `${t.name} of ${s.name}: ${on ? 'on' : 'off'}`,
    'data-key': `${where}:${s.name}:${t.name}`,
    disabled: busy,
    onclick: () => view.onToolAction(s.name, t.name, on ? 'disable' : 'enable'),
  }, on ? 'On' : 'Off');
}

function toolsBlock(s, view) {
  if (!s.tools.length) return null;
  const key = `tools:${s.name}`;
  return h('details', { class: 'tools', 'data-key': key, open: view.open.has(key), ontoggle: view.onToggle },
    h('summary', {}, `Tools (${s.tools.length})`),
    h('ul', { class: 'tool-list' }, s.tools.map((t) =>
      h('li', { 'data-tool': t.name, 'data-enabled': String(t.enabled !== false) },
        h('span', { class: 'mono' }, t.name),
        h('span', { class: 'tool-side' },
          t.tokens ? h('span', { class: 'tool-tokens' }, `≈ ${NUMBER.format(t.tokens)}`, h('span', { class: 'visually-hidden' }, ' tokens')) : null,
          h('span', { class: 'tool-state', 'data-state': t.state }, t.state),
          view.onToolAction ? toolSwitch(s, t, view) : null)))));
}

/** One side of a changed tool: its description and input schema (a part
 * that did not change says so, so the eye goes to what did). */
function definition(title, def, same) {
  return h('div', { class: 'side' },
    h('h4', {}, title),
    def
      ? [h('p', { class: 'description' }, def.description || '(no description)'),
        same.schema
          ? h('p', { class: 'meta schema-same' }, 'Input schema unchanged')
          : h('pre', { class: 'mono schema' }, JSON.stringify(def.inputSchema, null, 2))]
      : h('p', { class: 'description' }, 'Never approved: mcpool has not shown this tool to agents yet.'));
}

/**
 * Tools held back because their description or input schema changed since
 * they were approved (or are new under approveNewTools "ask"): the approved
 * and the current text side by side, with Approve and Keep disabled.
 */
function changedBlock(s, view) {
  const changed = s.tools.filter((t) => t.state === 'changed');
  if (!changed.length) return null;
  const busy = view.busy.has(s.name);
  return h('section', { class: 'changed', 'aria-label': `Changed tools of ${s.name}` }, changed.map((t) =>
    h('div', { class: 'change', 'data-changed': t.name },
      h('h4', {}, h('span', { class: 'mono' }, t.name), t.approved ? ' changed since you approved it' : ' waits for your approval'),
      h('div', { class: 'compare' }, ...(() => {
        const same = {
          schema: Boolean(t.approved) && JSON.stringify(t.approved.inputSchema) === JSON.stringify(t.current.inputSchema),
        };
        return [definition('Approved', t.approved, same), definition('Now', t.current, same)];
      })()),
      view.onToolAction ? h('div', { class: 'actions' },
        h('button', {
          type: 'button', class: 'primary', 'data-key': `approve:${s.name}:${t.name}`, 'data-action': 'approve',
          disabled: busy, onclick: () => view.onToolAction(s.name, t.name, 'approve'),
        }, 'Approve'),
        t.enabled !== false ? h('button', {
          type: 'button', 'data-key': `keep-disabled:${s.name}:${t.name}`, 'data-action': 'keep-disabled',
          disabled: busy, onclick: () => view.onToolAction(s.name, t.name, 'disable'),
        }, 'Keep disabled') : h('span', { class: 'meta' }, 'Kept disabled')) : null)));
}

function actionButtons(s, view) {
  const busy = view.busy.has(s.name);
  const button = (verb, label, primary) => h('button', {
    type: 'button',
    class: primary ? 'primary' : undefined,
    'data-key': `${verb}:${s.name}`,
    'data-action': verb,
    'aria-label': `${label} ${s.name}`,
    disabled: busy,
    'aria-busy': busy ? 'true' : undefined,
    onclick: () => view.onAction(s.name, verb),
  }, label);
  let buttons;
  if (s.status === 'disabled') buttons = [button('enable', 'Enable', true)];
  else if (s.status === 'needs_auth') buttons = [button('login', 'Sign in', true), button('disconnect', 'Disconnect')];
  else buttons = [button('reconnect', 'Reconnect', s.status === 'failed'), button('disconnect', 'Disconnect')];
  if (s.auth && s.auth.signed_in) buttons.push(button('logout', 'Sign out'));
  if (view.logButton) buttons.push(view.logButton(s));
  // Edit, Duplicate and Remove (servers.js) when the page can edit.
  if (view.entryButtons) buttons.push(...view.entryButtons(s));
  return h('div', { class: 'actions' }, buttons);
}

/** The card of one server snapshot (an item of GET /api/servers). */
export function card(s, view) {
  const status = STATUS_TEXT[s.status] || s.status;
  const actionError = view.actionErrors.get(s.name);
  const targeted = view.target === s.name;
  return h('article', {
    class: targeted ? 'card targeted' : 'card',
    'data-server': s.name,
    'data-status': s.status,
    'data-key': `server:${s.name}`,
    'aria-labelledby': `name-${s.name}`,
    'aria-current': targeted ? 'true' : undefined,
    tabindex: targeted ? '-1' : undefined,
  },
    h('div', { class: 'card-head' },
      h('h3', { id: `name-${s.name}` }, s.name),
      h('span', { class: 'badge', 'data-status': s.status }, status)),
    h('p', { class: 'meta' }, `${s.transport || 'server'}${s.protocol ? ` · MCP ${s.protocol}` : ''} · ${plural(s.tool_count ?? s.tools.length, 'tool')}`,
      s.tool_tokens === undefined ? null : [' · ', h('span', {
        class: 'card-tokens', 'data-role': 'tool-tokens', title: 'What its tools (on and approved) add to a full tool listing, estimated',
      }, approx(s.tool_tokens))]),
    facts(s, view.now),
    errorBlock(s, view),
    stderrBlock(s, view),
    toolWarningsBlock(s, view),
    changedBlock(s, view),
    cardPlots(view.plots && view.plots[s.name], h),
    toolsBlock(s, view),
    actionError ? h('p', { class: 'action-error', role: 'alert' }, actionError) : null,
    actionButtons(s, view));
}

/**
 * Builds the server cards from `view`: {servers, now, open: Set of open
 * <details> keys, busy: Set of server names, actionErrors: Map, target:
 * the server the page was opened at (or null), onToggle, onAction}.
 * Nothing else is read.
 */
export function render(view) {
  if (!view.servers.length) {
    return [h('p', { class: 'empty' }, 'No servers configured. Add one here, add some to the config file, or run `mcpool import`.')];
  }
  return view.servers.map((s) => card(s, view));
}

/**
 * The config file's problems from GET /api/config: a file that could not be
 * read (the running servers are kept) and each entry left out or repeated,
 * by file, server and field. Empty when all is well.
 */
export function renderConfig(config) {
  const items = [config.file_error, ...(config.problems || [])].filter(Boolean);
  if (!items.length) return [];
  const errors = items.filter((p) => p.severity === 'error').length;
  const title = errors
    ? `The config file has ${items.length === 1 ? 'a problem' : `${items.length} problems`}`
    : `The config file has ${items.length === 1 ? 'a warning' : `${items.length} warnings`}`;
  return [
    h('h2', { id: 'config-title' }, title),
    config.path ? h('p', { class: 'config-path' }, h('code', {}, config.path)) : null,
    config.file_error ? h('p', {}, 'mcpool keeps running the servers it had until the file is fixed.') : null,
    h('ul', {}, items.map((p) => h('li', { class: `problem ${p.severity}` },
      h('span', { class: 'severity' }, p.severity === 'error' ? 'Error' : 'Warning'), ' ',
      p.file && p.file !== config.path ? [h('code', { class: 'problem-file' }, p.file), ' '] : null,
      p.server ? h('strong', {}, p.server) : null, p.server ? ' ' : null,
      p.field ? h('code', {}, p.field) : null, p.field ? ': ' : null,
      p.message))),
  ];
}

// ------------------------------------------------------------------ wiring

/** `#server=NAME` (the tray's notifications open the dashboard so). */
export function targetOf(hash) {
  return new URLSearchParams(String(hash || '').replace(/^#/, '')).get('server');
}

const state = {
  servers: [],
  target: null,
  // The target card still has to be scrolled to (once, not on every update).
  reveal: false,
  open: new Set(),
  busy: new Set(),
  actionErrors: new Map(),
  // The recent calls (GET /api/calls, then each `call` event), newest first.
  calls: [],
  // Per server, GET /api/activity/overview's series and status band.
  plots: {},
  // GET /api/tools/listing (null until it answers).
  listing: null,
  // The shown answer of the search box.
  search: { query: '', tools: [] },
  // A focused control that was disabled while busy: focused again after.
  refocus: null,
};
let retryTimer = null;

function $(id) { return document.getElementById(id); }

function notice(text) {
  const el = $('notice');
  el.textContent = text || '';
  el.hidden = !text;
}

function setLive(text, offline) {
  const el = $('live');
  el.textContent = text;
  el.classList.toggle('offline', Boolean(offline));
}

async function api(path, init) {
  const response = await fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' }, ...init });
  if (response.status === 401) {
    notice('This dashboard session has ended. Run `mcpool ui` for a new link.');
    throw new Error('signed out');
  }
  return response;
}

function onToggle(event) {
  const key = event.currentTarget.dataset.key;
  if (event.currentTarget.open) state.open.add(key);
  else state.open.delete(key);
}

function view() {
  return { ...state, now: Date.now(), onToggle, onAction, onToolAction, entryButtons: editor.buttons, logButton: logs.button };
}

/** Runs a re-render without losing the keyboard's place. */
function keepingFocus(paintIt) {
  const active = document.activeElement;
  const focused = (active && active !== document.body && active.dataset && active.dataset.key) || state.refocus;
  paintIt();
  if (!focused || (document.activeElement && document.activeElement !== document.body)) return;
  const again = document.querySelector(`[data-key="${CSS.escape(focused)}"]`);
  if (again && !again.disabled) {
    again.focus();
    state.refocus = null;
  } else state.refocus = again ? focused : null;
}

// The "Find a tool" box (ui/search.js): its answer goes to state.search.
const search = toolSearch({ api, state, view, keepingFocus });

// Add, Edit, Duplicate, Remove (ui/servers.js) and Browse (ui/registry.js).
const editor = serverEditor({ api, refresh: () => refresh() });
const logs = logsPanel({ api });
const browser = registryBrowser({ api, openForm: editor.open });

// The Activity view (ui/history.js): the log, filtered, live.
const history = activityView({ api, servers: () => state.servers });

/** The cards' plots: calls per minute and the 24-hour status band. */
async function refreshPlots() {
  try {
    const response = await api('/api/activity/overview?minutes=60&hours=24');
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const body = await response.json();
    state.plots = body.servers || {};
    paint();
  } catch (e) {
    if (e.message !== 'signed out') state.plots = {};
  }
}

let plotsPending = null;
function refreshPlotsSoon() {
  if (plotsPending) return;
  plotsPending = setTimeout(() => { plotsPending = null; refreshPlots(); history.loadTools(); }, 1000);
}

// Pointing agents at mcpool (ui/connect.js): the URL, the token, the snippets.
const connect = connectPanel({ api, notice });

function paint() {
  const v = view();
  keepingFocus(() => {
    $('servers').replaceChildren(...render(v));
    $('listing').replaceChildren(...renderListing(state.listing));
  });
  search.paint();
  const target = state.target && document.querySelector(`[data-server="${CSS.escape(state.target)}"]`);
  if (state.reveal && target) {
    state.reveal = false;
    target.scrollIntoView({ block: 'start' });
    target.focus();
  }
}

async function refresh() {
  try {
    const [response, listing] = await Promise.all([api('/api/servers'), loadListing(api)]);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    state.servers = await response.json();
    state.listing = listing;
    history.fillServers();
    paint();
    scheduleRetryRefresh();
    // The results' states and switches follow the same refresh.
    if (state.search.query || $('tool-search').value.trim()) search.run();
  } catch (e) {
    if (e.message !== 'signed out') setLive(`Cannot reach mcpool: ${e.message}`, true);
  }
}

/** Backoff ends without an event: look again when the first one runs out. */
function scheduleRetryRefresh() {
  clearTimeout(retryTimer);
  const waits = state.servers.map((s) => s.retry_in_ms).filter((ms) => ms > 0);
  if (waits.length) retryTimer = setTimeout(refresh, Math.min(...waits) + 250);
}

function paintCalls() {
  $('calls').replaceChildren(...renderCalls(state.calls, Date.now()));
}

async function refreshCalls() {
  try {
    const response = await api('/api/calls');
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    for (const call of await response.json()) state.calls = addCall(state.calls, call);
    paintCalls();
  } catch (e) {
    if (e.message !== 'signed out') notice(`Cannot load the recent calls: ${e.message}`);
  }
}

let pending = null;
function refreshSoon() {
  if (pending) return;
  pending = setTimeout(() => { pending = null; refresh(); }, 50);
}

async function refreshConfig(data) {
  try {
    let config = data;
    if (!config) {
      const response = await api('/api/config');
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      config = await response.json();
    }
    const section = $('config');
    const children = renderConfig(config);
    section.replaceChildren(...children);
    section.hidden = !children.length;
  } catch (e) {
    if (e.message !== 'signed out') notice(`Cannot load the config's state: ${e.message}`);
  }
}

async function onAction(name, verb) {
  state.busy.add(name);
  state.actionErrors.delete(name);
  paint();
  try {
    // Sign-in: the page opens first (a browser allows a pop-up only in the
    // click itself), then goes to the server's authorization page.
    const popup = verb === 'login' ? window.open('about:blank', '_blank') : null;
    const response = await api(`/api/servers/${encodeURIComponent(name)}/${verb}`, { method: 'POST' });
    const body = await response.json().catch(() => ({}));
    if (!response.ok || body.ok === false) {
      if (popup) popup.close();
      state.actionErrors.set(name, body.error || `${verb} failed (HTTP ${response.status})`);
    } else if (verb === 'login' && body.authorize_url) {
      if (popup) {
        popup.opener = null;
        popup.location.href = body.authorize_url;
      }
      else window.open(body.authorize_url, '_blank');
    }
  } catch (e) {
    if (e.message !== 'signed out') state.actionErrors.set(name, `${verb} failed: ${e.message}`);
  } finally {
    state.busy.delete(name);
    await refresh();
  }
}

/** A tool's switch, Approve or Keep disabled. */
async function onToolAction(server, tool, verb) {
  state.busy.add(server);
  state.actionErrors.delete(server);
  paint();
  try {
    const path = `/api/servers/${encodeURIComponent(server)}/tools/${encodeURIComponent(tool)}/${verb}`;
    const response = await api(path, { method: 'POST' });
    const body = await response.json().catch(() => ({}));
    if (!response.ok || body.ok === false) state.actionErrors.set(server, body.error || `${verb} ${tool} failed (HTTP ${response.status})`);
  } catch (e) {
    if (e.message !== 'signed out') state.actionErrors.set(server, `${verb} ${tool} failed: ${e.message}`);
  } finally {
    state.busy.delete(server);
    await refresh();
  }
}

function follow() {
  const events = new EventSource('/api/events');
  events.addEventListener('open', () => {
    setLive('Live', false);
    refresh();
    refreshConfig();
    refreshCalls();
    refreshPlots();
    history.load();
  });
  events.addEventListener('call', (e) => {
    state.calls = addCall(state.calls, JSON.parse(e.data));
    paintCalls();
    history.poke();
    refreshPlotsSoon();
  });
  events.addEventListener('status', () => {
    refreshSoon();
    history.poke();
    refreshPlotsSoon();
  });
  events.addEventListener('tools', refreshSoon);
  events.addEventListener('config', (e) => {
    refreshConfig(JSON.parse(e.data));
    // A reloaded file may change the listing mode or the tools switched off.
    refreshSoon();
  });
  events.addEventListener('error', () => {
    if (events.readyState === EventSource.CLOSED) {
      setLive('Disconnected from mcpool; reload to try again', true);
    } else {
      setLive('Reconnecting to mcpool…', true);
    }
  });
}

function aim() {
  state.target = targetOf(window.location.hash);
  state.reveal = Boolean(state.target);
  document.title = state.target ? `mcpool — ${state.target}` : 'mcpool';
}

function start() {
  aim();
  window.addEventListener('hashchange', () => { aim(); paint(); });
  $('copy-token').addEventListener('click', connect.copyToken);
  $('tool-search').addEventListener('input', search.onInput);
  $('add-server').addEventListener('click', editor.add);
  $('browse-servers').addEventListener('click', browser.toggle);
  $('registry-search').addEventListener('input', browser.onInput);
  // Countdowns and "ago" tick in place; a countdown that ran out refetches.
  setInterval(() => { if (tick(document, Date.now())) refreshSoon(); }, 1000);
  refresh();
  connect.load();
  history.start();
  // The plots move on with the clock even when nothing happens.
  setInterval(refreshPlots, 60_000);
  follow();
}

// The tray window (or a test) can hand a snapshot to render it.
window.mcpool = { render, card, renderSnippets, renderConfig, renderCalls, renderListing, renderResults, targetOf, state, paint };

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
