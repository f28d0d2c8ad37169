"""A stdio MCP server (the official Python SDK's FastMCP) whose tool
`echo_meta` answers with the `_meta` of the request that called it, so a
test sees what an upstream server receives (the `traceparent`)."""

import json

from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("meta")


@mcp.tool()
def echo_meta(text: str, ctx: Context) -> str:
    """Answers with this request's `_meta` as JSON (and ignores `text`)."""
    meta = ctx.request_context.meta
    return json.dumps(meta.model_dump(exclude_none=True) if meta else {})


if __name__ == "__main__":
    mcp.run("stdio")
