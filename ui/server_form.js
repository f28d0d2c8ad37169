// The dashboard's server form: the model of an entry (a local or a remote
// one; secret env and header values kept apart from the entry so that
// mcpool puts them in the keyring), its DOM built once per opening, read
// back on Test and Save (so a refused save keeps everything typed), and
// the field errors of a refused save. servers.js opens it in its dialog.

import { h } from './lib.js';

/** Entry keys the form edits; any other key of an entry is kept as it is. */
const FORM_KEYS = ['command', 'args', 'env', 'cwd', 'timeout', 'url', 'transport', 'headers', 'oauth', 'type', 'sandbox'];

const KEYRING = /\$\{keyring:([^}]+)\}/g;

/** The keyring names a value refers to (`${keyring:NAME}`). */
export function references(value) {
  return [...String(value ?? '').matchAll(KEYRING)].map((m) => m[1]);
}

/** Every keyring name an entry refers to, and those the API lists. */
export function entrySecrets(entry, secrets) {
  const names = new Set();
  const walk = (v) => {
    if (typeof v === 'string') references(v).forEach((n) => names.add(n));
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(entry);
  for (const group of Object.values(secrets || {})) {
    for (const s of Object.values(group || {})) if (s && s.reference) names.add(s.reference);
  }
  return [...names].sort();
}

/** Rows of an env or headers object: a `${keyring:…}` value is a reference row. */
function rows(map, known) {
  return Object.entries(map || {}).map(([key, value]) => {
    const text = String(value ?? '');
    if (!references(text).length) return { key, value: text, secret: false };
    const info = (known || {})[key];
    return { key, value: text, secret: true, ref: { value: text, set: info ? info.set !== false : null } };
  });
}

/**
 * The form's model of an entry: `mode` is add, edit or duplicate; `secrets`
 * the `secrets` of GET /api/servers/{name}/entry (which references are set).
 */
export function entryToModel(name, entry, { mode = 'add', secrets = null, revision = null, original = null } = {}) {
  const e = entry || {};
  const remote = typeof e.url === 'string' || e.type === 'http' || e.type === 'sse';
  const rest = {};
  for (const [k, v] of Object.entries(e)) if (!FORM_KEYS.includes(k)) rest[k] = v;
  const oauth = e.oauth && typeof e.oauth === 'object' ? e.oauth : {};
  const clientSecret = oauth.clientSecret === undefined || oauth.clientSecret === null ? '' : String(oauth.clientSecret);
  const oauthKnown = (secrets && secrets.oauth) || {};
  const secretInfo = oauthKnown.clientSecret;
  return {
    mode,
    original,
    revision,
    name: name || '',
    kind: remote ? 'remote' : 'local',
    hadType: e.type !== undefined,
    hadTransport: e.transport !== undefined,
    command: e.command === undefined ? '' : String(e.command),
    args: Array.isArray(e.args) ? e.args.map(String) : [],
    env: rows(e.env, secrets && secrets.env),
    cwd: e.cwd === undefined ? '' : String(e.cwd),
    sandbox: sandboxModel(e.sandbox, mode),
    timeout: e.timeout === undefined ? '' : String(e.timeout),
    url: e.url === undefined ? '' : String(e.url),
    transport: e.transport === 'sse' || e.type === 'sse' ? 'sse' : 'http',
    headers: rows(e.headers, secrets && secrets.headers),
    oauth: {
      clientId: oauth.clientId ? String(oauth.clientId) : '',
      scopes: Array.isArray(oauth.scopes) ? oauth.scopes.join(' ') : '',
      clientSecret: references(clientSecret).length
        ? { value: clientSecret, secret: true, ref: { value: clientSecret, set: secretInfo ? secretInfo.set !== false : null } }
        : { value: clientSecret, secret: true },
      rest: Object.fromEntries(Object.entries(oauth).filter(([k]) => !['clientId', 'clientSecret', 'scopes'].includes(k))),
    },
    rest,
    variables: [],
    // Env and header values made of registry variables (see registry.js).
    templated: { env: [], headers: [] },
    runtime: null,
    source: null,
  };
}

/**
 * An entry's `sandbox` for the form: its mode ('' for none of its own: the
 * config's default) and the rest of an object (grants), kept as they are.
 * A new server is `standard`.
 */
function sandboxModel(sandbox, mode) {
  if (typeof sandbox === 'string') return { mode: sandbox, rest: null };
  if (sandbox && typeof sandbox === 'object') {
    const { mode: own, ...rest } = sandbox;
    return { mode: typeof own === 'string' ? own : '', rest };
  }
  return { mode: mode === 'add' ? 'standard' : '', rest: null };
}

/** The `sandbox` value the form writes, or undefined for none. */
function sandboxValue(model, chosen) {
  if (model.sandbox.rest) return chosen ? { mode: chosen, ...model.sandbox.rest } : { ...model.sandbox.rest };
  return chosen || undefined;
}

/** The sandbox choice of a local server. */
function sandboxSelect(mode) {
  const select = h('select', { 'data-field': 'sandbox' },
    h('option', { value: '' }, 'The config\u2019s default'),
    h('option', { value: 'standard' }, 'Standard'),
    h('option', { value: 'strict' }, 'Strict (no network)'),
    h('option', { value: 'off' }, 'Off (your whole home folder and network)'));
  select.value = mode;
  return select;
}

// ------------------------------------------------------------ the form DOM

let uid = 0;
const nextId = (what) => `sf-${what}-${++uid}`;

/** A labelled input: `<div class="field">label, input, hint</div>`. */
function field(label, input, hint) {
  const id = input.id || nextId('f');
  input.id = id;
  const hintEl = hint ? h('p', { class: 'meta hint', id: `${id}-hint` }, hint) : null;
  if (hintEl) input.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hintEl);
}

