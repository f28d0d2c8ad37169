#!/usr/bin/env python3
"""A scripted MCP agent built on the official Python SDK (`mcp`).

The Rust end-to-end tests run it against mcpool's endpoints (and against
reference servers) to prove that a real SDK client sees what the contract
promises. It connects, initializes, runs the requested steps and prints ONE
JSON object on stdout describing what it saw.

Transports:
  --url URL                Streamable HTTP (default) or, with --transport sse,
                           a legacy SSE endpoint (".../sse").
  --stdio-cmd "CMD ARGS"   spawn CMD and speak MCP over its stdin/stdout
                           (split with shlex; the child inherits this
                           process's environment, plus MCPOOL_TOKEN=TOKEN when
                           --token is given and MCPOOL_TOKEN is not set).

Steps (--scenario, comma-separated, run in this order):
  list      tools/list, prompts/list, resources/list      -> "tools", "prompts_list", "resources_list"
  call      tools/call --tool T --args JSON [--parallel N] -> "call" (or "calls" when N > 1)
  progress  tools/call --progress-tool T --progress-args JSON with a progress
            callback                                       -> "progress", "progress_events", "progress_call"
  prompt    prompts/get --prompt P --prompt-args JSON      -> "prompt"
  resource  resources/read --resource URI                  -> "resource", "resource_contents"
  ping      ping                                           -> "ping"
  all       list, then every other step whose option was given

Output keys always present: "scenario", "steps", "server_info" (null if
initialize failed), "notifications" (methods of server notifications seen).
A step that fails with a protocol error records {"error": {...}} in its key.
A fatal failure (connect, HTTP status, initialize, timeout) records a
top-level "error": {"stage", "message", "http_status"?, "code"?}.

Exit status: 0 when every step succeeded (a tool result with isError=true is
a success: the server answered); 1 when any step or the session failed (the
JSON object is still printed, and a one-line reason goes to stderr); 2 for
bad command-line usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
from datetime import timedelta
from typing import Any

import anyio
import httpx
from mcp import ClientSession, McpError, types
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

STEP_ORDER = ["list", "call", "progress", "prompt", "resource", "ping"]


class UsageError(Exception):
    pass


class StepFailed(Exception):
    pass


def parse_json_object(value: str | None, flag: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag} is not valid JSON: {exc}") from exc
    if not isinstance(parsed, dict):
        raise UsageError(f"{flag} must be a JSON object, got {type(parsed).__name__}")
    return parsed


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Scripted MCP agent (official Python SDK) that prints one JSON object.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="endpoint URL (Streamable HTTP, or legacy SSE with --transport sse)")
    target.add_argument("--stdio-cmd", help="command line to spawn and talk to over stdio")
    p.add_argument("--transport", choices=["http", "sse"], default="http", help="transport for --url (default http)")
    p.add_argument("--token", help="bearer token: sent as 'Authorization: Bearer TOKEN' (HTTP/SSE)")
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="extra HTTP header, repeatable (e.g. --header 'Origin: http://evil.example')",
    )
    p.add_argument("--scenario", required=True, help="comma-separated steps: " + ",".join(STEP_ORDER) + " or all")
    p.add_argument("--tool", help="tool name for the call step")
    p.add_argument("--args", help="JSON object of arguments for --tool")
    p.add_argument("--parallel", type=int, default=1, help="run the call step N times concurrently in one session")
    p.add_argument("--progress-tool", help="tool name for the progress step")
    p.add_argument("--progress-args", help="JSON object of arguments for --progress-tool")
    p.add_argument("--prompt", help="prompt name for the prompt step")
    p.add_argument("--prompt-args", help="JSON object of string arguments for --prompt")
    p.add_argument("--resource", help="resource URI for the resource step")
    p.add_argument("--timeout", type=float, default=60.0, help="overall deadline in seconds (default 60)")
    p.add_argument("--request-timeout", type=float, default=None, help="per-request read timeout in seconds")
    p.add_argument("--linger", type=float, default=0.0, help="seconds to keep the session open after the steps")
    p.add_argument("--client-name", default="mcpool-test-agent", help="clientInfo.name sent at initialize")
    return p.parse_args(argv)


def resolve_steps(args: argparse.Namespace) -> list[str]:
    requested = [s.strip() for s in args.scenario.split(",") if s.strip()]
    if not requested:
        raise UsageError("--scenario is empty")
    steps: set[str] = set()
    for s in requested:
        if s == "all":
            steps.add("list")
            if args.tool:
                steps.add("call")
            if args.progress_tool:
                steps.add("progress")
            if args.prompt:
                steps.add("prompt")
            if args.resource:
                steps.add("resource")
        elif s in STEP_ORDER:
            steps.add(s)
        else:
            raise UsageError(f"unknown scenario step {s!r} (known: {', '.join(STEP_ORDER)}, all)")
    if "call" in steps and not args.tool:
        raise UsageError("step 'call' needs --tool")
    if "progress" in steps and not args.progress_tool:
        raise UsageError("step 'progress' needs --progress-tool")
    if "prompt" in steps and not args.prompt:
        raise UsageError("step 'prompt' needs --prompt")
    if "resource" in steps and not args.resource:
        raise UsageError("step 'resource' needs --resource")
    if args.parallel < 1:
        raise UsageError("--parallel must be at least 1")
    return [s for s in STEP_ORDER if s in steps]


def build_headers(args: argparse.Namespace) -> dict[str, str]:
    headers: dict[str, str] = {}
    if args.token is not None:
        headers["Authorization"] = f"Bearer {args.token}"
    for h in args.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header must look like 'Name: value', got {h!r}")
        headers[name.strip()] = value.strip()
    return headers


# ---------------------------------------------------------------- rendering


def content_to_text(item: Any) -> str | None:
    """Text of a text content block; None for other kinds."""
    if isinstance(item, types.TextContent):
        return item.text
    return None


def describe_content(item: Any) -> str:
    if isinstance(item, types.TextContent):
        return item.text
    if isinstance(item, types.ImageContent):
        return f"[image {item.mimeType}]"
    if isinstance(item, types.AudioContent):
        return f"[audio {item.mimeType}]"
    if isinstance(item, types.EmbeddedResource):
        res = item.resource
        if isinstance(res, types.TextResourceContents):
            return res.text
        return f"[blob {res.mimeType} {res.uri}]"
    if isinstance(item, types.ResourceLink):
        return f"[resource_link {item.uri}]"
    return f"[{getattr(item, 'type', type(item).__name__)}]"


def render_call_result(result: types.CallToolResult) -> dict[str, Any]:
    texts = [t for t in (content_to_text(c) for c in result.content) if t is not None]
    out: dict[str, Any] = {
        "isError": bool(result.isError),
        "text": texts,
        "content_types": [getattr(c, "type", type(c).__name__) for c in result.content],
    }
    if result.structuredContent is not None:
        out["structured"] = result.structuredContent
    return out


def error_info(exc: BaseException) -> dict[str, Any]:
    """Flatten an exception (or exception group) into a JSON-able description."""
    leaves = list(iter_leaves(exc))
    # Prefer the most informative leaf: HTTP status, then MCP error, then anything else.
    chosen = next((e for e in leaves if isinstance(e, httpx.HTTPStatusError)), None)
    chosen = chosen or next((e for e in leaves if isinstance(e, McpError)), None)
    chosen = chosen or next((e for e in leaves if not isinstance(e, asyncio.CancelledError)), None)
    chosen = chosen or exc
    info: dict[str, Any] = {"type": type(chosen).__name__}
    if isinstance(chosen, httpx.HTTPStatusError):
        info["http_status"] = chosen.response.status_code
        body = ""
        try:
            body = chosen.response.text
        except Exception:  # streamed response whose body was not read
            pass
        info["message"] = f"HTTP {chosen.response.status_code} from {chosen.request.method} {chosen.request.url}"
        if body:
            info["body"] = body[:2000]
    elif isinstance(chosen, McpError):
        info["code"] = chosen.error.code
        info["message"] = chosen.error.message
        if chosen.error.data is not None:
            info["data"] = chosen.error.data
    else:
        info["message"] = str(chosen) or type(chosen).__name__
    if len(leaves) > 1:
        info["all"] = [f"{type(e).__name__}: {e}" for e in leaves]
    return info


def iter_leaves(exc: BaseException):
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            yield from iter_leaves(sub)
    else:
        yield exc


# ---------------------------------------------------------------- steps


async def run_steps(session: ClientSession, args: argparse.Namespace, steps: list[str], out: dict[str, Any]) -> bool:
    ok = True
    req_timeout = timedelta(seconds=args.request_timeout) if args.request_timeout else None

    async def step(name: str, key: str, fn) -> None:
        nonlocal ok
        out["current_step"] = name
        try:
            out[key] = await fn()
        except McpError as exc:
            ok = False
            out[key] = {"error": error_info(exc)}
        except StepFailed as exc:
            ok = False
            out[key] = {"error": {"message": str(exc)}}

    if "list" in steps:

        async def do_list() -> list[str]:
            tools: list[str] = []
            cursor = None
            while True:
                res = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
                tools.extend(t.name for t in res.tools)
                cursor = res.nextCursor
                if not cursor:
                    return tools

        await step("list", "tools", do_list)
        caps = session.get_server_capabilities()
        if caps is not None and caps.prompts is not None:

            async def do_list_prompts() -> list[str]:
                return [p.name for p in (await session.list_prompts()).prompts]

            await step("list", "prompts_list", do_list_prompts)
        if caps is not None and caps.resources is not None:

            async def do_list_resources() -> list[str]:
                return [str(r.uri) for r in (await session.list_resources()).resources]

            await step("list", "resources_list", do_list_resources)

    if "call" in steps:
        tool_args = parse_json_object(args.args, "--args")

        async def one_call() -> dict[str, Any]:
            res = await session.call_tool(args.tool, tool_args, read_timeout_seconds=req_timeout)
            return render_call_result(res)

        if args.parallel == 1:
            await step("call", "call", one_call)
        else:

            async def many_calls() -> list[dict[str, Any]]:
                results: list[dict[str, Any]] = [{} for _ in range(args.parallel)]

                async def worker(i: int) -> None:
                    try:
                        results[i] = await one_call()
                    except McpError as exc:
                        results[i] = {"error": error_info(exc)}

                async with anyio.create_task_group() as tg:
                    for i in range(args.parallel):
                        tg.start_soon(worker, i)
                if any("error" in r for r in results):
                    out["calls"] = results
                    raise StepFailed("at least one of the parallel calls failed")
                return results

            await step("call", "calls", many_calls)

    if "progress" in steps:
        progress_args = parse_json_object(args.progress_args, "--progress-args")
        events: list[dict[str, Any]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            events.append({"progress": progress, "total": total, "message": message})

        async def do_progress() -> dict[str, Any]:
            res = await session.call_tool(
                args.progress_tool,
                progress_args,
                read_timeout_seconds=req_timeout,
                progress_callback=on_progress,
            )
            return render_call_result(res)

        try:
            await step("progress", "progress_call", do_progress)
        finally:
            out["progress"] = [e["progress"] for e in events]
            out["progress_events"] = events

    if "prompt" in steps:
        prompt_args = parse_json_object(args.prompt_args, "--prompt-args")
        prompt_args = {k: v if isinstance(v, str) else json.dumps(v) for k, v in prompt_args.items()}

        async def do_prompt() -> dict[str, Any]:
            res = await session.get_prompt(args.prompt, prompt_args or None)
            return {
                "description": res.description,
                "messages": [{"role": m.role, "text": describe_content(m.content)} for m in res.messages],
            }

        await step("prompt", "prompt", do_prompt)

    if "resource" in steps:

        async def do_resource() -> list[str]:
            res = await session.read_resource(args.resource)
            texts: list[str] = []
            contents: list[dict[str, Any]] = []
            for c in res.contents:
                if isinstance(c, types.TextResourceContents):
                    texts.append(c.text)
                    contents.append({"uri": str(c.uri), "mimeType": c.mimeType, "text": c.text})
                else:
                    texts.append(f"[blob {c.mimeType} {len(c.blob)} base64 chars]")
                    contents.append({"uri": str(c.uri), "mimeType": c.mimeType, "blob": c.blob})
            out["resource_contents"] = contents
            return texts

        await step("resource", "resource", do_resource)

    if "ping" in steps:

        async def do_ping() -> bool:
            await session.send_ping()
            return True

        await step("ping", "ping", do_ping)

    out.pop("current_step", None)
    if args.linger > 0:
        await anyio.sleep(args.linger)
    return ok


async def run(args: argparse.Namespace, steps: list[str], out: dict[str, Any]) -> bool:
    notifications: list[str] = out["notifications"]

    async def message_handler(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            notifications.append(message.root.method)
        elif isinstance(message, Exception):
            # Transport-level trouble reported by the SDK; remember it for the report.
            out.setdefault("transport_errors", []).append(f"{type(message).__name__}: {message}")

    async def with_streams(read, write) -> bool:
        async with ClientSession(
            read,
            write,
            message_handler=message_handler,
            client_info=types.Implementation(name=args.client_name, version="0.1.0"),
        ) as session:
            out["stage"] = "initialize"
            init = await session.initialize()
            out["server_info"] = {
                "name": init.serverInfo.name,
                "version": init.serverInfo.version,
                "title": getattr(init.serverInfo, "title", None),
                "protocolVersion": str(init.protocolVersion),
                "capabilities": sorted(
                    k for k, v in init.capabilities.model_dump(exclude_none=True).items() if v is not None
                ),
                "instructions": init.instructions,
            }
            out["stage"] = "steps"
            return await run_steps(session, args, steps, out)

    out["stage"] = "connect"
    if args.stdio_cmd:
        argv = shlex.split(args.stdio_cmd)
        if not argv:
            raise UsageError("--stdio-cmd is empty")
        env = dict(os.environ)
        if args.token is not None:
            env.setdefault("MCPOOL_TOKEN", args.token)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
        async with stdio_client(params) as (read, write):
            return await with_streams(read, write)

    headers = build_headers(args)
    if args.transport == "sse":
        async with sse_client(args.url, headers=headers, timeout=30) as (read, write):
            return await with_streams(read, write)

    http = create_mcp_http_client(headers=headers)
    async with http:
        async with streamable_http_client(args.url, http_client=http) as (read, write, _get_session_id):
            return await with_streams(read, write)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        steps = resolve_steps(args)
        build_headers(args)  # validate early
        parse_json_object(args.args, "--args")
        parse_json_object(args.progress_args, "--progress-args")
        parse_json_object(args.prompt_args, "--prompt-args")
    except UsageError as exc:
        print(f"agent.py: {exc}", file=sys.stderr)
        return 2

    out: dict[str, Any] = {"scenario": args.scenario, "steps": steps, "server_info": None, "notifications": []}

    async def guarded() -> bool:
        with anyio.fail_after(args.timeout):
            return await run(args, steps, out)

    ok = False
    try:
        ok = anyio.run(guarded)
    except TimeoutError:
        where = out.get("current_step") or out.get("stage")
        out["error"] = {"stage": out.get("stage"), "message": f"timed out after {args.timeout:g} s during {where}"}
    except UsageError as exc:
        print(f"agent.py: {exc}", file=sys.stderr)
        return 2
    except BaseException as exc:  # noqa: BLE001 - report everything, including exception groups
        if isinstance(exc, KeyboardInterrupt):
            raise
        info = error_info(exc)
        info["stage"] = out.get("stage")
        out["error"] = info
    if "error" in out:
        ok = False
    out.pop("stage", None)
    out.pop("current_step", None)
    out["ok"] = ok
    print(json.dumps(out, default=str), flush=True)
    if not ok:
        reason = out.get("error", {}).get("message") if "error" in out else "a step failed (see its \"error\" key)"
        print(f"agent.py: failed: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
