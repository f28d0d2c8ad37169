#!/usr/bin/env python3
"""One tool call from a 2026-07-28 agent on the official Python SDK v2 (mcp 2.x).

It connects to URL with a bearer token ("auto": server/discover first),
answers every elicitation with {"answer": ANSWER} (the SDK drives the
InputRequiredResult rounds), calls TOOL with {"message": MESSAGE}, and
prints ONE JSON object: {"protocol", "elicited": [messages], "text",
"is_error"}, or {"error": "..."} with exit status 1.

  agent2026.py --url URL --token TOKEN --tool TOOL --message TEXT --answer TEXT

It runs from <repo>/.venv-mcp2 (tests/py/requirements-mcp2.txt): the other
Python agents and servers of the tests stay on the 1.x SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client


async def run(args: argparse.Namespace) -> dict:
    elicited: list[str] = []

    async def on_elicit(_context, params):
        elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": args.answer})

    headers = {"Authorization": f"Bearer {args.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(args.url, http_client=http)
        async with Client(transport, elicitation_callback=on_elicit, mode="auto") as client:
            result = await client.call_tool(args.tool, {"message": args.message})
            text = "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")
            return {
                "protocol": client.session.protocol_version,
                "elicited": elicited,
                "text": text,
                "is_error": bool(result.is_error),
            }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("url", "token", "tool", "message", "answer"):
        parser.add_argument(f"--{name}", required=True)
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