function textInput(name, value, extra = {}) {
  return h('input', { type: 'text', 'data-field': name, value, autocomplete: 'off', spellcheck: 'false', ...extra });
}

/** The value cell of a row: an input, or a stored reference with Replace. */
function secretValue(row, what, label) {
  const input = h('input', {
    type: row.secret ? 'password' : 'text', class: 'row-value', autocomplete: 'new-password', spellcheck: 'false',
    'aria-label': label, value: row.ref ? '' : row.value,
  });
  const box = h('input', {
    type: 'checkbox', class: 'row-secret', checked: row.secret ? 'checked' : undefined, 'aria-label': `Keep the ${label} secret (in the keyring)`,
  });
  box.checked = Boolean(row.secret);
  box.addEventListener('change', () => { input.type = box.checked ? 'password' : 'text'; });
  const secretLabel = h('label', { class: 'secret-box' }, box, h('span', { 'aria-hidden': 'true' }, ' secret'));
  if (!row.ref) return [input, secretLabel];
  // A stored reference: shown as set or not set, never as a value.
  const status = row.ref.set === null ? 'in the keyring' : row.ref.set ? 'set' : 'not set';
  const holder = h('span', { class: 'secret-ref', 'data-ref': row.ref.value });
  const replace = h('button', { type: 'button', class: 'small', 'aria-label': `Replace the secret ${what}` }, 'Replace');
  holder.append(h('span', { class: 'secret-status', 'data-set': String(row.ref.set) }, `Secret: ${status}`), ' ', replace);
  replace.addEventListener('click', () => {
    box.checked = true;
    input.type = 'password';
    holder.replaceWith(input, secretLabel);
    input.focus();
  });
  return [holder];
}

/** One key/value row of env or headers. */
function kvRow(group, row, keyLabel) {
  const key = h('input', {
    type: 'text', class: 'row-key', value: row.key, autocomplete: 'off', spellcheck: 'false', 'aria-label': `${group} ${keyLabel}`,
  });
  const li = h('li', { class: 'kv-row', 'data-group': group });
  const what = () => `${group} ${key.value || keyLabel}`;
  const remove = h('button', { type: 'button', class: 'small', 'aria-label': `Remove this ${group === 'env' ? 'variable' : 'header'}` }, 'Remove');
  remove.addEventListener('click', () => {
    const list = li.parentElement;
    li.remove();
    const first = list && list.querySelector('input');
    if (first) first.focus();
  });
  li.append(key, h('span', { class: 'eq', 'aria-hidden': 'true' }, group === 'env' ? '=' : ':'),
    ...secretValue(row, what(), `${group} value`), remove);
  return li;
}

