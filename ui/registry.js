// The dashboard's "Browse servers": search the MCP registries mcpool is
// configured with (GET /api/registry/search) as you type, stale answers
// dropped, and open the Add form pre-filled from a picked server's entry
// template (GET /api/registry/server) with one input per variable. Every
// field of the answers may be missing: the registries are not ours.

import { $, api, h, latest, readJson } from './lib.js';
import { entryToModel } from './server_form.js';

export const REGISTRY_LIMIT = 20;

/** A thing a server needs, as a short phrase (a string or an object). */
function need(n) {
  if (n === null || n === undefined) return null;
  if (typeof n !== 'object') return String(n);
  return n.name || n.description || n.runtime || n.command || JSON.stringify(n);
}

/** One found server; `onPick(server)` opens its form. */
function result(s, onPick) {
  const needs = (Array.isArray(s.needs) ? s.needs : []).map(need).filter(Boolean);
  const kind = s.kind === 'remote' ? 'remote' : s.kind === 'local' ? 'local' : null;
  return h('li', { class: 'result registry-result', 'data-name': s.name || '', 'data-kind': kind || '' },
    h('div', { class: 'result-head' },
      h('span', { class: 'mono result-name' }, s.name || '(unnamed)'),
      s.version ? h('span', { class: 'result-server' }, `v${String(s.version).replace(/^v/, '')}`) : null,
      kind ? h('span', { class: 'tool-state', 'data-state': kind === 'local' ? 'cached' : 'live' }, kind) : null,
      s.title ? h('span', { class: 'result-server' }, s.title) : null,
      h('span', { class: 'result-side' },
        h('button', { type: 'button', 'data-key': `registry:${s.name}`, 'aria-label': `Add ${s.name}…`, onclick: () => onPick(s) }, 'Add…'))),
    h('p', { class: 'description' }, s.description || '(no description)'),
    s.problem ? h('p', { class: 'meta fact-warn', 'data-role': 'problem' }, s.problem) : null,
    needs.length ? h('p', { class: 'meta', 'data-role': 'needs' }, `Needs: ${needs.join(', ')}`) : null,
    s.registry ? h('p', { class: 'meta' }, `From ${s.registry}`) : null);
}

/**
 * The answer shown, `answer` = {query, servers, offline, error} (or null):
 * a status line, the offline line when the registry was not reached, and
 * the items.
 */
export function renderRegistry(answer, onPick) {
  if (!answer || !answer.query) return { status: '', offline: '', items: [] };
  const servers = answer.servers || [];
  const offline = answer.offline ? `Registry unreachable: ${answer.error || 'no answer'}; showing the last results` : '';
  if (answer.error && !answer.offline) return { status: `The search failed: ${answer.error}`, offline: '', items: [] };
  const status = servers.length ? `${servers.length === 1 ? '1 server' : `${servers.length} servers`} found`
    : `No server matches “${answer.query}”.`;
  return { status, offline, items: servers.map((s) => result(s, onPick)) };
}

/**
 * The Add form's model from GET /api/registry/server: the entry template
 * with its variables. A variable no template value mentions as `{NAME}`
 * gets a row of its target (env, header) or an argument of its own.
 */
