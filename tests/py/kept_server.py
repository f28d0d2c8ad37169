"""An MCP server on the official Python SDK's low-level `Server` (mcp 1.x
at 2025-11-25, or mcp 2.x at 2026-07-28, whichever is installed) whose
definitions and results carry fields that mcpool's own types do not model:
the tool `add` with `execution: {taskSupport: "optional"}` (the 2025-11-25
field), a vendor's `x-vendor` and `x-cost` in its annotations, the prompt
`greet` with `x-kind`, and `add`'s result with `x-trace`, its text block
with `x-note` and an embedded resource with `x-rev` (its annotations with
`x-weight`). A test checks that an agent gets each of them through mcpool
exactly as a direct connection does.

  python kept_server.py                 stdio
  python kept_server.py --http [--json] Streamable HTTP on 127.0.0.1 (a free
                                        port), answers as SSE streams or, with
                                        --json, as JSON bodies; prints
                                        `LISTENING http://127.0.0.1:PORT/mcp`
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import socket
import sys

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


def tools() -> list[types.Tool]:
    return [
        types.Tool(
            name="add",
            description="Adds two numbers.",
            inputSchema=SCHEMA,
            annotations=types.ToolAnnotations(readOnlyHint=True, **{"x-cost": "low"}),
            execution=types.ToolExecution(taskSupport="optional"),
            **{"x-vendor": {"tier": "gold", "since": [2025, 11]}},
        )
    ]


def added(arguments: dict) -> types.CallToolResult:
    total = arguments["a"] + arguments["b"]
    sum_note = types.TextResourceContents(uri="note://sum", text=str(total), mimeType="text/plain", **{"x-rev": 7})
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=str(total), **{"x-note": "exact"}),
            types.EmbeddedResource(
                type="resource",
                resource=sum_note,
                annotations=types.Annotations(priority=0.5, **{"x-weight": 2}),
            ),
        ],
        **{"x-trace": {"id": "t-1"}},
    )


def prompts() -> list[types.Prompt]:
    return [types.Prompt(name="greet", description="Greets.", **{"x-kind": "salutation"})]


def make_server() -> Server:
    if "on_list_tools" not in inspect.signature(Server.__init__).parameters:  # mcp 1.x
        server = Server("kept")

        @server.list_tools()
        async def list_tools() -> list[types.Tool]:
            return tools()

        @server.call_tool()
        async def call_tool(name: str, arguments: dict) -> types.CallToolResult:
            return added(arguments)

        @server.list_prompts()
        async def list_prompts() -> list[types.Prompt]:
            return prompts()

        return server

    async def on_list_tools(_ctx, _params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools())

    async def on_call_tool(_ctx, params) -> types.CallToolResult:
        return added(params.arguments or {})

    async def on_list_prompts(_ctx, _params) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=prompts())

    return Server("kept", on_list_tools=on_list_tools, on_call_tool=on_call_tool, on_list_prompts=on_list_prompts)


server = make_server()


async def serve_http(json_response: bool) -> None:
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    manager = StreamableHTTPSessionManager(app=server, json_response=json_response)

    async def handle(scope, receive, send):
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        async with manager.run():
            yield

    app = Starlette(routes=[Mount("/mcp", app=handle)], lifespan=lifespan)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:
            await anyio.sleep(0.01)
        print(f"LISTENING http://127.0.0.1:{port}/mcp", flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await http.serve(sockets=[sock])
        tg.cancel_scope.cancel()


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    p.add_argument("--json", action="store_true", help="answer with JSON bodies instead of SSE streams")
    args = p.parse_args()
    anyio.run(serve_http, args.json) if args.http else anyio.run(serve_stdio)
    return 0


if __name__ == "__main__":
    sys.exit(main())