function kvGroup(group, title, keyLabel, items) {
  const list = h('ul', { class: 'kv-rows', 'data-field': group });
  items.forEach((r) => list.append(kvRow(group, r, keyLabel)));
  const add = h('button', { type: 'button', class: 'small', 'data-add': group }, group === 'env' ? 'Add variable' : 'Add header');
  add.addEventListener('click', () => {
    const row = kvRow(group, { key: '', value: '', secret: false }, keyLabel);
    list.append(row);
    row.querySelector('input').focus();
  });
  return h('fieldset', { class: 'kv', 'data-group': group }, h('legend', {}, title), list, add);
}

/** The registry's variables: one input each (see registry.js). */
function variablesBlock(model) {
  if (!model.variables.length) return null;
  return h('fieldset', { class: 'variables' }, h('legend', {}, 'Settings this server asks for'),
    model.variables.map((v) => {
      const common = {
        'data-field': `var.${v.name}`, 'data-variable': v.name,
        required: v.required ? 'required' : undefined, 'aria-required': v.required ? 'true' : undefined,
      };
      let input;
      if (v.choices && v.choices.length) {
        input = h('select', common, v.required ? null : h('option', { value: '' }, '(none)'),
          v.choices.map((c) => h('option', { value: c }, c)));
        input.value = v.default || (v.required ? v.choices[0] : '');
      } else {
        input = h('input', {
          ...common, type: v.secret ? 'password' : 'text', value: v.default ?? '',
          autocomplete: v.secret ? 'new-password' : 'off', spellcheck: 'false',
        });
      }
      const sentence = (t) => (t && !/[.!?]$/.test(t) ? `${t}.` : t);
      const hint = [sentence(v.description), v.sets ? `Sets ${v.sets}.` : null, v.secret ? 'Kept in the keyring.' : null,
        v.format ? `Format: ${v.format}.` : null].filter(Boolean).join(' ');
      return field(h('span', {}, h('span', { class: 'mono' }, v.name), v.required ? h('span', { class: 'required' }, ' (required)') : null),
        input, hint || null);
    }));
}

/**
 * Builds the form of `model` ({@link entryToModel}); `on` = {test, save,
 * cancel}, each given the form.
 */
