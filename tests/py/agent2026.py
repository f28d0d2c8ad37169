#!/usr/bin/env python3
"""One tool call from a 2026-07-28 agent on the official Python SDK v2 (mcp 2.x).

It connects to URL with a bearer token, or spawns STDIO_CMD (a stdio
server such as `mcpool stdio`, with this process's environment), in MODE
(the SDK's default "auto": server/discover first; or a revision such as
2026-07-28: no probe at all), answers every elicitation with
{"answer": ANSWER} (the SDK drives the InputRequiredResult rounds), calls
TOOL with ARGS (default {"message": MESSAGE}), and prints ONE JSON object:
{"protocol", "elicited": [messages], "text", "is_error", "connect_s"}, or
{"error": "..."} with exit status 1.

  agent2026.py (--url URL --token TOKEN | --stdio-cmd CMD) [--mode MODE]
               --tool TOOL [--message TEXT --answer TEXT | --args JSON]

It runs from <repo>/.venv-mcp2 (tests/py/requirements-mcp2.txt): the other
Python agents and servers of the tests stay on the 1.x SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import time

import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


async def run(args: argparse.Namespace) -> dict:
    elicited: list[str] = []

    async def on_elicit(_context, params):
        elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": args.answer})

    tool_args = json.loads(args.args) if args.args else {"message": args.message}

    async def call(server) -> dict:
        started = time.monotonic()
        async with Client(server, elicitation_callback=on_elicit, mode=args.mode) as client:
            connect_s = time.monotonic() - started
            result = await client.call_tool(args.tool, tool_args)
            text = "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")
            return {
                "protocol": client.session.protocol_version,
                "elicited": elicited,
                "text": text,
                "is_error": bool(result.is_error),
                "connect_s": connect_s,
            }

    if args.stdio_cmd:
        words = shlex.split(args.stdio_cmd)
        return await call(StdioServerParameters(command=words[0], args=words[1:], env=dict(os.environ)))
    headers = {"Authorization": f"Bearer {args.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        return await call(streamable_http_client(args.url, http_client=http))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("url", "token", "stdio-cmd", "message", "answer", "args"):
        parser.add_argument(f"--{name}")
    parser.add_argument("--tool", required=True)
    parser.add_argument("--mode", default="auto")
    args = parser.parse_args()
    try:
        report = asyncio.run(run(args))
    except BaseException as e:  # noqa: BLE001 - the test reads the reason
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
