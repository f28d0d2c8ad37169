#!/usr/bin/env node
// A long-lived MCP agent on the official TypeScript SDK
// (@modelcontextprotocol/sdk), driven line by line: the Node twin of
// tests/py/session_agent.py.
//
//   node session_agent.mjs --url URL [--token TOKEN] [--node-modules DIR]
//
// It connects over Streamable HTTP and initializes ONCE, keeping that client
// object and session for as long as it runs, so a test can restart the
// server underneath it and see whether the next call simply works.
//
// Prints one JSON line when ready: {"ready": true, "session_id": "...",
// "protocol_version": "..."} (or {"ready": false, "error": "..."}, exit 1).
// Then one JSON command per stdin line, one JSON answer line each:
//   {"op": "call", "tool": "NAME", "args": {...}} -> {"ok": true, "text": "...", "is_error": false}
//   {"op": "call", ..., "progress": true} -> ... and "progress": [values], each
//     progress notification the SDK handed `onprogress` before the result, in order
//   {"op": "list"}                                -> {"ok": true, "tools": [...]}
//   {"op": "ping"}                                -> {"ok": true}
//   {"op": "session"}                             -> {"ok": true, "session_id": "..."}
//   {"op": "changes"} -> {"ok": true, "tool_list_changed": N}, the
//     notifications/tools/list_changed seen so far
// A failed command answers {"ok": false, "error": "..."} and the agent goes
// on. It exits when stdin closes.

import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { fileURLToPath } from "node:url";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const url = arg("url");
const token = arg("token");
const here = fileURLToPath(new URL(".", import.meta.url));
const nodeModules = arg("node-modules", join(here, "..", "..", "node_modules"));
const sdk = (path) => import(pathToFileURL(join(nodeModules, "@modelcontextprotocol/sdk/dist/esm", path)).href);

const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ToolListChangedNotificationSchema } = await sdk("types.js");

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const TIMEOUT_MS = 30_000;

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : {},
});
const client = new Client({ name: "mcpool-session-agent-ts", version: "0.1.0" });
let toolListChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  toolListChanged += 1;
});
try {
  await client.connect(transport);
} catch (e) {
  emit({ ready: false, error: String(e) });
  process.exit(1);
}
emit({ ready: true, session_id: transport.sessionId, protocol_version: transport.protocolVersion ?? null });

async function handle(command) {
  switch (command.op) {
    case "call": {
      const progress = [];
      const options = { timeout: TIMEOUT_MS };
      if (command.progress) options.onprogress = (p) => progress.push(p.progress);
      const result = await client.callTool(
        { name: command.tool, arguments: command.args ?? {} },
        undefined,
        options,
      );
      const text = (result.content ?? [])
        .filter((c) => c.type === "text")
        .map((c) => c.text)
        .join("\n");
      const answer = { ok: true, text, is_error: Boolean(result.isError), structured: result.structuredContent ?? null };
      // Copied now: only what came before the result counts.
      if (command.progress) answer.progress = [...progress];
      return answer;
    }
    case "list": {
      const tools = await client.listTools(undefined, { timeout: TIMEOUT_MS });
      return { ok: true, tools: tools.tools.map((t) => t.name) };
    }
    case "ping":
      await client.ping({ timeout: TIMEOUT_MS });
      return { ok: true };
    case "session":
      return { ok: true, session_id: transport.sessionId };
    case "changes":
      return { ok: true, tool_list_changed: toolListChanged };
    default:
      return { ok: false, error: `unknown op ${JSON.stringify(command.op)}` };
  }
}

// One command at a time, in order.
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  try {
    emit(await handle(JSON.parse(line)));
  } catch (e) {
    emit({ ok: false, error: String(e?.message ?? e) });
  }
}
await client.close().catch(() => {});
process.exit(0);