export function registryModel(detail) {
  const entry = JSON.parse(JSON.stringify(detail.entry || {}));
  const variables = (Array.isArray(detail.variables) ? detail.variables : []).filter((v) => v && v.name);
  const text = JSON.stringify(entry);
  for (const v of variables) {
    if (text.includes(`{${v.name}}`)) continue;
    const placeholder = `{${v.name}}`;
    if (v.target === 'header') entry.headers = { ...(entry.headers || {}), [v.name]: placeholder };
    else if (v.target === 'arg') entry.args = [...(entry.args || []), placeholder];
    else entry.env = { ...(entry.env || {}), [v.name]: placeholder };
  }
  const fallback = String(detail.name || '').split('/').pop() || '';
  const model = entryToModel(detail.suggested_name || fallback, entry, { mode: 'add' });
  // A row made of variables is filled from their inputs, not shown as a row.
  const mentioned = (value) => variables.filter((v) => value.includes(`{${v.name}}`)).map((v) => v.name);
  const where = {};
  for (const group of ['env', 'headers']) {
    model.templated[group] = model[group].filter((row) => !row.ref && mentioned(row.value).length)
      .map((row) => ({ key: row.key, value: row.value, variables: mentioned(row.value) }));
    model[group] = model[group].filter((row) => row.ref || !mentioned(row.value).length);
    for (const row of model.templated[group]) {
      for (const name of row.variables) (where[name] ||= []).push(`${group === 'env' ? 'the environment variable' : 'the header'} ${row.key}`);
    }
  }
  for (const name of variables.map((v) => v.name)) {
    if ((entry.args || []).some((a) => String(a).includes(`{${name}}`))) (where[name] ||= []).push('an argument');
    if (String(entry.url || '').includes(`{${name}}`)) (where[name] ||= []).push('a part of the URL');
  }
  model.variables = variables.map((v) => ({
    name: v.name, description: v.description || '', required: Boolean(v.required), secret: Boolean(v.secret),
    default: v.default === undefined || v.default === null ? '' : String(v.default), format: v.format || '',
    sets: (where[v.name] || []).join(', '), target: v.target || '', choices: Array.isArray(v.choices) ? v.choices.map(String) : [],
  }));
  model.choices = Array.isArray(detail.choices) ? detail.choices.filter((c) => c && c.choice) : [];
  model.choice = detail.choice || null;
  model.runtime = detail.runtime || null;
  model.source = [detail.name, detail.version].filter(Boolean).join(' ') || null;
  return model;
}

/**
 * The browse panel (#registry: the box #registry-search, #registry-status,
 * #registry-offline, #registry-results): `openForm(model)` shows the Add
 * form. Answers {toggle, run, onInput}.
 */
export function registryBrowser({ openForm }) {
  const searching = latest();
  let answer = null;

  function paint() {
    const { status, offline, items } = renderRegistry(answer, pick);
    $('registry-status').textContent = status;
    $('registry-offline').textContent = offline;
    $('registry-offline').hidden = !offline;
    $('registry-results').replaceChildren(...items);
  }

  async function run() {
    const query = $('registry-search').value.trim();
    if (!query) {
      searching.stop();
      answer = null;
      paint();
      return;
    }
    const next = await searching.ask(async (signal) => {
      const response = await api(`/api/registry/search?q=${encodeURIComponent(query)}&limit=${REGISTRY_LIMIT}`, { signal });
      const body = await readJson(response);
      return response.ok
        ? { query, servers: body.servers || [], offline: Boolean(body.offline), error: body.error || null }
        : { query, servers: [], error: body.error || `HTTP ${response.status}` };
    }, (e) => ({ query, servers: [], error: e.message }));
    if (!next) return;
    answer = next;
    paint();
  }

  function onInput(event) {
    if (!event.currentTarget.value.trim()) run();
    else searching.soon(run, 200);
  }

  async function pick(s, choice) {
    const status = $('registry-status');
    status.textContent = `Loading ${s.name}…`;
    try {
      const params = new URLSearchParams({ name: s.name || '' });
      if (s.version) params.set('version', s.version);
      if (choice) params.set('choice', choice);
      const response = await api(`/api/registry/server?${params}`);
      const body = await readJson(response);
      if (!response.ok) {
        status.textContent = body.error || `Cannot load ${s.name} (HTTP ${response.status}).`;
        return;
      }
      paint();
      const model = registryModel({ version: s.version, ...body });
      model.onChoice = (next) => pick(s, next);
      openForm(model);
    } catch (e) {
      if (e.message !== 'signed out') status.textContent = `Cannot load ${s.name}: ${e.message}`;
    }
  }

  function toggle(event) {
    const panel = $('registry');
    panel.hidden = !panel.hidden;
    event.currentTarget.setAttribute('aria-expanded', String(!panel.hidden));
    if (!panel.hidden) $('registry-search').focus();
  }

  return { toggle, run, onInput };
}
