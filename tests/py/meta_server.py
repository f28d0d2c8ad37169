"""A stdio MCP server (the official Python SDK's FastMCP, `MCPServer` in
mcp 2.x) whose tool `echo_meta` answers with the `_meta` of the request that
called it, so a test sees what an upstream server receives (the
`traceparent`, an agent's own keys)."""

import json

try:
    from mcp.server.fastmcp import Context, FastMCP
except ModuleNotFoundError:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as FastMCP

mcp = FastMCP("meta")


@mcp.tool()
def echo_meta(text: str, ctx: Context) -> str:
    """Answers with this request's `_meta` as JSON (and ignores `text`)."""
    meta = ctx.request_context.meta
    if hasattr(meta, "model_dump"):
        meta = meta.model_dump(exclude_none=True)
    return json.dumps(meta or {}, default=str)


if __name__ == "__main__":
    mcp.run("stdio")
