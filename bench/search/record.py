#!/usr/bin/env python3
"""Record the tools/list output of real MCP servers into catalog.json, and check queries.json.

Recording (stdio only, one timeout per server):

    python bench/search/record.py --install            # pip-install the PyPI servers into --venv
    python bench/search/record.py                      # record every server in servers.json
    python bench/search/record.py --only git,time      # re-record some, keeping the others

Checking (no server is started):

    python bench/search/record.py --check

Needs the official MCP Python SDK (mcp==1.30.0), e.g. /work/main/.venv/bin/python.
npm servers are started with `npx -y package@version`, so Node and the npm registry are needed;
PyPI servers run from a virtualenv (--venv) that --install fills with the pinned versions.

servers.json is a list of
    {"name", "package", "version", "registry": "npm"|"pypi", "command", "args", "env", "note", "display"?}
where command/args/env may use {venv} (the virtualenv) and {scratch} (a scratch folder that
holds an empty git repository and a small project folder, so no server touches the real repo;
it is also the servers' HOME). "display", when given, is the catalog's `command` (the line a
user would put in their config); otherwise that is command + args.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def subst(value: str, venv: Path, scratch: Path) -> str:
    return value.replace("{venv}", str(venv)).replace("{scratch}", str(scratch))


def prepare_scratch(scratch: Path) -> None:
    """A throwaway folder: {scratch}/project for file servers, {scratch}/repo an empty git repo."""
    project = scratch / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "README.md").write_text("scratch project for recording tools/list\n")
    repo = scratch / "repo"
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (scratch / "home").mkdir(exist_ok=True)


def install(servers: list[dict], venv: Path) -> None:
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    specs = [f"{s['package']}=={s['version']}" for s in servers if s["registry"] == "pypi"]
    if specs:
        subprocess.run([str(venv / "bin" / "pip"), "install", *specs], check=True)


def display_command(server: dict) -> str:
    """The command line a user would put in their config (the catalog's `command`)."""
    if server.get("display"):
        return server["display"]
    return " ".join([server["command"], *server.get("args", [])])


async def record_one(server: dict, venv: Path, scratch: Path, timeout: float, logdir: Path, settle: float = 2.0) -> dict:
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client

    async def _refuse(context, params):
        return types.ErrorData(code=types.INVALID_REQUEST, message="the recorder only lists tools")

    async def _no_roots(context):
        return types.ListRootsResult(roots=[])

    env = {k: subst(v, venv, scratch) for k, v in server.get("env", {}).items()}
    # Keep npm/npx caches and any files a server writes out of the real home and the repo.
    env.setdefault("HOME", str(scratch / "home"))
    env.setdefault("npm_config_cache", os.environ.get("npm_config_cache", str(Path.home() / ".npm")))
    if (Path.home() / ".npmrc").exists():  # the real npm settings still apply under the scratch HOME
        env.setdefault("npm_config_userconfig", str(Path.home() / ".npmrc"))
    env.setdefault("npm_config_update_notifier", "false")
    env.setdefault("npm_config_fund", "false")
    env.setdefault("npm_config_audit", "false")
    params = StdioServerParameters(
        command=subst(server["command"], venv, scratch),
        args=[subst(a, venv, scratch) for a in server.get("args", [])],
        env=env,  # merged by the SDK with its small safe default environment (PATH, ...)
        cwd=str(scratch / "project"),
    )
    logdir.mkdir(parents=True, exist_ok=True)
    changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
            changed.set()

    async def list_all(session) -> list[dict]:
        tools: list[dict] = []
        cursor = None
        for _ in range(100):
            result = await session.list_tools(cursor=cursor)
            # exclude_unset: each tool exactly as the server sent it (fields it left out stay out)
            tools += [t.model_dump(mode="json", by_alias=True, exclude_unset=True) for t in result.tools]
            cursor = result.nextCursor
            if not cursor:
                break
        return tools

    got: dict = {}
    with open(logdir / f"{server['name']}.stderr.log", "w") as errlog:
        try:
            async with asyncio.timeout(timeout):
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(
                        read,
                        write,
                        # Declared so that servers which list some tools only to capable clients
                        # (sampling, elicitation, roots: e.g. server-everything) list them all.
                        # Nothing is ever called, so each callback just refuses.
                        sampling_callback=_refuse,
                        elicitation_callback=_refuse,
                        list_roots_callback=_no_roots,
                        message_handler=on_message,
                        client_info=types.Implementation(name="mcpool-bench-search-recorder", version="1"),
                    ) as session:
                        init = await session.initialize()
                        # Some servers register tools just after initialization (and say so with
                        # notifications/tools/list_changed): give them a moment, and list again on a change.
                        await asyncio.sleep(settle)
                        changed.clear()
                        tools = await list_all(session)
                        for _ in range(5):
                            await asyncio.sleep(settle)
                            if not changed.is_set():
                                break
                            changed.clear()
                            tools = await list_all(session)
                        got = {"init": init, "tools": tools}
        except BaseException:
            # A server that writes one more message while the client shuts it down breaks the
            # SDK's reader; what was listed before that stands.
            if not got or not isinstance(sys.exc_info()[1], Exception):
                raise
            print(f"note {server['name']}: error at shutdown, after listing: {sys.exc_info()[1]!r}"[:300], flush=True)
    init, tools = got["init"], got["tools"]
    return {
        "name": server["name"],
        "package": server["package"],
        "version": server["version"],
        "registry": server["registry"],
        "command": display_command(server),
        "instructions": init.instructions,
        "tools": tools,
    }


async def record_all(servers: list[dict], args) -> list[dict]:
    venv, scratch = Path(args.venv), Path(args.scratch)
    prepare_scratch(scratch)
    sem = asyncio.Semaphore(args.jobs)
    out: dict[str, dict] = {}

    async def run(server):
        async with sem:
            t0 = asyncio.get_running_loop().time()
            try:
                out[server["name"]] = await record_one(server, venv, scratch, args.timeout, Path(args.logs), args.settle)
                n = len(out[server["name"]]["tools"])
                print(f"ok   {server['name']:22} {n:4} tools  {asyncio.get_running_loop().time() - t0:6.1f}s", flush=True)
            except BaseException as e:  # noqa: BLE001 - report and go on with the others
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                msg = repr(e)
                if isinstance(e, BaseExceptionGroup):
                    msg = "; ".join(repr(x) for x in e.exceptions)
                print(f"FAIL {server['name']:22} {msg[:300]}", flush=True)

    await asyncio.gather(*(run(s) for s in servers))
    return [out[s["name"]] for s in servers if s["name"] in out]


# ---------------------------------------------------------------- check

SECRET_PATTERNS = [
    r"\bsk_(live|test)_[0-9A-Za-z]{10,}",
    r"\brk_(live|test)_[0-9A-Za-z]{10,}",
    r"\bgh[pousr]_[0-9A-Za-z]{20,}",
    r"\bgithub_pat_[0-9A-Za-z_]{20,}",
    r"\bglpat-[0-9A-Za-z_-]{16,}",
    r"\bxox[abprs]-[0-9A-Za-z-]{10,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bntn_[0-9A-Za-z]{20,}",
    r"\bsecret_[0-9A-Za-z]{30,}",
    r"\bsbp_[0-9a-f]{20,}",
    r"\bfc-[0-9a-f]{20,}",
    r"\btvly-[0-9A-Za-z]{10,}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    r"\beyJ[0-9A-Za-z_-]{20,}\.[0-9A-Za-z_-]{20,}",  # JWT
    r"mongodb(\+srv)?://[^\s\"'<>]*:[^\s\"'<>@]+@",  # URI with a password
    r"postgres(ql)?://[^\s\"'<>]*:[^\s\"'<>@]+@",
]


def check(catalog_path: Path, queries_path: Path, servers_path: Path) -> int:
    catalog = json.loads(catalog_path.read_text())
    errors: list[str] = []
    names: dict[str, int] = {}
    tool_count: dict[str, int] = {}
    for s in catalog["servers"]:
        tool_count[s["name"]] = len(s["tools"])
        seen = set()
        for t in s["tools"]:
            if t["name"] in seen:
                errors.append(f"duplicate tool {s['name']}/{t['name']}")
            seen.add(t["name"])
            names[f"{s['name']}/{t['name']}"] = 0
    if len(tool_count) != len(catalog["servers"]):
        errors.append("duplicate server name in catalog")

    # The dummy values passed to servers, and anything that looks like a real credential.
    servers = json.loads(servers_path.read_text()) if servers_path.exists() else []
    text = catalog_path.read_text()
    for pat in SECRET_PATTERNS:
        for m in re.finditer(pat, text):
            errors.append(f"secret-looking value in catalog: {m.group(0)[:40]}")
    for s in servers:
        for k, v in s.get("env", {}).items():
            if len(v) >= 8 and "{" not in v and not v.isalpha() and v in text:
                errors.append(f"value of {s['name']} env {k} appears in the catalog")

    queries = json.loads(queries_path.read_text())["queries"]
    splits: dict[str, int] = {}
    per_server: dict[str, dict[str, int]] = {}
    seen_q: set[str] = set()
    for i, q in enumerate(queries):
        where = f"query {i} {q.get('query')!r}"
        if set(q) - {"query", "relevant", "split"}:
            errors.append(f"{where}: unknown keys {set(q) - {'query', 'relevant', 'split'}}")
        if not isinstance(q.get("query"), str) or not q["query"].strip():
            errors.append(f"{where}: empty query")
        key = q["query"].strip().lower()
        if key in seen_q:
            errors.append(f"{where}: duplicate query")
        seen_q.add(key)
        rel = q.get("relevant", [])
        if not 1 <= len(rel) <= 3:
            errors.append(f"{where}: {len(rel)} relevant tools (want 1-3)")
        if len(set(rel)) != len(rel):
            errors.append(f"{where}: repeated relevant tool")
        if q.get("split") not in ("dev", "test"):
            errors.append(f"{where}: split {q.get('split')!r}")
        splits[q.get("split")] = splits.get(q.get("split"), 0) + 1
        for r in rel:
            if r not in names:
                errors.append(f"{where}: {r} is not in the catalog")
                continue
            names[r] += 1
            srv = r.split("/", 1)[0]
            per_server.setdefault(srv, {"dev": 0, "test": 0})[q["split"]] += 1
        # A query that copies a multi-word tool name verbatim is too easy.
        for r in rel:
            tool = r.split("/", 1)[1]
            words = re.sub(r"[_\-]+", " ", tool).lower().strip()
            if " " in words and (tool in q["query"] or words in q["query"].lower()):
                errors.append(f"{where}: quotes the tool name {tool}")

    total_tools = sum(tool_count.values())
    print(f"catalog: {len(tool_count)} servers, {total_tools} tools")
    print(f"queries: {len(queries)} ({', '.join(f'{k}={v}' for k, v in sorted(splits.items()))})")
    print(f"distinct relevant tools: {sum(1 for v in names.values() if v)} of {total_tools}")
    print(f"{'server':22} {'tools':>5} {'dev':>4} {'test':>4}")
    for s in catalog["servers"]:
        ps = per_server.get(s["name"], {"dev": 0, "test": 0})
        print(f"{s['name']:22} {tool_count[s['name']]:5} {ps['dev']:4} {ps['test']:4}")
        if ps["dev"] == 0 or ps["test"] == 0:
            errors.append(f"server {s['name']} is not covered by both splits")
    if len(queries) < 200:
        errors.append(f"only {len(queries)} queries (want >= 200)")
    for e in errors:
        print("ERROR", e)
    print("check:", "ok" if not errors else f"{len(errors)} errors")
    return 1 if errors else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default=str(HERE / "servers.json"))
    ap.add_argument("--out", default=str(HERE / "catalog.json"))
    ap.add_argument("--queries", default=str(HERE / "queries.json"))
    ap.add_argument("--only", help="comma-separated server names to (re-)record; the others are kept from --out")
    ap.add_argument("--venv", default="/tmp/evalrec/venv", help="virtualenv for the PyPI servers")
    ap.add_argument("--scratch", default="/tmp/evalrec/scratch", help="scratch folder for {scratch}")
    ap.add_argument("--logs", default="/tmp/evalrec/logs", help="folder for each server's stderr")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per server (npx may download first)")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds to wait after initialize (and after a list_changed)")
    ap.add_argument("--jobs", type=int, default=3, help="servers recorded at once")
    ap.add_argument("--date", default=dt.date.today().isoformat())
    ap.add_argument("--install", action="store_true", help="pip-install the PyPI servers into --venv and stop")
    ap.add_argument("--check", action="store_true", help="check queries.json against catalog.json (and the livemcpbench set) and stop")
    args = ap.parse_args()

    if args.check:
        own = check(Path(args.out), Path(args.queries), Path(args.servers))
        # The LiveMCPBench set has its own format checks.
        sys.path.insert(0, str(HERE / "livemcpbench"))
        import convert  # noqa: E402

        return own or convert.check()
    servers = json.loads(Path(args.servers).read_text())
    if args.install:
        install(servers, Path(args.venv))
        return 0
    chosen = servers
    if args.only:
        wanted = set(args.only.split(","))
        chosen = [s for s in servers if s["name"] in wanted]
    recorded = {s["name"]: s for s in asyncio.run(record_all(chosen, args))}
    old = {}
    if args.only and Path(args.out).exists():
        old = {s["name"]: s for s in json.loads(Path(args.out).read_text())["servers"]}
    merged = [recorded.get(s["name"]) or old.get(s["name"]) for s in servers]
    merged = [m for m in merged if m]
    catalog = {"recorded": args.date, "servers": merged}
    Path(args.out).write_text(json.dumps(catalog, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}: {len(merged)} servers, {sum(len(s['tools']) for s in merged)} tools")
    return 0 if len(recorded) == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
