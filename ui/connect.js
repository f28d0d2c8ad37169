// The dashboard's "connect an agent" part: the endpoint URL, the token
// (copied, never shown), each client's snippet from GET /api/connect with
// its "Add to CLIENT" button (POST /api/connect/{client}).

import { $, api, h, notice } from './lib.js';

/** The connect section from GET /api/connect; the token stays masked on screen. */
export function renderSnippets(connect, onCopy, onAdd) {
  // The token shows only when copied: as a bearer header, or in the stdio
  // bridge's environment (Claude Desktop).
  const mask = (text) => text.replace(/Bearer [^"\s]+/g, 'Bearer ••••••••')
    .replace(/("MCPOOL_TOKEN":\s*")[^"]+/g, '$1••••••••');
  return connect.snippets.map((s) => {
    // Where the "Add to" button says what it did (or why it could not).
    const result = h('p', { class: 'add-result', 'data-result': s.client, role: 'status' });
    const add = s.found && onAdd
      ? h('button', { type: 'button', 'data-key': `add:${s.client}`, onclick: (e) => onAdd(s, e.currentTarget, result) },
        `Add to ${s.label}`)
      : null;
    return h('details', { 'data-client': s.client, 'data-found': String(Boolean(s.found)) },
      h('summary', {}, s.found ? `${s.label} (on this machine)` : s.label),
      h('pre', { class: 'mono' }, mask(s.text)),
      h('div', { class: 'snippet-actions' },
        h('button', { type: 'button', 'data-key': `copy:${s.client}`, onclick: (e) => onCopy(s.text, e.currentTarget) },
          `Copy for ${s.label}`),
        add),
      result);
  });
}

async function copy(text, button) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Copy failed';
  }
  setTimeout(() => { button.textContent = label; }, 1500);
}

/** The connect panel: errors go to the page's notice. Answers {load, copyToken}. */
export function connectPanel() {
  async function copyToken(event) {
    const button = event.currentTarget;
    try {
      const response = await api('/api/token');
      const { token } = await response.json();
      await copy(token, button);
    } catch (e) {
      if (e.message !== 'signed out') notice(`Cannot copy the token: ${e.message}`);
    }
  }

  async function load() {
    try {
      const response = await api('/api/connect');
      const connect = await response.json();
      $('endpoint-url').textContent = connect.url;
      $('copy-url').onclick = (e) => copy(connect.url, e.currentTarget);
      // "Add to CLIENT": mcpool writes the entry into that client's config
      // (a backup first; nothing else in the file changes).
      const addTo = async (s, button, out) => {
        button.disabled = true;
        try {
          const response = await api(`/api/connect/${encodeURIComponent(s.client)}`, { method: 'POST' });
          const body = await response.json();
          if (!response.ok) out.textContent = body.error || `Failed (${response.status}).`;
          else if (body.up_to_date) out.textContent = `${s.label} already uses mcpool (${body.path}).`;
          else {
            out.textContent = `Added mcpool to ${body.path}${body.backup ? ` (the old file is in ${body.backup})` : ''}. `
              + `Restart ${s.label} to pick it up.`;
          }
        } catch (e) {
          if (e.message !== 'signed out') out.textContent = `Failed: ${e.message}`;
        } finally {
          button.disabled = false;
        }
      };
      $('snippets').replaceChildren(...renderSnippets(connect, copy, addTo));
    } catch (e) {
      if (e.message !== 'signed out') notice(`Cannot load the connect snippets: ${e.message}`);
    }
  }

  return { load, copyToken };
}
