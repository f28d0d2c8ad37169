// The dashboard's server logs: a card's Logs button opens a dialog with the
// server's lines (GET /api/servers/NAME/logs: its stderr and mcpool's own
// lines about it, told apart), following new ones as they are written
// (/api/servers/NAME/logs/stream) unless the reader scrolled up, a filter
// asked of the server as you type (stale answers dropped) and a Download
// link for the whole retained log.

import { api, h, latest, readJson } from './lib.js';

/** Lines asked for at each opening or filter, and the most kept on screen. */
export const LOG_LIMIT = 1000;
const KEEP = 2000;

/** One line of the log (an item of the API's `lines`) as a row. */
export function logLine(line) {
  const source = line.source === 'mcpool' ? `mcpool ${line.level || ''}`.trim() : 'stderr';
  return h('div', { class: `log-line log-${line.source}${line.level ? ` log-${line.level}` : ''}`, 'data-source': line.source },
    h('time', { datetime: line.time, title: line.time }, shortTime(line.time)),
    h('span', { class: 'log-source' }, source),
    h('span', { class: 'log-text' }, line.text));
}

/** "06:01:07.123" of an RFC 3339 time, in the reader's time zone. */
function shortTime(time) {
  const d = new Date(time);
  if (Number.isNaN(d.getTime())) return time;
  const two = (n) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/**
 * The log panel of the page. Answers {open(name), close(), button(server)}:
 * `button` is a card's Logs button.
 */
export function logsPanel() {
  const dialog = h('dialog', { id: 'logs-dialog', class: 'form-dialog logs-dialog', 'aria-labelledby': 'logs-title' });
  const title = h('h2', { id: 'logs-title' });
  const search = h('input', {
    type: 'search', id: 'logs-search', placeholder: 'Filter lines', 'aria-label': 'Filter the log lines', autocomplete: 'off',
  });
  const download = h('a', { id: 'logs-download', class: 'button' }, 'Download');
  const closeButton = h('button', { type: 'button', id: 'logs-close' }, 'Close');
  const status = h('p', { id: 'logs-status', class: 'logs-status', role: 'status' });
  const lines = h('div', { id: 'logs-lines', class: 'log-lines', role: 'log', tabindex: '0', 'aria-label': 'Log lines' });
  dialog.append(title, h('div', { class: 'logs-bar' }, search, download, closeButton), status, lines);
  document.body.append(dialog);

  let server = null;
  let stream = null;
  const loading = latest();
  // Lines streamed while a load is under way, added after it if newer.
  let waiting = null;
  let shown = 0;
  let truncated = false;
  let opener = null;

  const query = () => search.value.trim();
  const matches = (line) => !query() || line.text.toLowerCase().includes(query().toLowerCase());
  const atBottom = () => lines.scrollTop + lines.clientHeight >= lines.scrollHeight - 8;

  function say() {
    const what = `${shown} line${shown === 1 ? '' : 's'}`;
    status.textContent = query()
      ? `${what} containing “${query()}”${truncated ? ' (the newest ones)' : ''}`
      : `${what}${truncated ? ' (the newest ones)' : ''}`;
  }

  function add(items, follow) {
    lines.append(...items.map(logLine));
    shown += items.length;
    while (lines.childElementCount > KEEP) {
      lines.firstElementChild.remove();
      shown -= 1;
      truncated = true;
    }
    if (follow) lines.scrollTop = lines.scrollHeight;
    say();
  }

  /** Loads the last lines for the filter; an older load's answer is dropped. */
  async function load() {
    waiting = [];
    const name = server;
    const body = await loading.ask(async (signal) => {
      const response = await api(`/api/servers/${encodeURIComponent(name)}/logs?limit=${LOG_LIMIT}&q=${encodeURIComponent(query())}`, { signal });
      const answer = await readJson(response);
      return response.ok ? answer : { lines: [], error: answer.error || `HTTP ${response.status}` };
    }, (e) => ({ lines: [], error: e.message }));
    if (!body || name !== server) return;
    const got = body.lines || [];
    const last = got.length ? got[got.length - 1] : null;
    const later = (waiting || []).filter((l) => !last || l.time > last.time || (l.time === last.time && l.text !== last.text));
    waiting = null;
    lines.replaceChildren();
    shown = 0;
    truncated = Boolean(body.truncated);
    add([...got, ...later.filter(matches)], true);
    if (body.error) status.textContent = body.error;
  }

  function follow(name) {
    if (stream) stream.close();
    stream = new EventSource(`/api/servers/${encodeURIComponent(name)}/logs/stream`);
    stream.addEventListener('line', (event) => {
      let line;
      try { line = JSON.parse(event.data); } catch { return; }
      if (waiting) { waiting.push(line); return; }
      if (matches(line)) add([line], atBottom());
    });
  }

  function open(name) {
    opener = document.activeElement;
    server = name;
    title.textContent = `Logs: ${name}`;
    download.href = `/api/servers/${encodeURIComponent(name)}/logs?download=1`;
    download.setAttribute('download', `${name}.log`);
    search.value = '';
    lines.replaceChildren();
    shown = 0;
    status.textContent = 'Loading…';
    follow(name);
    if (!dialog.open) dialog.showModal();
    search.focus();
    load();
  }

  function close() {
    if (stream) stream.close();
    stream = null;
    server = null;
    loading.stop();
    if (dialog.open) dialog.close();
  }

  // The filter as you type: asked 150 ms after the last keystroke.
  search.addEventListener('input', () => loading.soon(load, 150));
  closeButton.addEventListener('click', close);
  dialog.addEventListener('close', () => {
    if (server) close();
    if (opener && opener.isConnected) opener.focus();
  });

  function button(s) {
    return h('button', {
      type: 'button', 'data-key': `logs:${s.name}`, 'data-action': 'logs', 'aria-label': `Logs of ${s.name}`,
      onclick: () => open(s.name),
    }, 'Logs');
  }

  return { open, close, button };
}
