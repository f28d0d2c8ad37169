#!/usr/bin/env node
// One tool call through an official TypeScript SDK client that answers
// elicitation, to show a server's question crossing MCP revisions:
//   --sdk v2   @modelcontextprotocol/client (2026-07-28: the question comes
//              as InputRequiredResult, and the SDK retries with the answer)
//   --sdk v1   @modelcontextprotocol/sdk (a 2025-11-25 session: the question
//              comes as an elicitation/create request on the call's stream)
//
//
//   node bridge_agent.mjs --sdk v1|v2 (--url URL --token TOKEN | --stdio-cmd CMD)
//        --tool NAME [--message TEXT] --answer TEXT [--args JSON]
//        [--node-modules DIR]
//
// --stdio-cmd (v2 only) spawns a stdio server instead, e.g. `mcpool stdio`,
// with this process's environment (words split on spaces); in "auto" the
// SDK probes it with server/discover first.
//
// Prints one JSON line: {"protocol": "...", "elicited": ["<message>", ...],
// "text": "<the tool result's text>", "is_error": false, "connect_s": N},
// or {"error": "..."} with exit status 1.

import { join } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const sdkLine = arg("sdk", "v2");
const url = arg("url");
const token = arg("token");
const tool = arg("tool");
const message = arg("message", "Pick one");
const stdioCmd = arg("stdio-cmd");
const toolArgs = arg("args") ? JSON.parse(arg("args")) : { message };
const answer = arg("answer");
const here = fileURLToPath(new URL(".", import.meta.url));
const nodeModules = arg("node-modules", join(here, "..", "..", "node_modules"));
const load = (path) => import(pathToFileURL(join(nodeModules, path)).href);

const elicited = [];
const onElicit = async (request) => {
  elicited.push(request.params.message);
  return { action: "accept", content: { answer } };
};
const requestInit = { headers: { Authorization: `Bearer ${token}` } };
const info = { name: `mcpool-tests-bridge-${sdkLine}`, version: "1.0.0" };
const capabilities = { elicitation: { form: {} } };

let client;
let transport;
if (sdkLine === "v2") {
  const { Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client/dist/index.mjs");
  // "auto": server/discover first, as a 2026-07-28 client does.
  client = new Client(info, { capabilities, versionNegotiation: { mode: "auto" } });
  client.setRequestHandler("elicitation/create", onElicit);
  if (stdioCmd) {
    const { StdioClientTransport } = await load("@modelcontextprotocol/client/dist/stdio.mjs");
    const [command, ...args] = stdioCmd.split(" ").filter((w) => w !== "");
    transport = new StdioClientTransport({ command, args, env: { ...process.env } });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  }
} else {
  const { Client } = await load("@modelcontextprotocol/sdk/dist/esm/client/index.js");
  const { StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js");
  const { ElicitRequestSchema } = await load("@modelcontextprotocol/sdk/dist/esm/types.js");
  client = new Client(info, { capabilities });
  client.setRequestHandler(ElicitRequestSchema, onElicit);
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
}

try {
  const started = performance.now();
  await client.connect(transport);
  const connectS = (performance.now() - started) / 1000;
  const result = await client.callTool({ name: tool, arguments: toolArgs });
  const text = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
  const protocol = transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null;
  console.log(JSON.stringify({ protocol, elicited, text, is_error: result.isError === true, connect_s: connectS }));
  await client.close();
  process.exit(0);
} catch (e) {
  console.log(JSON.stringify({ error: String(e?.message ?? e), elicited }));
  process.exit(1);
}
