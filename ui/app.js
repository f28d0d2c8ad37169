// The dashboard's entry point: the page's state and its wiring. It fetches
// what the cards (cards.js) render from (/api/servers; the tool search and
// listing in search.js, the connect snippets in connect.js), follows
// /api/events, and posts the buttons' actions. No framework, no build step;
// no module imports this one.

import { addCall, renderCalls, tick } from './activity.js';
import { card, render, renderConfig } from './cards.js';
import { connectPanel, renderSnippets } from './connect.js';
import { activityView } from './history.js';
import { $, api, coalesce, notice, readJson } from './lib.js';
import { logsPanel } from './logs.js';
import { registryBrowser } from './registry.js';
import { loadListing, renderListing, renderResults, toolSearch } from './search.js';
import { serverEditor } from './servers.js';

/** `#server=NAME` (the tray's notifications open the dashboard so). */
function targetOf(hash) {
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

function setLive(text, offline) {
  const el = $('live');
  el.textContent = text;
  el.classList.toggle('offline', Boolean(offline));
}

function onToggle(event) {
  const key = event.currentTarget.dataset.key;
  if (event.currentTarget.open) state.open.add(key);
  else state.open.delete(key);
}

function view() {
  return { ...state, now: Date.now(), onToggle, onAction, onToolAction, onAllow, entryButtons: editor.buttons, logButton: logs.button };
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
const search = toolSearch({ state, view, keepingFocus });

// Add, Edit, Duplicate, Remove (ui/servers.js) and Browse (ui/registry.js).
const editor = serverEditor({ refresh: () => refresh() });
const logs = logsPanel();
const browser = registryBrowser({ openForm: editor.open });

// The Activity view (ui/history.js): the log, filtered, live.
const history = activityView({ servers: () => state.servers });

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

const refreshPlotsSoon = coalesce(() => { refreshPlots(); history.loadTools(); }, 1000);

// Pointing agents at mcpool (ui/connect.js): the URL, the token, the snippets.
const connect = connectPanel();

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
    const [response, listing] = await Promise.all([api('/api/servers'), loadListing()]);
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

const refreshSoon = coalesce(() => refresh(), 50);

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
    const body = await readJson(response);
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

/**
 * "Allow read", "Allow write", "Allow socket" or "Allow network" on a sandboxed server's
 * card: the grant it was refused goes into its entry, and it restarts.
 */
async function onAllow(name, denied) {
  state.busy.add(name);
  state.actionErrors.delete(name);
  paint();
  try {
    const response = await api(`/api/servers/${encodeURIComponent(name)}/sandbox/allow`, {
      method: 'POST',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
      body: JSON.stringify({ access: denied.access, path: denied.path }),
    });
    const body = await readJson(response);
    if (!response.ok || body.ok === false) state.actionErrors.set(name, body.error || `allowing ${denied.access} failed (HTTP ${response.status})`);
  } catch (e) {
    if (e.message !== 'signed out') state.actionErrors.set(name, `allowing ${denied.access} failed: ${e.message}`);
  } finally {
    state.busy.delete(name);
    await refresh();
  }
}

/** A tool's switch, Approve or Keep disabled, Allow or Keep blocked. */
async function onToolAction(server, tool, verb) {
  state.busy.add(server);
  state.actionErrors.delete(server);
  paint();
  try {
    const path = `/api/servers/${encodeURIComponent(server)}/tools/${encodeURIComponent(tool)}/${verb}`;
    const response = await api(path, { method: 'POST' });
    const body = await readJson(response);
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
