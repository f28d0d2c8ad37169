// The server cards and the config's problems, built from data alone:
// `render(view)` answers the cards of GET /api/servers, `renderConfig` the
// problems of GET /api/config. Nothing here fetches or keeps state.

import { countdown, since } from './activity.js';
import { approx, h, number, plural } from './lib.js';
import { cardPlots } from './plots.js';

export const STATUS_TEXT = {
  connected: 'Connected',
  pending: 'Starting',
  failed: 'Failed',
  needs_auth: 'Needs sign-in',
  disabled: 'Disconnected',
};

// The extensions a server offers, by the names people know them by.
const EXTENSION_NAMES = {
  'io.modelcontextprotocol/ui': 'MCP Apps',
  'io.modelcontextprotocol/tasks': 'tasks',
};

function extensionsNote(extensions) {
  if (!extensions || extensions.length === 0) return null;
  const names = extensions.map((id) => EXTENSION_NAMES[id] || id);
  return [' · ', h('span', {
    class: 'card-extensions', 'data-role': 'extensions', title: `Extensions it offers: ${extensions.join(', ')}`,
  }, names.join(', '))];
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
  const quarantined = count('quarantined');
  if (quarantined) items.push(h('li', { class: 'fact-bad', 'data-role': 'quarantined' }, `${plural(quarantined, 'tool')} held back: the scan found signs of an attack`));
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

/** A folded part of a card; `key` keeps it open or shut across repaints. */
function fold(view, key, attrs, ...children) {
  return h('details', { ...attrs, 'data-key': key, open: view.open.has(key), ontoggle: view.onToggle }, ...children);
}

function errorBlock(s, view) {
  if (!s.error) return null;
  const [first, ...rest] = s.error.split('\n');
  // The cause in one line (the stderr excerpt's telling line), the whole error folded.
  return fold(view, `error:${s.name}`, { class: 'error' },
    h('summary', { 'data-role': 'cause' }, s.cause || first || 'Error'),
    h('pre', { class: 'mono stderr' }, rest.length ? s.error : first));
}

/** A local server's last stderr lines, redacted by mcpool; folded. */
function stderrBlock(s, view) {
  const lines = s.stderr_tail || [];
  if (!lines.length) return null;
  return fold(view, `stderr:${s.name}`, { class: 'stderr-tail' },
    h('summary', {}, `Stderr (last ${lines.length === 1 ? 'line' : `${lines.length} lines`})`),
    h('pre', { class: 'mono stderr-lines' }, lines.join('\n')));
}

/** What the check of the server's listing repaired or left out (rule 18). */
function toolWarningsBlock(s, view) {
  const warnings = s.tool_warnings || [];
  if (!warnings.length) return null;
  const out = warnings.filter((w) => w.left_out).length;
  const summary = out
    ? `${plural(out, 'tool')} left out, broken as the server lists ${out === 1 ? 'it' : 'them'}`
    : `${plural(warnings.length, 'tool definition')} repaired`;
  return fold(view, `tool-warnings:${s.name}`, { class: 'tool-warnings', 'data-role': 'tool-warnings' },
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
  return fold(view, `tools:${s.name}`, { class: 'tools' },
    h('summary', {}, `Tools (${s.tools.length})`),
    h('ul', { class: 'tool-list' }, s.tools.map((t) =>
      h('li', { 'data-tool': t.name, 'data-enabled': String(t.enabled !== false) },
        h('span', { class: 'mono' }, t.name),
        h('span', { class: 'tool-side' },
          t.tokens ? h('span', { class: 'tool-tokens' }, `≈ ${number(t.tokens)}`, h('span', { class: 'visually-hidden' }, ' tokens')) : null,
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

/** A finding's check, as a person says it. */
const CHECKS = {
  hidden_unicode: 'Hidden text',
  encoded_payload: 'Encoded payload',
  hidden_instructions: 'Instructions to the model',
  exfiltration: 'Asks for secrets',
  shadowing: "Steers another server's tools",
  rug_pull: 'Changed since approved',
};

/**
 * What the scan found in this server's tools: a quarantined tool (held
 * back as dangerous) with Allow and Keep blocked, a tool to review with its
 * findings only.
 */
function scanBlock(s, view) {
  const flagged = s.tools.filter((t) => (t.findings || []).length && (t.state === 'quarantined' || t.scan === 'review'));
  if (!flagged.length) return null;
  const busy = view.busy.has(s.name);
  return h('section', { class: 'changed', 'aria-label': `Scan findings of ${s.name}` }, flagged.map((t) =>
    h('div', { class: 'change', 'data-scanned': t.name, 'data-verdict': t.state === 'quarantined' ? 'dangerous' : 'review' },
      h('h4', {}, h('span', { class: 'mono' }, t.name),
        t.state === 'quarantined' ? ' held back: its definition looks like an attack' : ' listed, worth a look'),
      h('ul', { class: 'findings' }, t.findings.map((f) =>
        h('li', { 'data-check': f.check, 'data-severity': f.severity },
          h('strong', {}, CHECKS[f.check] || f.check), ` (${f.field}): `, f.evidence))),
      view.onToolAction && t.state === 'quarantined' ? h('div', { class: 'actions' },
        h('button', {
          type: 'button', 'data-key': `allow:${s.name}:${t.name}`, 'data-action': 'allow',
          disabled: busy, onclick: () => view.onToolAction(s.name, t.name, 'allow'),
        }, 'Allow'),
        h('button', {
          type: 'button', class: 'primary', 'data-key': `block:${s.name}:${t.name}`, 'data-action': 'block',
          disabled: busy, onclick: () => view.onToolAction(s.name, t.name, 'block'),
        }, 'Keep blocked')) : null)));
}

// Prompts and resource templates the scan holds back: no Allow here, the
// entry's "scan": "off" lets them through (README "Poisoned tools are held back").
function heldBackBlock(s) {
  const held = s.held_back || [];
  if (!held.length) return null;
  const kinds = { prompt: 'prompt', resource_template: 'resource template' };
  return h('section', { class: 'changed', 'aria-label': `Held-back prompts and templates of ${s.name}` }, held.map((d) =>
    h('div', { class: 'change', 'data-held': `${d.kind}:${d.name}`, 'data-verdict': d.verdict },
      h('h4', {}, `${kinds[d.kind] || d.kind} `, h('span', { class: 'mono' }, d.name),
        ' held back: its definition looks like an attack'),
      h('ul', { class: 'findings' }, d.findings.map((f) =>
        h('li', { 'data-check': f.check, 'data-severity': f.severity },
          h('strong', {}, CHECKS[f.check] || f.check), ` (${f.field}): `, f.evidence))))));
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

/**
 * A local server's sandbox (none when it is off): its mode and what this
 * system enforces in one line, with what it cannot and the grants in the
 * title; and what it was refused, in one sentence with an "Allow" button
 * where the grant can be named.
 */
function sandboxBlock(s, view) {
  const sandbox = s.sandbox;
  if (!sandbox || sandbox.mode === 'off') return null;
  const text = `Sandbox: ${sandbox.mode} · ${sandbox.state}${sandbox.missing.length ? ` (not: ${sandbox.missing.join('; ')})` : ''}`;
  const grants = sandbox.grants.map((g) => `${g.access}: ${g.path}`).join('\n');
  const line = h('p', {
    class: 'meta sandbox', 'data-role': 'sandbox', 'data-state': sandbox.state, title: grants || undefined,
  }, text);
  const denied = sandbox.denied;
  if (!denied) return line;
  const grantable = denied.access === 'network' || Boolean(denied.path);
  const label = `Allow ${denied.access}`;
  const button = grantable ? h('button', {
    type: 'button', 'data-action': 'allow', 'data-key': `allow:${s.name}`,
    'aria-label': `${label}${denied.path ? ` of ${denied.path}` : ''} for ${s.name}`,
    disabled: view.busy.has(s.name),
    onclick: () => view.onAllow(s.name, denied),
  }, label) : null;
  return h('div', { class: 'sandbox-denied', 'data-role': 'sandbox-denied' },
    line, h('p', { role: 'status' }, denied.sentence, ' ', button));
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
      }, approx(s.tool_tokens))],
      extensionsNote(s.extensions)),
    facts(s, view.now),
    sandboxBlock(s, view),
    errorBlock(s, view),
    stderrBlock(s, view),
    toolWarningsBlock(s, view),
    heldBackBlock(s),
    changedBlock(s, view),
    scanBlock(s, view),
    cardPlots(view.plots && view.plots[s.name]),
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
