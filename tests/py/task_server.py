"""A stdio MCP server on the official Python SDK's low-level `Server`
(mcp 1.x) with the 2025-11-25 tasks (`server.experimental.enable_tasks()`):
its tool `slow_sum(a, b, seconds)` may run as a task (`execution.taskSupport:
"optional"`), the SDK's own handlers answer `tasks/get`, `tasks/result`,
`tasks/list` and `tasks/cancel`. Without a task it answers at once."""

import anyio
import mcp.types as types
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("tasks")
server.experimental.enable_tasks()


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name="slow_sum",
            description="Adds two numbers after `seconds` (a task when asked for one).",
            inputSchema={
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "seconds": {"type": "number"}},
                "required": ["a", "b"],
            },
            execution=types.ToolExecution(taskSupport="optional"),
        )
    ]


@server.call_tool()
async def call_tool(name: str, arguments: dict):
    total = arguments["a"] + arguments["b"]
    ctx = server.request_context
    if not ctx.experimental.is_task:
        return [types.TextContent(type="text", text=f"sum {total}")]

    async def work(task: ServerTaskContext) -> types.CallToolResult:
        await anyio.sleep(arguments.get("seconds", 0.2))
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"sum {total}")])

    return await ctx.experimental.run_task(work)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
