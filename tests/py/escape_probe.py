"""A stdio MCP server, Python's standard library only (so that any user can
run it from a copy), that tries what a confined server must not do and says
what happened: list /proc, read another process's /proc entries, signal it,
connect to Unix sockets by path or abstract name, send UDP, read and write
files, and read its own capabilities and environment. Every answer is one
line: `refused: …` when the system said no."""

import json
import os
import signal as signals
import socket
import sys


def attempt(action):
    try:
        return action()
    except OSError as e:
        return f"refused: {e}"


def pids():
    return "pids: " + " ".join(sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int))


def read(path):
    def go():
        with open(path, "rb") as f:
            return "read: " + f.read(4096).replace(b"\0", b" ").decode("utf-8", "replace")
    return attempt(go)


def listing(path):
    return attempt(lambda: "listed: " + " ".join(sorted(os.listdir(path))))


def write(path, text):
    def go():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return "written"
    return attempt(go)


def signal(pid, sig):
    def go():
        os.kill(int(pid), int(sig))
        return "sent"
    return attempt(go)


def unix(address):
    def go():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect("\0" + address[1:] if address.startswith("@") else address)
        s.close()
        return "connected"
    return attempt(go)


def udp(port):
    def go():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"escape", ("127.0.0.1", int(port)))
        s.close()
        return "sent"
    return attempt(go)


def tcp(port):
    return attempt(lambda: (socket.create_connection(("127.0.0.1", int(port)), timeout=3).close(), "connected")[1])


def status(field):
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()
    return "none"


def getenv(name):
    value = os.environ.get(name)
    return "unset" if value is None else "set: " + value


TOOLS = {
    "pids": (pids, []),
    "read": (read, ["path"]),
    "list": (listing, ["path"]),
    "write": (write, ["path", "text"]),
    "signal": (signal, ["pid", "sig"]),
    "unix": (unix, ["address"]),
    "udp": (udp, ["port"]),
    "tcp": (tcp, ["port"]),
    "status": (status, ["field"]),
    "getenv": (getenv, ["name"]),
}


def answer(message):
    method, id_ = message.get("method"), message.get("id")
    if id_ is None:
        return None
    if method == "initialize":
        result = {
            "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "escape-probe", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [
            {"name": name, "description": f"tries {name}", "inputSchema": {
                "type": "object",
                "properties": {a: {"type": "string"} for a in args},
            }}
            for name, (_, args) in TOOLS.items()
        ]}
    elif method == "tools/call":
        name = message["params"]["name"]
        arguments = message["params"].get("arguments") or {}
        action, args = TOOLS[name]
        text = action(*[str(arguments.get(a, "")) for a in args])
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": id_, "result": result}


if __name__ == "__main__":
    signals.signal(signals.SIGTERM, lambda *_: sys.exit(0))
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
