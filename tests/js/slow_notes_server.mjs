#!/usr/bin/env node
// A stdio MCP server on the official TypeScript SDK's low-level `Server`,
// v1 (@modelcontextprotocol/sdk, 2025-11-25) or v2
// (@modelcontextprotocol/server, 2026-07-28 only), as tests/py/slow_server.py
// and notes_server.py are on the Python SDK: its tool `wait` never answers
// on its own, writing "call wait" to LOG when it starts and "cancelled wait"
// when the SDK aborts it (a cancellation reached it); its tool `touch`
// announces `notifications/resources/updated` for `note://ts-SDK`, a resource
// clients may subscribe to (v1: `resources/subscribe`; v2: the SDK's own
// `subscriptions/listen`, which routes the update to each listen stream
// that asked for the note).
//
//   node slow_notes_server.mjs --sdk v1|v2 --log LOG [--node-modules DIR]

import { appendFileSync } from "node:fs";
import { arg, load } from "./sdk.mjs";

const sdk = arg("sdk", "v1");
const log = arg("log");
const NOTE = `note://ts-${sdk}`;

const note = (line) => appendFileSync(log, `${line}\n`);
const empty = { type: "object", properties: {} };
const tools = [
  { name: "wait", description: "Waits until cancelled.", inputSchema: empty },
  { name: "touch", description: "Announces that the note changed.", inputSchema: empty },
];

function wait(signal) {
  note("call wait");
  return new Promise((resolve) => {
    signal.addEventListener("abort", () => {
      note("cancelled wait");
      resolve({ content: [{ type: "text", text: "cancelled" }] });
    });
  });
}

const info = { name: `ts-slow-${sdk}`, version: "1.0.0" };
if (sdk === "v1") {
  const { Server } = await load("@modelcontextprotocol/sdk/dist/esm/server/index.js");
  const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/stdio.js");
  const types = await load("@modelcontextprotocol/sdk/dist/esm/types.js");
  const server = new Server(info, { capabilities: { tools: {}, resources: { subscribe: true } } });
  server.setRequestHandler(types.ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(types.CallToolRequestSchema, async (request, extra) => {
    if (request.params.name === "wait") return wait(extra.signal);
    await server.sendResourceUpdated({ uri: NOTE });
    return { content: [{ type: "text", text: "touched" }] };
  });
  server.setRequestHandler(types.ListResourcesRequestSchema, async () => ({ resources: [{ uri: NOTE, name: "note" }] }));
  server.setRequestHandler(types.ReadResourceRequestSchema, async () => ({ contents: [{ uri: NOTE, text: "a note" }] }));
  server.setRequestHandler(types.SubscribeRequestSchema, async () => ({}));
  server.setRequestHandler(types.UnsubscribeRequestSchema, async () => ({}));
  await server.connect(new StdioServerTransport());
} else {
  const { Server } = await load("@modelcontextprotocol/server/dist/index.mjs");
  const { serveStdio } = await load("@modelcontextprotocol/server/dist/stdio.mjs");
  const factory = () => {
    const server = new Server(info, { capabilities: { tools: {}, resources: { subscribe: true } } });
    server.setRequestHandler("tools/list", async () => ({ tools }));
    server.setRequestHandler("tools/call", async (request, ctx) => {
      if (request.params.name === "wait") return wait(ctx.mcpReq.signal);
      await server.sendResourceUpdated({ uri: NOTE });
      return { content: [{ type: "text", text: "touched" }] };
    });
    server.setRequestHandler("resources/list", async () => ({ resources: [{ uri: NOTE, name: "note" }] }));
    server.setRequestHandler("resources/read", async () => ({ contents: [{ uri: NOTE, text: "a note" }] }));
    return server;
  };
  await serveStdio(factory, { legacy: "reject", onerror: (e) => console.error("slow_notes_server:", e) });
}
