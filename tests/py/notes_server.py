"""A stdio MCP server on the official Python SDK (FastMCP in mcp 1.x,
`MCPServer` in 2.x) with one resource (its first argument, else
`note://a`) that clients may subscribe to, and a tool `touch` that
announces it changed
(`notifications/resources/updated`): to the subscribed session in 1.x, to
the `subscriptions/listen` streams that asked for it in 2.x (2026-07-28)."""

import sys

try:
    from mcp.server.fastmcp import Context, FastMCP
except ModuleNotFoundError:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as FastMCP

URI = sys.argv[1] if len(sys.argv) > 1 else "note://a"
mcp = FastMCP("notes")


@mcp.resource(URI)
def note() -> str:
    return "a note"


@mcp.tool()
async def touch(ctx: Context) -> str:
    """Announces that the note changed."""
    if hasattr(ctx, "notify_resource_updated"):  # mcp 2.x
        await ctx.notify_resource_updated(URI)
    else:
        await ctx.session.send_resource_updated(URI)
    return "touched"


if not hasattr(Context, "notify_resource_updated"):
    # mcp 1.x offers `resources.subscribe` once a handler is registered.
    @mcp._mcp_server.subscribe_resource()
    async def subscribe(uri) -> None:
        return None

    @mcp._mcp_server.unsubscribe_resource()
    async def unsubscribe(uri) -> None:
        return None


if __name__ == "__main__":
    mcp.run("stdio")
