#!/usr/bin/env node
// A stdio MCP server on the official TypeScript SDK's low-level `Server`:
// v1 (@modelcontextprotocol/sdk, session revisions up to 2025-11-25) or v2
// (@modelcontextprotocol/server, 2026-07-28 only). Its tool `add` carries
// `execution` and a vendor's `x-vendor`; `add`'s result carries `x-trace`
// and a `_meta` of its own, and its text is the `_meta` the request came
// with, so a test sees what reached the server and what came back.
//
//   node fields_server.mjs --sdk v1|v2 [--node-modules DIR]

import { arg, load } from "./sdk.mjs";

const sdk = arg("sdk", "v1");

const TOOL = {
  name: "add",
  description: "Adds two numbers.",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
  },
  execution: { taskSupport: "optional" },
  "x-vendor": { tier: "gold", since: [2025, 11] },
};

function answer(params) {
  const meta = { ...(params._meta ?? {}) };
  // What the revision itself puts there is not the agent's.
  for (const key of Object.keys(meta)) {
    if (key.startsWith("io.modelcontextprotocol/")) delete meta[key];
  }
  return {
    content: [{ type: "text", text: JSON.stringify(meta) }],
    _meta: { "com.example/from": `ts-${sdk}` },
    "x-trace": { id: "t-1" },
  };
}

const info = { name: `ts-fields-${sdk}`, version: "1.0.0" };
if (sdk === "v1") {
  const { Server } = await load("@modelcontextprotocol/sdk/dist/esm/server/index.js");
  const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/stdio.js");
  const { ListToolsRequestSchema, CallToolRequestSchema } = await load("@modelcontextprotocol/sdk/dist/esm/types.js");
  const server = new Server(info, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [TOOL] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => answer(request.params));
  await server.connect(new StdioServerTransport());
} else {
  const { Server } = await load("@modelcontextprotocol/server/dist/index.mjs");
  const { serveStdio } = await load("@modelcontextprotocol/server/dist/stdio.mjs");
  const factory = () => {
    const server = new Server(info, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async () => ({ tools: [TOOL] }));
    server.setRequestHandler("tools/call", async (request) => answer(request.params));
    return server;
  };
  await serveStdio(factory, { legacy: "reject", onerror: (e) => console.error("fields_server:", e) });
}
