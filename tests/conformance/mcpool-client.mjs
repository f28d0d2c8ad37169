// mcpool as the client under test of the MCP conformance suite
// (@modelcontextprotocol/conformance, `client` command).
//
// The suite runs `<this command> <server-url>` with MCP_CONFORMANCE_SCENARIO
// (and, for some scenarios, MCP_CONFORMANCE_CONTEXT) set. This wrapper:
//   1. starts a `mcpool serve` of its own (port 0, its own config, cache and
//      data dirs, a throwaway keyring profile and token) whose config has one
//      remote server, `conf`, pointing at <server-url>;
//   2. while that server is `needs_auth`, signs in with `mcpool login conf`,
//      BROWSER being browser.mjs (a user clicking "Allow"), at most
//      MAX_SIGN_INS times, as a persistent user would;
//   3. through mcpool's /mcp (the official TypeScript SDK client), lists the
//      tools and calls each of `conf`'s tools; a call refused because the
//      server needs sign-in again (status `needs_auth`, or an error that asks
//      for sign-in: step-up, a changed authorization server) gets a sign-in
//      and another try, within the same MAX_SIGN_INS;
//   4. signs out (`mcpool logout conf`, forgetting the keyring entries) and
//      stops mcpool.
// Exit 0 when every tool of the server was listed and called, 1 otherwise
// (the suite scores the checks its own servers recorded; the exit code only
// tells the story). Progress goes to stderr, which the suite saves.
//
// Env: MCPOOL_BIN (default <repo>/target/debug/mcpool),
// MCPOOL_CONFORMANCE_TMP (parent of the per-run dir; default the OS temp dir),
// MCPOOL_CONFORMANCE_KEEP=1 keeps the per-run dir (mcpool's log) afterwards.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '..', '..');
const SERVER = 'conf';
/** Sign-ins the "user" is willing to do in one run (the first, then step-ups). */
const MAX_SIGN_INS = 3;
/** Bounds, all below the suite's per-scenario timeout the test passes. */
const START_MS = 20_000;
const SETTLE_MS = 20_000;
const LOGIN_MS = 30_000;

/** The client ID metadata document URL the suite's `auth/basic-cimd` expects. */
const CIMD_CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

function log(msg) {
  process.stderr.write(`[mcpool-client] ${msg}\n`);
}

class Failure extends Error {}

const children = new Set();
/** mcpool serve's log, read before the run dir goes; printed on failure. */
let mcpoolLog = '';

function killChildren() {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }
}

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    log(`${sig}: stopping mcpool`);
    killChildren();
    process.exit(1);
  });
}

/**
 * The config for the scenario: what the scenario gives the user to type in.
 * Pre-registration hands out a client ID and secret (the entry's `oauth`);
 * the CIMD scenario's authorization server accepts only its own fixed
 * metadata URL as a client ID (the top-level `oauthClientMetadataUrl`).
 */
function configFor(serverUrl, scenario, context) {
  const entry = { url: serverUrl };
  const config = { mcpServers: { [SERVER]: entry } };
  if (scenario === 'auth/pre-registration' && context?.client_id) {
    entry.oauth = { clientId: context.client_id, clientSecret: context.client_secret };
  }
  if (scenario === 'auth/basic-cimd') config.oauthClientMetadataUrl = CIMD_CLIENT_METADATA_URL;
  return config;
}

function makeRunDir() {
  const parent = process.env.MCPOOL_CONFORMANCE_TMP || tmpdir();
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, 'mcpool-conf-'));
  for (const sub of ['config', 'cache', 'data']) mkdirSync(join(dir, sub));
  return dir;
}

/** The environment every `mcpool` command of this run shares. */
function instanceEnv(dir, token, listen) {
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_CACHE_HOME: join(dir, 'cache'),
    XDG_DATA_HOME: join(dir, 'data'),
    MCPOOL_PROFILE: `conformance-${randomBytes(6).toString('hex')}`,
    MCPOOL_TOKEN: token,
    BROWSER: join(HERE, 'browser.mjs'),
  };
  delete env.MCPOOL_CONFIG;
  delete env.MCPOOL_CACHE_DIR;
  delete env.MCPOOL_LISTEN;
  if (listen) env.MCPOOL_LISTEN = listen;
  return env;
}

