#!/usr/bin/env python3
"""A long-lived MCP agent on the official Python SDK (`mcp`), driven line by line.

It connects over Streamable HTTP, initializes ONCE and keeps that session
(and client object) for as long as it runs, so a test can restart the server
underneath it and see whether the next call simply works.

    session_agent.py --url URL [--token TOKEN]

Prints one JSON line when ready: {"ready": true, "session_id": "...",
"protocol_version": "..."} (or {"ready": false, "error": "..."} and exits 1).
Then reads one JSON command per line on stdin and answers one JSON line each:

    {"op": "call", "tool": "NAME", "args": {...}} -> {"ok": true, "text": "...", "is_error": false}
    {"op": "call", ..., "progress": true}        -> ... and "progress": [values], each
                                                    progress notification the SDK handed
                                                    its callback before the result, in order
    {"op": "list"}                                -> {"ok": true, "tools": ["...", ...]}
    {"op": "ping"}                                -> {"ok": true}
    {"op": "session"}                             -> {"ok": true, "session_id": "..."}
    {"op": "changes"}                             -> {"ok": true, "tool_list_changed": N}, the
                                                    notifications/tools/list_changed seen so far

A failed command answers {"ok": false, "error": "..."} and the agent goes on.
It exits when stdin closes.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

REQUEST_TIMEOUT = timedelta(seconds=30)


# What the server told this agent on its own.
SEEN = {"tool_list_changed": 0}


async def on_message(message: Any) -> None:
    if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
        SEEN["tool_list_changed"] += 1


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def handle(session: ClientSession, get_session_id, command: dict[str, Any]) -> dict[str, Any]:
    op = command.get("op")
    if op == "call":
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        result = await session.call_tool(
            command["tool"],
            command.get("args") or {},
            read_timeout_seconds=REQUEST_TIMEOUT,
            progress_callback=on_progress if command.get("progress") else None,
        )
        answer = {
            "ok": True,
            "text": text_of(result),
            "is_error": bool(result.isError),
            "structured": result.structuredContent,
        }
        if command.get("progress"):
            # Copied now: only what came before the result counts.
            answer["progress"] = list(progress)
        return answer
    if op == "list":
        tools = await session.list_tools()
        return {"ok": True, "tools": [t.name for t in tools.tools]}
    if op == "ping":
        await session.send_ping()
        return {"ok": True}
    if op == "session":
        return {"ok": True, "session_id": get_session_id()}
    if op == "changes":
        return {"ok": True, "tool_list_changed": SEEN["tool_list_changed"]}
    return {"ok": False, "error": f"unknown op {op!r}"}


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token")
    args = p.parse_args()
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}

    http = create_mcp_http_client(headers=headers)
    async with http:
        async with streamable_http_client(args.url, http_client=http) as (read, write, get_session_id):
            async with ClientSession(
                read,
                write,
                client_info=types.Implementation(name="mcpool-session-agent-py", version="0.1.0"),
                message_handler=on_message,
            ) as session:
                try:
                    init = await session.initialize()
                except Exception as exc:  # noqa: BLE001 - reported to the test
                    emit({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
                    return 1
                emit(
                    {
                        "ready": True,
                        "session_id": get_session_id(),
                        "protocol_version": str(init.protocolVersion),
                    }
                )
                stdin = anyio.wrap_file(sys.stdin)
                async for line in stdin:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        command = json.loads(line)
                        with anyio.fail_after(REQUEST_TIMEOUT.total_seconds() + 5):
                            emit(await handle(session, get_session_id, command))
                    except Exception as exc:  # noqa: BLE001 - reported to the test
                        emit({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
