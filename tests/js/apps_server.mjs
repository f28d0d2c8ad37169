#!/usr/bin/env node
// A stdio MCP Apps server on the official TypeScript SDK's low-level
// `Server`, v1 (@modelcontextprotocol/sdk, 2025-11-25) or v2
// (@modelcontextprotocol/server, 2026-07-28 only), as
// tests/py/apps_session_server.py is on the Python SDK: it offers the
// extension `io.modelcontextprotocol/ui`, and its tool `clock` answers
// "app" to a client that declared MCP Apps with the app MIME type (SEP-2133)
// and "text" to one that did not. v1 reads what the client declared in
// `initialize`; v2 what the request itself says its client can do. Its
// `ui://clock/app.html` resource is the app.
//
//   node apps_server.mjs --sdk v1|v2 [--node-modules DIR]

import { arg, load } from "./sdk.mjs";

const sdk = arg("sdk", "v1");
const UI = "io.modelcontextprotocol/ui";
const APP_MIME = "text/html;profile=mcp-app";
const APP = "ui://clock/app.html";

const capabilities = {
  tools: {},
  resources: {},
  extensions: { [UI]: { mimeTypes: [APP_MIME] } },
};
const tools = [
  {
    name: "clock",
    description: "The time, as an app where the client shows apps",
    inputSchema: { type: "object", properties: {} },
    _meta: { ui: { resourceUri: APP } },
  },
];
const resources = { resources: [{ uri: APP, name: "clock", mimeType: APP_MIME }] };
const app = { contents: [{ uri: APP, mimeType: APP_MIME, text: "<!doctype html><title>clock</title>" }] };

/** Whether `client` (capabilities) shows apps of this MIME type. */
const showsApps = (client) => (client?.extensions?.[UI]?.mimeTypes ?? []).includes(APP_MIME);
const clock = (client) => ({ content: [{ type: "text", text: showsApps(client) ? "app" : "text" }] });

const info = { name: `ts-apps-${sdk}`, version: "1.0.0" };
if (sdk === "v1") {
  const { Server } = await load("@modelcontextprotocol/sdk/dist/esm/server/index.js");
  const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/stdio.js");
  const types = await load("@modelcontextprotocol/sdk/dist/esm/types.js");
  const server = new Server(info, { capabilities });
  server.setRequestHandler(types.ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(types.CallToolRequestSchema, async () => clock(server.getClientCapabilities()));
  server.setRequestHandler(types.ListResourcesRequestSchema, async () => resources);
  server.setRequestHandler(types.ReadResourceRequestSchema, async () => app);
  await server.connect(new StdioServerTransport());
} else {
  const { Server } = await load("@modelcontextprotocol/server/dist/index.mjs");
  const { serveStdio } = await load("@modelcontextprotocol/server/dist/stdio.mjs");
  const factory = () => {
    const server = new Server(info, { capabilities });
    server.setRequestHandler("tools/list", async () => ({ tools }));
    server.setRequestHandler("tools/call", async (_request, ctx) =>
      clock(ctx.mcpReq.envelope?.["io.modelcontextprotocol/clientCapabilities"]),
    );
    server.setRequestHandler("resources/list", async () => resources);
    server.setRequestHandler("resources/read", async () => app);
    return server;
  };
  await serveStdio(factory, { legacy: "reject", onerror: (e) => console.error("apps_server:", e) });
}
