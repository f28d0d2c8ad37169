"""A stdio MCP server on the official Python SDK (FastMCP in mcp 1.x,
`MCPServer` in 2.x) whose tool `wait` never answers on its own: it writes
"call wait" to the file named by its first argument when it starts and
"cancelled wait" when the SDK cancels it (on `notifications/cancelled`), so
a test sees a cancellation reach a real SDK server."""

import asyncio
import sys

try:
    from mcp.server.fastmcp import FastMCP
except ModuleNotFoundError:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as FastMCP

LOG = sys.argv[1]
mcp = FastMCP("slow")


def note(line: str) -> None:
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(line + "\n")


@mcp.tool()
async def wait() -> str:
    """Waits until cancelled."""
    note("call wait")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        note("cancelled wait")
        raise
    return "done"


if __name__ == "__main__":
    mcp.run("stdio")
