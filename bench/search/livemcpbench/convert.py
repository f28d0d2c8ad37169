#!/usr/bin/env python3
"""Builds the LiveMCPBench set of the search evaluation (catalog.json and
queries.json here) from the LiveMCPBench repository, and checks it.

    python3 bench/search/livemcpbench/convert.py --repo PATH   # a checkout of icip-cas/LiveMCPBench
    python3 bench/search/livemcpbench/convert.py --check

The catalog is `tools/LiveMCPTool/tools.json` (70 servers, 527 tools) with
each tool unchanged; a server is named by the key its config gives it. The
queries are `annotated_data/all_annotations.json` (95 tasks): the task's
`Question` is the query and its annotated `Tools` the needed tools. A tool
name that several servers define is one needed tool with alternatives,
written `a/x|b/x`; a name no server defines is left out (and counted).
The split is fixed by the query's text alone (SHA-256, even: dev), before
any ranking is run.
"""

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = "https://github.com/icip-cas/LiveMCPBench"
COMMIT = "a928e57"


def split_of(query: str) -> str:
    return "dev" if hashlib.sha256(query.encode()).digest()[0] % 2 == 0 else "test"


def server_name(raw: dict) -> str:
    keys = list(raw["tools"])
    name = keys[0] if len(keys) == 1 else raw["name"]
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def convert(repo: Path) -> None:
    tools = json.loads((repo / "tools/LiveMCPTool/tools.json").read_text())
    tasks = json.loads((repo / "annotated_data/all_annotations.json").read_text())
    servers = []
    by_tool: dict[str, list[str]] = {}
    for raw in tools:
        name = server_name(raw)
        assert name not in {s["name"] for s in servers}, name
        own = [t for entry in raw["tools"].values() for t in entry["tools"]]
        info = next(iter(raw["tools"].values()))
        kept = []
        for t in own:
            t = {k: v for k, v in t.items() if v is not None}
            kept.append(t)
            by_tool.setdefault(t["name"], []).append(name)
        servers.append({
            "name": name,
            "package": raw["name"],
            "version": str(info.get("version") or ""),
            "registry": raw.get("web") or "",
            "command": " ".join([c["command"], *c.get("args", [])]) if (c := next(iter(raw["config"]["mcpServers"].values()), None)) else "",
            "category": raw.get("category"),
            "instructions": None,
            "tools": kept,
        })
    queries = []
    dropped = 0
    for task in tasks:
        needed = []
        for line in task["Annotator Metadata"]["Tools"].splitlines():
            tool = re.sub(r"^\s*\d+[.)、]\s*", "", line).strip()
            if not tool:
                continue
            if tool not in by_tool:
                dropped += 1
                continue
            group = "|".join(f"{s}/{tool}" for s in by_tool[tool])
            if group not in needed:
                needed.append(group)
        if needed:
            q = task["Question"].strip()
            queries.append({"query": q, "relevant": needed, "split": split_of(q), "category": task["category"]})
    (HERE / "catalog.json").write_text(json.dumps({"source": SOURCE, "commit": COMMIT, "servers": servers}, ensure_ascii=False, indent=None) + "\n")
    with open(HERE / "queries.json", "w") as f:
        f.write('{"source": "%s", "commit": "%s", "queries": [\n' % (SOURCE, COMMIT))
        f.write(",\n".join(json.dumps(q, ensure_ascii=False) for q in queries))
        f.write("\n]}\n")
    print(f"{len(servers)} servers, {sum(len(s['tools']) for s in servers)} tools, {len(queries)} queries, {dropped} annotated tools not in the catalog")


def check() -> int:
    catalog = json.loads((HERE / "catalog.json").read_text())
    queries = json.loads((HERE / "queries.json").read_text())["queries"]
    errors = []
    names = set()
    for s in catalog["servers"]:
        for t in s["tools"]:
            key = f"{s['name']}/{t['name']}"
            if key in names:
                errors.append(f"duplicate tool {key}")
            names.add(key)
    splits = {"dev": 0, "test": 0}
    for q in queries:
        if q.get("split") != split_of(q["query"]):
            errors.append(f"{q['query'][:40]!r}: split is not the hash's")
        splits[q["split"]] = splits.get(q["split"], 0) + 1
        if not q["relevant"]:
            errors.append(f"{q['query'][:40]!r}: no relevant tool")
        for group in q["relevant"]:
            for r in group.split("|"):
                if r not in names:
                    errors.append(f"{q['query'][:40]!r}: {r} is not in the catalog")
    lines = [f"livemcpbench: {len(catalog['servers'])} servers, {len(names)} tools, {len(queries)} queries ({splits})"]
    lines += [f"ERROR {e}" for e in errors]
    lines.append(f"check: {f'{len(errors)} errors' if errors else 'ok'}")
    print("\n".join(lines))
    return int(bool(errors))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", help="a checkout of icip-cas/LiveMCPBench to convert")
    ap.add_argument("--check", action="store_true", help="only check the converted files")
    args = ap.parse_args()
    if args.repo:
        convert(Path(args.repo))
    return check()


if __name__ == "__main__":
    sys.exit(main())
