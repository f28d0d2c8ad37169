#!/usr/bin/env node
// A stdio MCP server on the official TypeScript SDK v2
// (@modelcontextprotocol/server), speaking 2026-07-28 only: a session
// opening (`initialize`) is refused. Its one tool, `ask`, asks the client a
// question the 2026-07-28 way, by answering `InputRequiredResult`
// (elicitation, key `answer`); the next round, with the client's answer,
// returns "answered: <answer>".
//
//   node v2_server.mjs [--node-modules DIR]

import { arg, load } from "./sdk.mjs";

const { McpServer, inputRequired, acceptedContent, fromJsonSchema } = await load("@modelcontextprotocol/server/dist/index.mjs");
const { serveStdio } = await load("@modelcontextprotocol/server/dist/stdio.mjs");

const answerSchema = {
  type: "object",
  properties: { answer: { type: "string", title: "Answer" } },
  required: ["answer"],
};

function factory() {
  const server = new McpServer({ name: "ts-v2", version: "1.0.0" });
  server.registerTool(
    "ask",
    {
      description: "Asks the client a question (elicitation) before answering",
      inputSchema: fromJsonSchema({ type: "object", properties: { message: { type: "string" } } }),
    },
    async (args, ctx) => {
      const answered = acceptedContent(ctx.mcpReq.inputResponses, "answer");
      if (answered?.answer === undefined) {
        return inputRequired({
          inputRequests: {
            answer: inputRequired.elicit({ message: args?.message ?? "?", requestedSchema: answerSchema }),
          },
        });
      }
      return { content: [{ type: "text", text: `answered: ${answered.answer}` }] };
    },
  );
  return server;
}

await serveStdio(factory, { legacy: "reject", onerror: (e) => console.error("v2_server:", e) });