export function renderForm(model, on) {
  const title = model.mode === 'edit' ? `Edit ${model.original}` : model.mode === 'duplicate' ? `Duplicate ${model.original}` : 'Add a server';
  const kindName = nextId('kind');
  const kind = (value, label) => {
    const radio = h('input', { type: 'radio', name: kindName, value, 'data-field': 'kind', checked: model.kind === value ? 'checked' : undefined });
    radio.checked = model.kind === value;
    return h('label', { class: 'choice' }, radio, ` ${label}`);
  };
  const transport = h('select', { 'data-field': 'transport' },
    h('option', { value: 'http' }, 'Streamable HTTP'), h('option', { value: 'sse' }, 'SSE (legacy)'));
  transport.value = model.transport;
  const args = h('textarea', { 'data-field': 'args', rows: '3', spellcheck: 'false' });
  args.value = model.args.join('\n');
  const oauthSecret = model.oauth.clientSecret;
  const local = h('div', { class: 'kind-part', 'data-kind': 'local' },
    field('Command', textInput('command', model.command, { placeholder: 'e.g. npx' })),
    field('Arguments', args, 'One per line.'),
    kvGroup('env', 'Environment', 'name', model.env),
    h('div', { class: 'field-pair' },
      field('Working folder', textInput('cwd', model.cwd, { placeholder: 'optional' }), 'Relative to the config file\u2019s folder.')),
    field('Sandbox', sandboxSelect(model.sandbox.mode),
      'What it may read, write and reach: standard keeps it out of your home folder; strict also cuts its network.'));
  const remote = h('div', { class: 'kind-part', 'data-kind': 'remote' },
    field('URL', textInput('url', model.url, { inputmode: 'url', placeholder: 'https://example.com/mcp' })),
    field('Transport', transport),
    kvGroup('headers', 'Headers', 'name', model.headers),
    h('fieldset', { class: 'oauth', 'data-field': 'oauth' }, h('legend', {}, 'Sign-in (OAuth), optional'),
      field('Client ID', textInput('oauth.clientId', model.oauth.clientId)),
      h('div', { class: 'field', 'data-field-wrap': 'oauth.clientSecret' },
        h('span', { class: 'label' }, 'Client secret'),
        h('span', { class: 'kv-row oauth-secret', 'data-field': 'oauth.clientSecret' }, ...secretValue(oauthSecret, 'client secret', 'Client secret'))),
      field('Scopes', textInput('oauth.scopes', model.oauth.scopes), 'Separated by spaces.')));
  const timeout = field('Startup timeout (ms)', textInput('timeout', model.timeout, { inputmode: 'numeric', placeholder: '30000' }),
    'How long it may take to start and list its tools.');
  const runtime = model.runtime && model.runtime.present === false
    ? h('p', { class: 'runtime-warning', role: 'note', 'data-role': 'runtime' },
      `${model.runtime.command ? `${model.runtime.command} is not installed here. ` : ''}${model.runtime.install || ''}`)
    : null;
  const testOut = h('div', { class: 'test-result', 'data-role': 'test-result', role: 'status', 'aria-live': 'polite' });
  const formError = h('p', { class: 'form-error', 'data-role': 'form-error', role: 'alert', hidden: true });
  const testButton = h('button', { type: 'button', 'data-role': 'test' }, 'Test');
  const saveButton = h('button', { type: 'submit', class: 'primary', 'data-role': 'save' }, model.mode === 'edit' ? 'Save changes' : 'Save');
  const cancel = h('button', { type: 'button', 'data-role': 'cancel' }, 'Cancel');
  // A registry server offered as several packages or remotes: which one.
  let runAs = null;
  if (model.choices && model.choices.length > 1 && model.onChoice) {
    const select = h('select', { 'data-field': 'choice' }, model.choices.map((c) => h('option', { value: c.choice }, c.label || c.choice)));
    select.value = model.choice || model.choices[0].choice;
    select.addEventListener('change', () => model.onChoice(select.value));
    runAs = field('Run it as', select, 'Picking another one fills the form anew.');
  }
  const form = h('form', { class: 'server-form', 'aria-labelledby': 'server-form-title' },
    h('h2', { id: 'server-form-title' }, title),
    model.source ? h('p', { class: 'meta', 'data-role': 'source' }, `From the registry: ${model.source}`) : null,
    runAs,
    runtime,
    field('Name', textInput('name', model.name, { placeholder: 'e.g. github' }), 'Its tools reach agents as NAME__tool.'),
    h('fieldset', { class: 'kinds' }, h('legend', {}, 'Where it runs'), kind('local', 'Local (a command)'), kind('remote', 'Remote (a URL)')),
    variablesBlock(model),
    local,
    remote,
    timeout,
    formError,
    testOut,
    h('div', { class: 'actions' }, saveButton, testButton, cancel));
  form.model = model;
  const showKind = () => {
    const k = form.querySelector('[data-field="kind"]:checked').value;
    local.hidden = k !== 'local';
    remote.hidden = k !== 'remote';
    // The hidden half's inputs take no part (a timeout is in both).
    for (const part of [local, remote]) part.querySelectorAll('input, select, textarea, button').forEach((el) => { el.disabled = part.hidden; });
    // A registry variable of the other half is not asked for either.
    form.querySelectorAll('[data-variable]').forEach((el) => {
      const v = model.variables.find((x) => x.name === el.dataset.variable);
      const other = v && ((k === 'local' && ['header', 'url'].includes(v.target)) || (k === 'remote' && ['env', 'arg'].includes(v.target)));
      el.disabled = Boolean(other);
      el.closest('.field').hidden = Boolean(other);
    });
  };
  form.querySelectorAll('[data-field="kind"]').forEach((r) => r.addEventListener('change', showKind));
  showKind();
  testButton.addEventListener('click', () => on.test(form));
  cancel.addEventListener('click', () => on.cancel(form));
  form.addEventListener('submit', (e) => { e.preventDefault(); on.save(form); });
  return form;
}