/** Starts `mcpool serve` on port 0; resolves with its child and listen address. */
function startServe(bin, dir, env) {
  return new Promise((resolveStart, rejectStart) => {
    const stderr = openSync(join(dir, 'mcpool.stderr'), 'w');
    const child = spawn(bin, ['serve', '--config', join(dir, 'config.json'), '--listen', '127.0.0.1:0'], {
      env,
      stdio: ['ignore', 'pipe', stderr],
    });
    children.add(child);
    const timer = setTimeout(() => rejectStart(new Failure(`mcpool serve printed no address within ${START_MS} ms`)), START_MS);
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk.toString();
      const m = out.match(/listening on http:\/\/([0-9.]+:\d+)\//);
      if (m) {
        clearTimeout(timer);
        resolveStart({ child, listen: m[1] });
      }
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      rejectStart(new Failure(`cannot run ${bin}: ${e.message}`));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      rejectStart(new Failure(`mcpool serve exited (${signal ?? code}) before listening`));
    });
  });
}

/** Runs `mcpool ARGS`, bounded; resolves with its exit code and output. */
function runCli(bin, args, env, limitMs) {
  return new Promise((done) => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c.toString()));
    child.stderr.on('data', (c) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${limitMs} ms)`;
      child.kill('SIGTERM');
    }, limitMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      children.delete(child);
      done({ code: -1, stdout, stderr: `${stderr}${e.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      done({ code: code ?? (signal ? 128 : -1), stdout, stderr });
    });
  });
}

