// What moves on the dashboard: times that tick ("retry in 12 s", "3 min
// ago") and the recent calls agents made (GET /api/calls, the `call` event
// of /api/events). Names and timings only: mcpool never sends arguments or
// results here.

import { h, table } from './lib.js';

/** "12 s", "3 min", "2 h", "4 d": a short span for people. */
export function span(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.floor(hours / 24)} d`;
}

/** A countdown's text: seconds while under ten minutes, so it visibly ticks. */
export function left(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return s < 600 ? `${s} s` : span(ms);
}

/** "just now" or "3 min ago". */
export function ago(ms) {
  return ms < 5000 ? 'just now' : `${span(ms)} ago`;
}

/** A countdown to `iso` (RFC 3339) that the ticker keeps current. */
export function countdown(iso, now) {
  return h('time', { class: 'countdown', datetime: iso, 'data-until': iso }, left(Date.parse(iso) - now));
}

/** A time since `iso` that the ticker keeps current. */
export function since(iso, now) {
  return h('time', { datetime: iso, 'data-since': iso, title: new Date(iso).toLocaleString() }, ago(now - Date.parse(iso)));
}

/**
 * Brings every countdown and "ago" under `root` up to `now`; answers
 * whether a countdown ran out (the server may be tried again: refetch).
 */
export function tick(root, now) {
  let ranOut = false;
  for (const el of root.querySelectorAll('[data-until]')) {
    const ms = Date.parse(el.dataset.until) - now;
    const text = left(ms);
    if (el.textContent !== text) el.textContent = text;
    if (ms <= 0 && !el.dataset.done) {
      el.dataset.done = '1';
      ranOut = true;
    }
  }
  for (const el of root.querySelectorAll('[data-since]')) {
    const text = ago(now - Date.parse(el.dataset.since));
    if (el.textContent !== text) el.textContent = text;
  }
  return ranOut;
}

const OUTCOME_TEXT = {
  ok: 'OK',
  tool_error: 'Tool error',
  unavailable: 'Unavailable',
  refused: 'Refused',
  protocol_error: 'Error',
  cancelled: 'Cancelled',
  timeout: 'Timed out',
  task: 'Task',
  input_required: 'Needs input',
};

function duration(ms) {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}

/** The recent calls panel: newest first, one row per call. */
export function renderCalls(calls, now) {
  if (!calls.length) {
    return [h('p', { class: 'empty', 'data-role': 'no-calls' }, 'No tool calls yet. Calls agents make through mcpool show here: the tool, the server, how long and how it ended (never the arguments or results).')];
  }
  return [table('calls', ['When', 'Tool', 'Server', ['Duration', 'num'], 'Result'],
    calls.map((c) => h('tr', { 'data-call': c.id, 'data-ok': String(c.ok) },
      h('td', {}, since(c.time, now)),
      h('td', { class: 'mono' }, c.tool),
      h('td', {}, c.server),
      h('td', { class: 'num' }, duration(c.duration_ms)),
      h('td', {}, h('span', { class: 'outcome', 'data-outcome': c.outcome }, OUTCOME_TEXT[c.outcome] || c.outcome)))))];
}

/** Keeps the newest `limit` calls, newest first, each once. */
export function addCall(calls, call, limit = 100) {
  if (calls.some((c) => c.id === call.id)) return calls;
  return [call, ...calls].sort((a, b) => b.id - a.id).slice(0, limit);
}
