#!/usr/bin/env python3
"""A small legacy-SSE MCP server (HTTP+SSE transport, 2024-11-05) for tests.

Built on the official Python SDK's FastMCP. Binds 127.0.0.1 only.

  python sse_server.py --port PORT [--require-header 'Authorization: Bearer X']
                       [--transport sse|http] [--endpoint-origin ORIGIN]

--port 0 picks a free port. Once the server accepts connections it prints one
line on stdout:

  LISTENING http://127.0.0.1:PORT/sse

(messages are POSTed to /messages/?session_id=..., as the SSE stream's
`endpoint` event says). With --transport http it serves Streamable HTTP
instead and prints `LISTENING http://127.0.0.1:PORT/mcp`; unlike
server-everything it answers HTTP 404 to an unknown/expired session id (as the
MCP spec says), so a restart on the same port gives a real expired session. With --require-header, every request lacking that
exact header gets HTTP 401 (to test forwarded `headers` and needs_auth).
With --endpoint-origin (e.g. http://127.0.0.1:PORT) the SSE stream's
`endpoint` event names its POST endpoint on that origin instead of its own,
as a hostile or misconfigured server would.
SIGINT/SIGTERM stop it.

Offers:
  tools      echo(message: str)        -> text "Echo: <message>"
             add(a: number, b: number) -> text "<a+b>" (e.g. "5"; ints stay ints)
             long_running(steps: int = 3, delay: float = 0.2)
                                       -> progress notifications 1..steps (total=steps)
                                          when the caller sends a progressToken,
                                          then text "done <steps>"
             pid()                     -> text of this server's process id
  prompt     greet(name: str)          -> one user message "Hello, <name>!"
  resource   sse://static/hello        -> text "hello from sse_server"
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

import anyio
import uvicorn
from mcp.server.fastmcp import Context, FastMCP


def build_server() -> FastMCP:
    mcp = FastMCP("sse-test-server", host="127.0.0.1", log_level="WARNING")

    @mcp.tool()
    def echo(message: str) -> str:
        """Echoes back the input string."""
        return f"Echo: {message}"

    @mcp.tool()
    def add(a: float, b: float) -> str:
        """Adds two numbers."""
        total = a + b
        if float(total).is_integer():
            return str(int(total))
        return str(total)

    @mcp.tool()
    async def long_running(ctx: Context, steps: int = 3, delay: float = 0.2) -> str:
        """Sends `steps` progress notifications, `delay` seconds apart."""
        for i in range(1, steps + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(i, steps)
        return f"done {steps}"

    @mcp.tool()
    def pid() -> str:
        """Returns this server's process id."""
        return str(os.getpid())

    @mcp.prompt()
    def greet(name: str) -> str:
        """Greets someone."""
        return f"Hello, {name}!"

    @mcp.resource("sse://static/hello", mime_type="text/plain")
    def hello() -> str:
        """A static text resource."""
        return "hello from sse_server"

    return mcp


class RequireHeader:
    """ASGI middleware: 401 for HTTP requests without the exact header."""

    def __init__(self, app, name: str, value: str) -> None:
        self.app = app
        self.name = name.lower().encode("latin-1")
        self.value = value.encode("latin-1")

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            got = dict(scope.get("headers") or []).get(self.name)
            if got != self.value:
                body = b'{"error":"unauthorized"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class ForeignEndpoint:
    """ASGI middleware: the `endpoint` event names ORIGIN instead of this server."""

    def __init__(self, app, origin: str) -> None:
        self.app = app
        self.origin = origin.rstrip("/").encode("ascii")

    async def __call__(self, scope, receive, send):
        async def rewrite(message):
            if message["type"] == "http.response.body":
                body = message.get("body", b"")
                if b"event: endpoint" in body:
                    body = body.replace(b"data: /", b"data: " + self.origin + b"/", 1)
                    message = {**message, "body": body}
            await send(message)

        await self.app(scope, receive, rewrite)


async def serve(port: int, require_header: str | None, transport: str, endpoint_origin: str | None) -> None:
    mcp = build_server()
    if transport == "http":
        app = mcp.streamable_http_app()
        path = mcp.settings.streamable_http_path
    else:
        app = mcp.sse_app()
        path = mcp.settings.sse_path
    if require_header:
        name, sep, value = require_header.partition(":")
        if not sep or not name.strip():
            raise SystemExit("--require-header must look like 'Name: value'")
        app = RequireHeader(app, name.strip(), value.strip())
    if endpoint_origin:
        app = ForeignEndpoint(app, endpoint_origin)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.set_inheritable(True)
    actual = sock.getsockname()[1]

    config = uvicorn.Config(app, log_level="warning", lifespan="on" if transport == "http" else "off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await anyio.sleep(0.01)
        print(f"LISTENING http://127.0.0.1:{actual}{path}", flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = pick a free one)")
    p.add_argument("--require-header", help="answer 401 unless this 'Name: value' header is present")
    p.add_argument("--transport", choices=["sse", "http"], default="sse", help="legacy SSE (default) or Streamable HTTP")
    p.add_argument("--endpoint-origin", help="name the POST endpoint on this origin (a foreign one) in the SSE stream")
    args = p.parse_args()
    anyio.run(serve, args.port, args.require_header, args.transport, args.endpoint_origin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
