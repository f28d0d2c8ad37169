"""Two agents on the official Python SDK's client (mcp 1.x, 2025-11-25
tasks: `session.experimental`), each its own session on one MCP URL, and
what happened as one JSON line on stdout:

    task_agent.py --url URL --token TOKEN --tool NAME [--args JSON] [--long-args JSON]

`first` calls NAME as a task and follows it (tasks/get until it is done,
tasks/result, tasks/list), then starts a long one and cancels it; `other`
asks for the first one's task by its id (tasks/get and tasks/result) and
lists its own tasks. Each step's outcome is in the line, errors as text,
with the `notifications/tasks/status` each agent heard."""

import argparse
import json
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client


def caps(result: types.InitializeResult) -> Any:
    return result.capabilities.model_dump(mode="json", exclude_none=True)


async def attempt(step) -> Any:
    try:
        return await step()
    except Exception as e:  # what an agent would see
        return {"error": str(e)}


def listener(heard: list) -> Any:
    """A message handler that keeps each `notifications/tasks/status`."""

    async def handle(message: Any) -> None:
        root = getattr(message, "root", None)
        if isinstance(root, types.TaskStatusNotification):
            heard.append({"taskId": root.params.taskId, "status": root.params.status})

    return handle


async def run(url: str, token: str, tool: str, args: dict, long_args: dict) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    out: dict[str, Any] = {"notified": [], "other_notified": []}
    async with streamablehttp_client(url, headers=headers) as (r1, w1, _), ClientSession(
        r1, w1, message_handler=listener(out["notified"])
    ) as first:
        out["capabilities"] = caps(await first.initialize())
        listed = await first.list_tools()
        out["execution"] = {
            t.name: t.execution.model_dump(mode="json", exclude_none=True) for t in listed.tools if t.execution
        }
        made = await first.experimental.call_tool_as_task(tool, args)
        task_id = made.task.taskId
        out["created"] = made.task.model_dump(mode="json", exclude_none=True)
        status = None
        for _ in range(100):
            got = await first.experimental.get_task(task_id)
            status = got.status
            if status in ("completed", "failed", "cancelled"):
                break
            await anyio.sleep(0.1)
        out["status"] = status
        result = await first.experimental.get_task_result(task_id, types.CallToolResult)
        out["result"] = [c.text for c in result.content if isinstance(c, types.TextContent)]
        out["listed"] = [t.taskId for t in (await first.experimental.list_tasks()).tasks]
        long = await first.experimental.call_tool_as_task(tool, long_args)
        cancelled = await first.experimental.cancel_task(long.task.taskId)
        out["cancelled"] = {"same": cancelled.taskId == long.task.taskId, "status": cancelled.status}
        async with streamablehttp_client(url, headers=headers) as (r2, w2, _), ClientSession(
            r2, w2, message_handler=listener(out["other_notified"])
        ) as other:
            await other.initialize()

            async def peek():
                return (await other.experimental.get_task(task_id)).status

            async def take():
                result = await other.experimental.get_task_result(task_id, types.CallToolResult)
                return [c.text for c in result.content if isinstance(c, types.TextContent)]

            async def own():
                return [t.taskId for t in (await other.experimental.list_tasks()).tasks]

            out["other"] = {"get": await attempt(peek), "result": await attempt(take), "list": await attempt(own)}
        # The first task's status notification may trail its result a little.
        for _ in range(20):
            if any(n["status"] == "completed" for n in out["notified"]):
                break
            await anyio.sleep(0.1)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--args", default='{"a": 2, "b": 3, "seconds": 0.3}', help="the first call's arguments (JSON)")
    p.add_argument("--long-args", default='{"a": 1, "b": 1, "seconds": 30}', help="the cancelled call's (JSON)")
    a = p.parse_args()
    print(json.dumps(anyio.run(run, a.url, a.token, a.tool, json.loads(a.args), json.loads(a.long_args))), flush=True)


if __name__ == "__main__":
    main()
