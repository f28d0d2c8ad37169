// The dashboard's "Find a tool" box and each endpoint's listing summary:
// what GET /api/tools/listing says each aggregated endpoint sends agents,
// and the answers of GET /api/tools/search as you type. The renderers build
// the DOM from data alone; `toolSearch` asks for the box's query.

import { STATUS_TEXT, toolSwitch } from './cards.js';
import { $, api, approx, h, latest, plural, readJson } from './lib.js';

/** The most results one search asks for. */
export const SEARCH_LIMIT = 20;

/**
 * What each aggregated endpoint lists to agents (GET /api/tools/listing):
 * its toolListing mode and what that sends now, with the full listing's
 * estimated cost when it sends less. Empty without the data.
 */
export function renderListing(listing) {
  return ((listing && listing.endpoints) || []).map((e) => {
    const mode = e.mode === 'auto' ? `toolListing auto (budget ${approx(e.budget)})` : `toolListing ${e.mode}`;
    const sends = e.sent === 'all'
      ? `sends all ${plural(e.sent_tools, 'tool')}, ${approx(e.sent_tokens)}`
      : `sends search: ${plural(e.sent_tools, 'tool')}, ${approx(e.sent_tokens)} (full listing: ${plural(e.full_tools, 'tool')}, ${approx(e.full_tokens)})`;
    return h('p', { class: 'listing', 'data-endpoint': e.path, 'data-mode': e.mode, 'data-sent': e.sent },
      h('code', {}, e.path), `: ${mode}: ${sends}`);
  });
}

/** One tool the search found: where it is, its state and its switch (the
 * tools mcpool adds itself, `mcpool__*`, belong to no server: no switch). */
function result(r, view) {
  const error = view.actionErrors.get(r.server);
  const switchable = view.onToolAction && view.servers.some((s) => s.name === r.server);
  return h('li', { class: 'result', 'data-tool': r.name, 'data-server': r.server, 'data-state': r.state, 'data-enabled': String(r.enabled !== false) },
    h('div', { class: 'result-head' },
      h('span', { class: 'mono result-name' }, r.name),
      h('span', { class: 'result-server' }, 'on ', h('strong', {}, r.server)),
      h('span', { class: 'badge', 'data-status': r.status }, STATUS_TEXT[r.status] || r.status),
      h('span', { class: 'tool-state', 'data-state': r.state }, r.state),
      h('span', { class: 'result-side' },
        h('span', { class: 'result-tokens' }, approx(r.tokens)),
        switchable ? toolSwitch({ name: r.server }, { name: r.tool, enabled: r.enabled }, view, 'result') : null,
        !switchable && r.server === 'mcpool' ? h('span', { class: 'meta', 'data-role': 'builtin' }, 'built into mcpool') : null)),
    h('p', { class: 'description' }, r.description || '(no description)'),
    error ? h('p', { class: 'action-error' }, error) : null);
}

/**
 * The search box's answer, `view.search` = {query, tools (of GET
 * /api/tools/search), error}: a status line and the result items.
 */
export function renderResults(view) {
  const { query, tools, error } = view.search;
  if (!query) return { status: '', items: [] };
  if (error) return { status: `The search failed: ${error}`, items: [] };
  if (!tools.length) return { status: `No tool matches “${query}”.`, items: [] };
  const status = tools.length >= SEARCH_LIMIT ? `The ${SEARCH_LIMIT} best matches` : `${plural(tools.length, 'tool')} found`;
  return { status, items: tools.map((r) => result(r, view)) };
}

/** GET /api/tools/listing, or null: the cards do without it. */
export async function loadListing() {
  try {
    const response = await api('/api/tools/listing');
    return response.ok ? await response.json() : null;
  } catch {
    return null;
  }
}

/**
 * The search box (#tool-search, its status line #tool-search-status and
 * the list #tool-results): the answer goes to `state.search`, `view()` is what the results
 * render from and `keepingFocus(paintIt)` repaints without losing the
 * keyboard's place. Answers {run, onInput, paint}: `run` asks now (an
 * older query's answer is dropped), `onInput` is the box's input listener,
 * `paint` shows `state.search`.
 */
export function toolSearch({ state, view, keepingFocus }) {
  const searching = latest();

  function paint() {
    keepingFocus(() => {
      const { status, items } = renderResults(view());
      $('tool-search-status').textContent = status;
      $('tool-results').replaceChildren(...items);
    });
  }

  /** Asks for the box's query; an older query's answer is dropped. */
  async function run() {
    const query = $('tool-search').value.trim();
    if (!query) {
      searching.stop();
      state.search = { query: '', tools: [] };
      paint();
      return;
    }
    const answer = await searching.ask(async (signal) => {
      const response = await api(`/api/tools/search?q=${encodeURIComponent(query)}&limit=${SEARCH_LIMIT}`, { signal });
      const body = await readJson(response);
      return response.ok ? { query, tools: body.tools || [] } : { query, tools: [], error: body.error || `HTTP ${response.status}` };
    }, (e) => ({ query, tools: [], error: e.message }));
    if (!answer) return;
    state.search = answer;
    paint();
  }

  // Results as you type: asked 150 ms after the last keystroke.
  function onInput(event) {
    if (!event.currentTarget.value.trim()) run();
    else searching.soon(run, 150);
  }

  return { run, onInput, paint };
}
