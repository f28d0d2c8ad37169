// What every dashboard module shares and nothing of the page's own: `$`, the
// DOM builder `h`, numbers for people, the API call and the "latest answer
// wins" of what is asked as you type. A leaf: it imports nothing.

/** The element of the page with this id. */
export function $(id) { return document.getElementById(id); }

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

/**
 * A table in its scrolling box: `columns` are the headings (a name, or
 * `[name, 'num']` for a right-aligned number), `rows` its <tr>s.
 */
export function table(cls, columns, rows) {
  const th = (c) => (Array.isArray(c) ? h('th', { scope: 'col', class: c[1] }, c[0]) : h('th', { scope: 'col' }, c));
  return h('div', { class: 'calls-scroll' },
    h('table', { class: cls }, h('thead', {}, h('tr', {}, columns.map(th))), h('tbody', {}, rows)));
}

const NUMBER = new Intl.NumberFormat('en-US');

/** "1,234". */
export function number(n) {
  return NUMBER.format(n);
}

export function plural(n, word) {
  return `${number(n)} ${word}${n === 1 ? '' : 's'}`;
}

/** "≈ 1,234 tokens": an estimate (mcpool counts the definition's bytes). */
export function approx(tokens) {
  return `≈ ${plural(tokens || 0, 'token')}`;
}

/** The page's error line (#notice); empty hides it. */
export function notice(text) {
  const el = $('notice');
  el.textContent = text || '';
  el.hidden = !text;
}

/**
 * The page's fetch of mcpool's API: the session cookie, JSON asked for. A
 * 401 (the session ended) says so in #notice and throws "signed out",
 * which every caller leaves unsaid.
 */
export async function api(path, init) {
  const response = await fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' }, ...init });
  if (response.status === 401) {
    notice('This dashboard session has ended. Run `mcpool ui` for a new link.');
    throw new Error('signed out');
  }
  return response;
}

/** A response's JSON body, `{}` when it has none. */
export function readJson(response) {
  return response.json().catch(() => ({}));
}

/** `run` once, `ms` after the first of a burst of calls. */
export function coalesce(run, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; run(); }, ms);
  };
}

/**
 * "Latest answer wins" for what is asked as you type. `ask(request,
 * failed)`: `request(signal)` fetches the answer, `failed(error)` makes one
 * of a failure; it aborts the ask before and resolves to the answer, or to
 * null when a newer ask (or `stop`) came first, the request was aborted or
 * the session ended. `soon(run, ms)` runs after `ms` of quiet (a later call
 * restarts the wait), `stop()` drops what is asked or waiting, and
 * `still()` answers a check that no ask began since.
 */
export function latest() {
  let seq = 0;
  let pending = null;
  let timer = null;

  function stop() {
    clearTimeout(timer);
    seq += 1;
    if (pending) pending.abort();
    pending = null;
  }

  function still() {
    const mine = seq;
    return () => mine === seq;
  }

  async function ask(request, failed) {
    stop();
    const current = still();
    const abort = new AbortController();
    pending = abort;
    let answer;
    try {
      answer = await request(abort.signal);
    } catch (e) {
      if (e.name === 'AbortError' || e.message === 'signed out') return null;
      answer = failed(e);
    }
    if (!current()) return null;
    pending = null;
    return answer;
  }

  function soon(run, ms) {
    clearTimeout(timer);
    timer = setTimeout(run, ms);
  }

  return { ask, soon, stop, still };
}
