#!/usr/bin/env node
// A stdio MCP server on the official TypeScript SDK v1
// (@modelcontextprotocol/sdk, 2025-11-25) with its experimental tasks: its
// tool `slow_sum(a, b, seconds)` may run as a task
// (`execution.taskSupport: "optional"`), kept in the SDK's
// `InMemoryTaskStore`, whose handlers answer `tasks/get`, `tasks/result`,
// `tasks/list` and `tasks/cancel`. The same tool as tests/py/task_server.py.
//
//   node task_server.mjs [--node-modules DIR]

import { arg, load } from "./sdk.mjs";

const { McpServer } = await load("@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/stdio.js");
const { InMemoryTaskStore } = await load("@modelcontextprotocol/sdk/dist/esm/experimental/tasks/stores/in-memory.js");
const { z } = await load("zod/index.js");

const server = new McpServer(
  { name: "ts-tasks", version: "1.0.0" },
  {
    capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore: new InMemoryTaskStore(),
  },
);

const sum = ({ a, b }) => ({ content: [{ type: "text", text: `sum ${a + b}` }] });

server.experimental.tasks.registerToolTask(
  "slow_sum",
  {
    description: "Adds two numbers after `seconds` (a task when asked for one).",
    inputSchema: { a: z.number(), b: z.number(), seconds: z.number().optional() },
    execution: { taskSupport: "optional" },
  },
  {
    createTask: async (args, extra) => {
      const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 100 });
      setTimeout(async () => {
        try {
          const now = await extra.taskStore.getTask(task.taskId);
          if (now.status === "working") await extra.taskStore.storeTaskResult(task.taskId, "completed", sum(args));
        } catch (e) {
          console.error("task_server:", e);
        }
      }, (args.seconds ?? 0.2) * 1000);
      return { task };
    },
    getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) => extra.taskStore.getTaskResult(extra.taskId),
  },
);

await server.connect(new StdioServerTransport());