// ------------------------------------------------------ reading the form

/**
 * `{NAME}` (and `${NAME}`, never `${keyring:…}`) filled from `values`, the
 * registry variables' inputs; null when a variable in it was left empty
 * (the value is then left out, as `mcpool registry add` does).
 */
export function fill(text, values) {
  let empty = false;
  const out = String(text).replace(/\$?\{([A-Za-z_][A-Za-z0-9_.-]*)\}/g, (all, name) => {
    if (!(name in values)) return all;
    if (values[name] === '') empty = true;
    return values[name];
  });
  return empty ? null : out;
}

const uses = (text, names) => names.some((n) => String(text).includes(`{${n}}`));

function readRows(form, group, values, secretNames) {
  const entry = {};
  const secret = {};
  for (const row of form.model.templated[group]) {
    const value = fill(row.value, values);
    if (value === null || !value.trim()) continue;
    if (uses(row.value, secretNames)) secret[row.key] = value;
    else entry[row.key] = value;
  }
  for (const li of form.querySelectorAll(`.kv-rows[data-field="${group}"] > li`)) {
    const key = li.querySelector('.row-key').value.trim();
    const ref = li.querySelector('.secret-ref');
    const input = li.querySelector('.row-value');
    if (!key && (!input || !input.value)) continue;
    if (ref) {
      entry[key] = ref.dataset.ref;
      continue;
    }
    const raw = input.value;
    const value = fill(raw, values);
    // A row with a variable left empty is left out.
    if (value === null) continue;
    if (li.querySelector('.row-secret').checked || uses(raw, secretNames)) secret[key] = value;
    else entry[key] = value;
  }
  return { entry, secret };
}

/**
 * The body of POST /api/servers (and PUT, and the test) from what the form
 * holds now: `{name, entry, secretEnv, secretHeaders,
 * secretOauthClientSecret?}`. Secret values never go into `entry`.
 */
export function collect(form) {
  const model = form.model;
  const get = (name) => {
    const el = form.querySelector(`[data-field="${name}"]:not(:disabled)`);
    return el ? el.value : '';
  };
  const values = {};
  const secretNames = [];
  for (const el of form.querySelectorAll('[data-variable]')) {
    values[el.dataset.variable] = el.value;
    const v = model.variables.find((x) => x.name === el.dataset.variable);
    if (v && v.secret) secretNames.push(el.dataset.variable);
  }
  const kind = form.querySelector('[data-field="kind"]:checked').value;
  const entry = {};
  const body = { name: get('name').trim(), entry, secretEnv: {}, secretHeaders: {} };
  const timeout = get('timeout').trim();
  if (kind === 'local') {
    if (model.hadType) entry.type = 'stdio';
    entry.command = fill(get('command').trim(), values) ?? '';
    const args = [];
    for (const line of get('args').split('\n').map((a) => a.replace(/\r$/, ''))) {
      if (!line.trim()) continue;
      const filled = fill(line, values);
      if (filled !== null) args.push(filled);
      // `--flag {VALUE}` with VALUE left empty: the flag goes too.
      else if (args.length && /^--?[^=\s]+$/.test(args[args.length - 1]) && !/^-/.test(line)) args.pop();
    }
    if (args.length) entry.args = args;
    const env = readRows(form, 'env', values, secretNames);
    if (Object.keys(env.entry).length) entry.env = env.entry;
    body.secretEnv = env.secret;
    const cwd = get('cwd').trim();
    if (cwd) entry.cwd = cwd;
    const sandbox = sandboxValue(model, get('sandbox'));
    if (sandbox !== undefined) entry.sandbox = sandbox;
  } else {
    const transport = get('transport');
    if (model.hadType) entry.type = transport;
    entry.url = fill(get('url').trim(), values) ?? '';
    if (transport === 'sse' || model.hadTransport) entry.transport = transport;
    const headers = readRows(form, 'headers', values, secretNames);
    if (Object.keys(headers.entry).length) entry.headers = headers.entry;
    body.secretHeaders = headers.secret;
    const oauth = { ...model.oauth.rest };
    const clientId = get('oauth.clientId').trim();
    if (clientId) oauth.clientId = clientId;
    const holder = form.querySelector('[data-field="oauth.clientSecret"]');
    const ref = holder.querySelector('.secret-ref');
    const secretInput = holder.querySelector('.row-value');
    if (ref) oauth.clientSecret = ref.dataset.ref;
    else if (secretInput && secretInput.value) {
      if (holder.querySelector('.row-secret').checked) body.secretOauthClientSecret = secretInput.value;
      else oauth.clientSecret = secretInput.value;
    }
    const scopes = get('oauth.scopes').split(/[\s,]+/).filter(Boolean);
    if (scopes.length) oauth.scopes = scopes;
    if (Object.keys(oauth).length) entry.oauth = oauth;
  }
  if (timeout) entry.timeout = /^\d+$/.test(timeout) ? Number(timeout) : timeout;
  Object.assign(entry, model.rest);
  return body;
}

