"""A stdio MCP Apps server on the official Python SDK v2 (mcp 2.x, its own
`mcp.server.apps` extension): it offers `io.modelcontextprotocol/ui`, and
its tool `clock` is bound to the app `ui://clock/app.html`. As SEP-2133 asks
of such a tool, it answers "app" to a client that negotiated MCP Apps and
"text" to one that did not, so a test sees which capability reached the
server with the call.

It runs from <repo>/.venv-mcp2 (tests/py/requirements-mcp2.txt)."""

from mcp.server.apps import Apps, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

APP_HTML = "<!doctype html><title>clock</title><p id=time></p>"

apps = Apps()


@apps.tool(resource_uri="ui://clock/app.html", description="The time, as an app where the client shows apps")
def clock(ctx: Context) -> str:
    return "app" if client_supports_apps(ctx) else "text"


apps.add_html_resource("ui://clock/app.html", APP_HTML, title="Clock")

mcp = MCPServer("apps", extensions=[apps])


if __name__ == "__main__":
    mcp.run("stdio")
