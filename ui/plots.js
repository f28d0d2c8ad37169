// Small plots drawn by hand in SVG (no chart library, no external
// service): a sparkline of calls per minute with p50/p95 latency lines, and
// a band of a server's statuses with its drops marked. Fed by
// GET /api/activity/overview (the cards) and /api/activity/tools.

import { h } from './lib.js';

const SVG = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c) el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return el;
}

/** "1.2 s", "35 ms". */
export function ms(v) {
  if (v === null || v === undefined) return '–';
  return v < 1000 ? `${Math.round(v)} ms` : `${(v / 1000).toFixed(v < 10000 ? 1 : 0)} s`;
}

/** Points of a polyline over `values` in a w×h box, max at the top. */
export function points(values, w, h, max) {
  const n = values.length;
  if (!n) return '';
  const top = max || Math.max(1, ...values.map((v) => v || 0));
  const step = n > 1 ? w / (n - 1) : 0;
  return values.map((v, i) => `${(i * step).toFixed(1)},${(h - ((v || 0) / top) * (h - 2) - 1).toFixed(1)}`).join(' ');
}

/**
 * A sparkline of one series (an item of /api/activity/overview's
 * `servers.NAME.series` or of /api/activity/tools' `tools`): calls per
 * minute as bars, p50 and p95 latency as two lines on their own scale.
 */
export function sparkline(series, { width = 240, height = 40, label = 'Calls per minute' } = {}) {
  const minutes = (series && series.minutes) || [];
  const calls = minutes.map((m) => m.calls);
  const top = Math.max(1, ...calls);
  const bw = minutes.length ? width / minutes.length : width;
  const bars = minutes.map((m, i) => (m.calls ? s('rect', {
    class: m.errors ? 'bar bar-errors' : 'bar',
    x: (i * bw).toFixed(1), width: Math.max(1, bw - 1).toFixed(1),
    y: (height - (m.calls / top) * height).toFixed(1), height: ((m.calls / top) * height).toFixed(1),
  }, s('title', {}, `${m.calls} call${m.calls === 1 ? '' : 's'}${m.errors ? `, ${m.errors} failed` : ''}; p50 ${ms(m.p50_ms)}, p95 ${ms(m.p95_ms)}`)) : null));
  const lat = Math.max(1, ...minutes.map((m) => m.p95_ms || 0));
  const p50 = minutes.map((m) => m.p50_ms);
  const p95 = minutes.map((m) => m.p95_ms);
  const any = minutes.some((m) => m.p50_ms !== null && m.p50_ms !== undefined);
  const total = series ? series.calls : 0;
  const title = `${label}: ${total} call${total === 1 ? '' : 's'} in the last ${minutes.length} min` +
    (series && series.p50_ms !== null && series.p50_ms !== undefined ? `; p50 ${ms(series.p50_ms)}, p95 ${ms(series.p95_ms)}` : '');
  return s('svg', { class: 'sparkline', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': title, 'data-role': 'sparkline', 'data-calls': total },
    s('title', {}, title),
    bars,
    any ? s('polyline', { class: 'p95', points: points(p95, width, height, lat), fill: 'none' }) : null,
    any ? s('polyline', { class: 'p50', points: points(p50, width, height, lat), fill: 'none' }) : null);
}

const BAND_TEXT = {
  connected: 'Connected', failed: 'Failed', needs_auth: 'Needs sign-in', disabled: 'Disabled', pending: 'Starting', unknown: 'Not running',
};

/** A 24-hour band of statuses (`servers.NAME.band`), drops as ticks. */
export function band(b, { width = 240, height = 10 } = {}) {
  if (!b || !b.spans || !b.spans.length) return null;
  const start = Date.parse(b.start);
  const span = Math.max(1, Date.parse(b.end) - start);
  const x = (iso) => ((Date.parse(iso) - start) / span) * width;
  const hours = Math.round(span / 3_600_000);
  const drops = b.drops || [];
  const label = `Status over the last ${hours} h${drops.length ? `; ${drops.length} drop${drops.length === 1 ? '' : 's'}` : ''}`;
  return s('svg', { class: 'band', viewBox: `0 0 ${width} ${height + 4}`, width, height: height + 4, role: 'img', 'aria-label': label, 'data-role': 'band', 'data-drops': drops.length },
    s('title', {}, label),
    b.spans.map((p) => s('rect', {
      class: `span span-${p.status}`, 'data-status': p.status,
      x: x(p.from).toFixed(1), width: Math.max(0.5, x(p.to) - x(p.from)).toFixed(1), y: 2, height,
    }, s('title', {}, `${BAND_TEXT[p.status] || p.status}: ${new Date(p.from).toLocaleString()} – ${new Date(p.to).toLocaleString()}`))),
    drops.map((d) => s('line', { class: 'drop', x1: x(d).toFixed(1), x2: x(d).toFixed(1), y1: 0, y2: height + 4 },
      s('title', {}, `Dropped at ${new Date(d).toLocaleString()}`))));
}

/** The plots of one card: nothing until the server has activity. */
export function cardPlots(plots) {
  if (!plots) return null;
  const line = plots.series ? sparkline(plots.series) : null;
  const strip = band(plots.band);
  if (!line && !strip) return null;
  const sum = plots.series
    ? `${plots.series.calls} call${plots.series.calls === 1 ? '' : 's'} in the last hour` +
      (plots.series.p50_ms !== null && plots.series.p50_ms !== undefined ? ` · p50 ${ms(plots.series.p50_ms)} · p95 ${ms(plots.series.p95_ms)}` : '')
    : 'No calls in the last hour';
  return h('div', { class: 'card-plots', 'data-role': 'plots' },
    h('p', { class: 'meta plot-summary' }, sum),
    line, strip);
}