// ------------------------------------------------------- field errors

/** Where an error's config field path shows in the form, or null. */
export function errorTarget(form, path) {
  if (!path) return null;
  const p = String(path).replace(/^secret(Env|Headers)\./, (_, g) => (g === 'Env' ? 'env.' : 'headers.'))
    .replace(/^secretOauthClientSecret$/, 'oauth.clientSecret');
  const visible = (el) => el && !el.disabled && !el.closest('[hidden]');
  const direct = [...form.querySelectorAll(`[data-field="${CSS.escape(p)}"]`)].find(visible);
  if (direct) return direct;
  const row = /^(env|headers)\.(.+)$/.exec(p);
  const templated = row && form.model.templated[row[1]].find((r) => r.key === row[2]);
  if (templated) return errorTarget(form, `var.${templated.variables[0]}`);
  if (row) {
    const li = [...form.querySelectorAll(`.kv-rows[data-field="${row[1]}"] > li`)]
      .find((el) => el.querySelector('.row-key').value.trim() === row[2]);
    if (li && visible(li.querySelector('.row-key'))) return li.querySelector('.row-value') || li.querySelector('.row-key');
  }
  const base = p.replace(/\[\d+\]$/, '');
  if (base !== p) return errorTarget(form, base);
  const head = p.split('.')[0];
  if (head !== p) return errorTarget(form, head);
  return null;
}

export function clearErrors(form) {
  form.querySelectorAll('.field-error').forEach((el) => el.remove());
  form.querySelectorAll('[aria-invalid]').forEach((el) => {
    el.removeAttribute('aria-invalid');
    const hint = el.dataset.hint;
    if (hint) el.setAttribute('aria-describedby', hint);
    else el.removeAttribute('aria-describedby');
  });
  const top = form.querySelector('[data-role="form-error"]');
  top.hidden = true;
  top.replaceChildren();
}

/** Shows `error` next to `path`'s input, else at the form's foot. */
export function showError(form, path, error, extra) {
  const target = errorTarget(form, path);
  if (!target) {
    const top = form.querySelector('[data-role="form-error"]');
    top.replaceChildren(error, ...(extra ? [' ', extra] : []));
    top.hidden = false;
    return top;
  }
  const index = /\[(\d+)\]$/.exec(String(path));
  const text = index && target.dataset.field === 'args' ? `Argument ${Number(index[1]) + 1}: ${error}` : error;
  const id = nextId('err');
  const message = h('p', { class: 'field-error', id, 'data-error-for': path, role: 'alert' }, text);
  const inputs = target.matches('input, select, textarea') ? [target]
    : [...target.querySelectorAll('input:not([type="checkbox"]):not(:disabled), select, textarea')].slice(0, 1);
  for (const el of inputs) {
    el.dataset.hint = el.getAttribute('aria-describedby') || '';
    el.setAttribute('aria-invalid', 'true');
    el.setAttribute('aria-describedby', [el.dataset.hint, id].filter(Boolean).join(' '));
  }
  const place = target.closest('li.kv-row') || target.closest('.field') || target;
  place.after(message);
  if (inputs.length) inputs[0].focus();
  return message;
}

// ------------------------------------------------------------- wiring