async function serverRow(listen, token) {
  const res = await fetch(`http://${listen}/api/servers`, {
    headers: { Authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(5_000),
  });
  if (!res.ok) throw new Failure(`GET /api/servers answered ${res.status}`);
  const rows = await res.json();
  return rows.find((r) => r.name === SERVER);
}

/** Waits until the server leaves `pending`; returns its row. */
async function settled(listen, token) {
  const started = Date.now();
  const deadline = started + SETTLE_MS;
  for (;;) {
    const row = await serverRow(listen, token);
    if (row && row.status !== 'pending') return row;
    // The config is read before the endpoint listens: a server still absent
    // is an entry mcpool refused (its log says why).
    if (!row && Date.now() > started + 5_000) throw new Failure(`mcpool has no server ${SERVER}: it refused the config entry`);
    if (Date.now() > deadline) throw new Failure(`server ${SERVER} still pending after ${SETTLE_MS} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Default arguments for a tool: each required property gets a value of its type. */
function argumentsFor(tool) {
  const schema = tool.inputSchema ?? {};
  const args = {};
  for (const name of schema.required ?? []) {
    const type = schema.properties?.[name]?.type;
    args[name] =
      type === 'number' || type === 'integer' ? 1 : type === 'boolean' ? true : type === 'object' ? {} : type === 'array' ? [] : 'test';
  }
  return args;
}

async function main() {
  const serverUrl = process.argv[2];
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '(none)';
  const context = process.env.MCP_CONFORMANCE_CONTEXT ? JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) : undefined;
  if (!serverUrl) throw new Failure('usage: mcpool-client.mjs <server-url>');
  const bin = process.env.MCPOOL_BIN || join(REPO, 'target', 'debug', 'mcpool');
  log(`scenario ${scenario} (protocol ${process.env.MCP_CONFORMANCE_PROTOCOL_VERSION ?? '?'}), server ${serverUrl}`);

  const dir = makeRunDir();
  const token = randomBytes(24).toString('hex');
  writeFileSync(join(dir, 'config.json'), JSON.stringify(configFor(serverUrl, scenario, context), null, 2));

  let env = instanceEnv(dir, token);
  let serve;
  let signIns = 0;
  try {
    const started = await startServe(bin, dir, env);
    serve = started.child;
    const listen = started.listen;
    env = { ...env, MCPOOL_LISTEN: listen };
    log(`mcpool serve listening on ${listen}`);

    /** One `mcpool login`, as long as the user has patience left; false when not. */
    const signIn = async () => {
      if (signIns >= MAX_SIGN_INS) {
        log(`server ${SERVER} still wants sign-in after ${signIns} sign-ins; giving up`);
        return false;
      }
      signIns++;
      log(`sign-in ${signIns}: mcpool login ${SERVER}`);
      const r = await runCli(bin, ['login', SERVER], env, LOGIN_MS);
      for (const line of `${r.stdout}${r.stderr}`.trim().split('\n').filter(Boolean)) log(`  login: ${line}`);
      log(`  login exited ${r.code}`);
      if (r.code !== 0 && /unrecognized subcommand|unexpected argument/.test(r.stderr)) {
        throw new Failure('this mcpool has no `login` command');
      }
      // A failed flow (a refused issuer, a resource mismatch...) is judged
      // as the user would: by the server's status afterwards.
      return true;
    };

    /** Signs in while the server is `needs_auth`; true once it is connected. */
    const signInIfNeeded = async () => {
      for (;;) {
        const row = await settled(listen, token);
        if (row.status === 'connected') {
          log(`server ${SERVER} connected (protocol ${row.protocol ?? '?'})`);
          return true;
        }
        if (row.status !== 'needs_auth') {
          log(`server ${SERVER} is ${row.status}: ${row.error ?? ''}`);
          return false;
        }
        if (!(await signIn())) return false;
      }
    };

    if (!(await signInIfNeeded())) throw new Failure(`server ${SERVER} did not connect`);

    const client = new Client({ name: 'mcpool-conformance-agent', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`http://${listen}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      const ours = tools.filter((t) => t.name.startsWith(`${SERVER}__`));
      log(`tools/list through /mcp: ${tools.map((t) => t.name).join(', ')}`);
      if (ours.length === 0) throw new Failure(`no tools of ${SERVER} through /mcp`);
      for (const tool of ours) {
        for (let attempt = 1; ; attempt++) {
          let outcome;
          try {
            const result = await client.callTool({ name: tool.name, arguments: argumentsFor(tool) });
            outcome = result.isError ? `error result: ${JSON.stringify(result.content)}` : null;
          } catch (e) {
            outcome = `JSON-RPC error: ${e.message}`;
          }
          if (outcome === null) {
            log(`tools/call ${tool.name}: ok`);
            break;
          }
          log(`tools/call ${tool.name} (attempt ${attempt}): ${outcome}`);
          // The user signs in again when mcpool says so: the server waits for
          // sign-in, or the error asks for it (more scopes, a new issuer).
          const row = await serverRow(listen, token);
          const asked = row?.status === 'needs_auth' || /sign[- ]?in|mcpool login/i.test(outcome);
          if (!asked) throw new Failure(`tools/call ${tool.name} failed: ${outcome}`);
          if (row?.status !== 'needs_auth' && !(await signIn())) throw new Failure(`tools/call ${tool.name} failed: ${outcome}`);
          if (!(await signInIfNeeded())) throw new Failure(`tools/call ${tool.name} failed: ${outcome}`);
        }
      }
    } finally {
      await client.close().catch(() => {});
    }
    log(`done: ${signIns} sign-in(s)`);
    return 0;
  } finally {
    if (serve && serve.exitCode === null) {
      const out = await runCli(bin, ['logout', SERVER], env, 10_000);
      if (out.code !== 0) log(`logout exited ${out.code}: ${out.stderr.trim().split('\n')[0]}`);
      serve.kill('SIGTERM');
      await new Promise((r) => {
        const t = setTimeout(() => {
          serve.kill('SIGKILL');
          r();
        }, 10_000);
        serve.on('exit', () => {
          clearTimeout(t);
          r();
        });
        if (serve.exitCode !== null) r();
      });
    }
    mcpoolLog = readLog(dir);
    if (process.env.MCPOOL_CONFORMANCE_KEEP === '1') log(`run dir kept: ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

function readLog(dir) {
  try {
    return readFileSync(join(dir, 'mcpool.stderr'), 'utf8');
  } catch {
    return '';
  }
}

main().then(
  (code) => {
    process.exit(code);
  },
  (e) => {
    log(e instanceof Failure ? e.message : `${e.stack ?? e}`);
    const tail = mcpoolLog.trim().split('\n').slice(-40).join('\n');
    if (tail) process.stderr.write(`--- mcpool serve log (last 40 lines) ---\n${tail}\n`);
    killChildren();
    process.exit(1);
  },
);
