"""A stdio MCP server (the official Python SDK's FastMCP) that tries what a
sandbox may refuse, and says what happened: reading a file, writing one, a
TCP connect to loopback, a child process (`cat`) reading a file, and
what of the environment reached it; with PROBE_NEED it reads that file
before it starts, with PROBE_SOCKET it connects to that Unix socket
before it starts (refused, it says so as Node does), and with PROBE_QUIET
it reads that one and, refused, exits at once without a word."""

import errno
import os
import socket
import subprocess
import sys

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("probe")


@mcp.tool()
def read(path: str) -> str:
    """Reads a file: `read: TEXT`, or `refused: ERROR`."""
    try:
        with open(path, encoding="utf-8") as f:
            return "read: " + f.read()
    except OSError as e:
        return f"refused: {e}"


@mcp.tool()
def write(path: str, text: str) -> str:
    """Writes a file: `written`, or `refused: ERROR`."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return "written"
    except OSError as e:
        return f"refused: {e}"


@mcp.tool()
def connect(port: int) -> str:
    """Opens a TCP connection to 127.0.0.1:PORT: `connected`, or `refused: ERROR`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return "connected"
    except OSError as e:
        return f"refused: {e}"


@mcp.tool()
def child_read(path: str) -> str:
    """Has a child process (`cat`) read a file: `read: TEXT`, or `refused: ERROR`."""
    done = subprocess.run(["cat", path], capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return "read: " + done.stdout
    return "refused: " + done.stderr.strip()


@mcp.tool()
def getenv(name: str) -> str:
    """A variable of this process's environment: `set: VALUE`, or `unset`."""
    value = os.environ.get(name)
    return "unset" if value is None else "set: " + value


if __name__ == "__main__":
    # PROBE_NEED: a file it cannot start without (a refused open ends it
    # at once, with Python's own words on stderr).
    need = os.environ.get("PROBE_NEED")
    if need:
        with open(need, encoding="utf-8") as f:
            f.read()
    # PROBE_SOCKET: a Unix socket it cannot start without (refused, the
    # line Node writes: `Error: connect ECONNREFUSED PATH`).
    needed_socket = os.environ.get("PROBE_SOCKET")
    if needed_socket:
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(needed_socket)
            except OSError as e:
                code = errno.errorcode.get(e.errno, str(e.errno))
                print(f"Error: connect {code} {needed_socket}", file=sys.stderr)
                sys.exit(1)
    quiet = os.environ.get("PROBE_QUIET")
    if quiet:
        try:
            with open(quiet, encoding="utf-8") as f:
                f.read()
        except OSError:
            sys.exit(3)
    mcp.run("stdio")
