// The dashboard's server editing: the Add / Edit / Duplicate dialog around
// the form of server_form.js, its Test button (one connection, nothing
// added), Save and the Remove dialog (with the server's keyring entries).

import { $, api, h, readJson } from './lib.js';
import { clearErrors, collect, entrySecrets, entryToModel, renderForm, showError } from './server_form.js';

/**
 * The server editing of the page: `refresh()` re-fetches the cards; what was done shows in
 * #servers-status. Answers {add, open, edit, duplicate,
 * remove, buttons}: `open(model)` shows the form of a model (registry.js
 * uses it), `buttons(server)` a card's Edit, Duplicate and Remove.
 */
export function serverEditor({ refresh }) {
  const dialog = $('server-dialog');
  const say = (text, bad) => {
    const el = $('servers-status');
    el.textContent = text;
    el.classList.toggle('bad', Boolean(bad));
    el.hidden = !text;
  };
  const removeDialog = $('remove-dialog');
  let testing = null;
  // The control that opened the form gets the focus back when it closes.
  let opener = null;

  function close() {
    if (testing) testing.abort();
    testing = null;
    if (dialog.open) dialog.close();
  }
  dialog.addEventListener('close', () => {
    if (testing) testing.abort();
    testing = null;
    dialog.replaceChildren();
    if (opener && opener.isConnected) opener.focus();
    opener = null;
  });

  function open(model) {
    if (!dialog.open) opener = document.activeElement;
    const form = renderForm(model, { test, save, cancel: close });
    dialog.replaceChildren(form);
    if (!dialog.open) dialog.showModal();
    const first = form.querySelector('[data-field="name"]');
    first.focus();
    if (model.mode === 'duplicate') first.select();
    return form;
  }

  /** The Test button: the typed entry connected once, nothing added. */
  async function test(form) {
    if (!form.reportValidity()) return;
    clearErrors(form);
    const out = form.querySelector('[data-role="test-result"]');
    const button = form.querySelector('[data-role="test"]');
    if (testing) testing.abort();
    const abort = new AbortController();
    testing = abort;
    const limit = Number(collect(form).entry.timeout) || 30000;
    const started = Date.now();
    const progress = () => {
      const s = Math.floor((Date.now() - started) / 1000);
      out.replaceChildren(h('p', { class: 'testing', 'data-role': 'testing' },
        `Testing: starting the server and asking for its tools… ${s} s (gives up after ${Math.round(limit / 1000)} s)`));
    };
    progress();
    const ticker = setInterval(progress, 1000);
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    try {
      const response = await api('/api/servers/test', {
        method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(collect(form)), signal: abort.signal,
      });
      const body = await readJson(response);
      if (abort.signal.aborted) return;
      if (response.status === 400) {
        out.replaceChildren();
        showError(form, body.field, body.error || 'The entry was refused.');
      } else if (!response.ok) {
        out.replaceChildren(h('p', { class: 'test-failed', 'data-role': 'test-error' }, body.error || `The test failed (HTTP ${response.status}).`));
      } else if (body.ok) {
        const tools = body.tools || [];
        out.replaceChildren(
          h('p', { class: 'test-ok', 'data-role': 'test-ok' }, `It works: ${tools.length === 1 ? '1 tool' : `${tools.length} tools`}.`),
          tools.length ? h('ul', { class: 'test-tools' }, tools.map((t) => h('li', { 'data-tool': t.name },
            h('span', { class: 'mono' }, t.name), t.description ? h('span', { class: 'meta' }, ` ${t.description}`) : null))) : null);
      } else {
        out.replaceChildren(h('p', { class: 'test-failed', 'data-role': 'test-error' },
          body.error || 'The server did not start.',
          body.needs_auth ? ' It needs a sign-in: save it, then use Sign in on its card.' : ''));
      }
    } catch (e) {
      if (e.name === 'AbortError' || e.message === 'signed out') return;
      out.replaceChildren(h('p', { class: 'test-failed', 'data-role': 'test-error' }, `The test failed: ${e.message}`));
    } finally {
      clearInterval(ticker);
      if (testing === abort) testing = null;
      button.disabled = false;
      button.removeAttribute('aria-busy');
    }
  }

  async function save(form) {
    if (!form.reportValidity()) return;
    clearErrors(form);
    const model = form.model;
    const body = collect(form);
    const editing = model.mode === 'edit';
    if (editing && model.revision) body.revision = model.revision;
    const button = form.querySelector('[data-role="save"]');
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    try {
      const path = editing ? `/api/servers/${encodeURIComponent(model.original)}` : '/api/servers';
      const response = await api(path, {
        method: editing ? 'PUT' : 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(body),
      });
      const answer = await readJson(response);
      if (response.ok && answer.ok !== false) {
        close();
        const name = answer.name || body.name;
        const stored = (answer.secrets || []).length ? ` Secrets in the keyring: ${answer.secrets.join(', ')}.` : '';
        const backup = answer.backup ? ` The previous file is in ${answer.backup}.` : '';
        say(`${editing ? 'Saved' : 'Added'} ${name}.${stored}${backup}`);
        refresh();
        return;
      }
      if (response.status === 409) {
        const reload = h('button', { type: 'button', 'data-role': 'reload' }, 'Reload the entry');
        reload.addEventListener('click', () => edit(model.original));
        showError(form, null, answer.error || 'The config file changed meanwhile.', editing ? reload : null);
      } else {
        showError(form, answer.field, answer.error || `Not saved (HTTP ${response.status}).`);
      }
    } catch (e) {
      if (e.message !== 'signed out') showError(form, null, `Not saved: ${e.message}`);
    } finally {
      button.disabled = false;
      button.removeAttribute('aria-busy');
    }
  }

  /** GET /api/servers/{name}/entry, or throws the sentence. */
  async function loadEntry(name) {
    const response = await api(`/api/servers/${encodeURIComponent(name)}/entry`);
    const body = await readJson(response);
    if (!response.ok) throw new Error(body.error || `Cannot read ${name}'s entry (HTTP ${response.status}).`);
    return body;
  }

  async function edit(name) {
    try {
      const body = await loadEntry(name);
      open(entryToModel(body.name || name, body.entry, { mode: 'edit', secrets: body.secrets, revision: body.revision, original: name }));
    } catch (e) {
      if (e.message !== 'signed out') say(e.message, true);
    }
  }

  async function duplicate(name) {
    try {
      const body = await loadEntry(name);
      // References stay references: the copy reads the same keyring entries.
      open(entryToModel(`${name}-copy`, body.entry, { mode: 'duplicate', secrets: body.secrets, original: name }));
    } catch (e) {
      if (e.message !== 'signed out') say(e.message, true);
    }
  }

  async function remove(name) {
    let secrets = [];
    try {
      const body = await loadEntry(name);
      secrets = entrySecrets(body.entry, body.secrets);
    } catch (e) {
      if (e.message === 'signed out') return;
      say(e.message, true);
      return;
    }
    const returnTo = document.activeElement;
    const box = h('input', { type: 'checkbox', id: 'remove-secrets', 'data-role': 'remove-secrets' });
    const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
    const confirm = h('button', { type: 'button', class: 'danger', 'data-role': 'confirm-remove' }, `Remove ${name}`);
    const cancel = h('button', { type: 'button', 'data-role': 'cancel' }, 'Cancel');
    removeDialog.replaceChildren(h('div', { class: 'remove-form' },
      h('h2', { id: 'remove-title' }, `Remove ${name}?`),
      h('p', {}, `mcpool stops ${name} and takes its entry out of the config file (a backup is kept).`),
      secrets.length ? h('p', { class: 'check' }, box, ' ', h('label', { for: 'remove-secrets' }, `Also remove its keyring entries: ${secrets.join(', ')}`)) : null,
      error,
      h('div', { class: 'actions' }, confirm, cancel)));
    removeDialog.setAttribute('aria-labelledby', 'remove-title');
    const done = () => { if (removeDialog.open) removeDialog.close(); };
    removeDialog.addEventListener('close', () => {
      // A removed server's card is gone: the keyboard goes to Add server.
      if (returnTo && returnTo.isConnected) returnTo.focus();
      else $('add-server').focus();
    }, { once: true });
    cancel.addEventListener('click', done);
    confirm.addEventListener('click', async () => {
      confirm.disabled = true;
      try {
        const query = secrets.length && box.checked ? '?secrets=remove' : '';
        const response = await api(`/api/servers/${encodeURIComponent(name)}${query}`, { method: 'DELETE' });
        const body = await readJson(response);
        if (!response.ok || body.ok === false) {
          error.textContent = body.error || `Not removed (HTTP ${response.status}).`;
          error.hidden = false;
          return;
        }
        done();
        const gone = (body.removed_secrets || []).length ? ` Keyring entries removed: ${body.removed_secrets.join(', ')}.` : '';
        say(`Removed ${name}.${gone}${body.backup ? ` The previous file is in ${body.backup}.` : ''}`);
        refresh();
      } catch (e) {
        if (e.message !== 'signed out') {
          error.textContent = `Not removed: ${e.message}`;
          error.hidden = false;
        }
      } finally {
        confirm.disabled = false;
      }
    });
    removeDialog.showModal();
    cancel.focus();
  }

  /** A card's Edit, Duplicate and Remove buttons. */
  function buttons(s) {
    const button = (verb, label, run) => h('button', {
      type: 'button', 'data-key': `${verb}:${s.name}`, 'data-action': verb, 'aria-label': `${label} ${s.name}`,
      onclick: () => run(s.name),
    }, label);
    return [button('edit', 'Edit', edit), button('duplicate', 'Duplicate', duplicate), button('remove', 'Remove', remove)];
  }

  return { add: () => open(entryToModel('', {})), open, edit, duplicate, remove, buttons };
}
