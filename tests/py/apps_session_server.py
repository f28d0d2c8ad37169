"""A stdio MCP Apps server on a session revision: the official Python
SDK's low-level `Server` (mcp 1.x, 2025-11-25), which does not know the
extension, so this one says it itself: its `initialize` offers
`io.modelcontextprotocol/ui`, and its tool `clock` answers "app" to a
client whose `initialize` declared MCP Apps (with the app MIME type, as
SEP-2133 asks) and "text" to one that did not. Its `ui://clock/app.html`
resource is the app. A test sees which capability reached the server."""

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server

UI = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"
APP = "ui://clock/app.html"

server = Server("apps-session")


def client_shows_apps() -> bool:
    params = server.request_context.session.client_params
    extensions = (params.capabilities.model_extra or {}).get("extensions") if params else None
    settings = (extensions or {}).get(UI)
    return isinstance(settings, dict) and APP_MIME in (settings.get("mimeTypes") or [])


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name="clock",
            description="The time, as an app where the client shows apps",
            inputSchema={"type": "object"},
            _meta={"ui": {"resourceUri": APP}},
        )
    ]


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    return [types.TextContent(type="text", text="app" if client_shows_apps() else "text")]


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    return [types.Resource(uri=APP, name="clock", mimeType=APP_MIME)]


@server.read_resource()
async def read_resource(uri) -> str:
    return "<!doctype html><title>clock</title>"


async def main() -> None:
    capabilities = server.get_capabilities(NotificationOptions(), {})
    offered = types.ServerCapabilities(
        **capabilities.model_dump(exclude_none=True), extensions={UI: {"mimeTypes": [APP_MIME]}}
    )
    options = InitializationOptions(server_name="apps-session", server_version="1.0.0", capabilities=offered)
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
