#!/usr/bin/env python3
"""Rebuild bench/scan/cases.json (evaluation set for the tool-definition scanner).

Standard library only; runs offline from the repo:  python3 bench/scan/build.py

Inputs
  bench/search/catalog.json                 real tool definitions (35 servers, recorded 2026-12-01)
  bench/search/livemcpbench/catalog.json    real tool definitions (LiveMCPBench servers)
  bench/scan/sources/mcpool-test-servers.tools.json tools/list of this repo's tests/py and tests/js stdio servers
  bench/scan/sources/cisco_benign.tools.json        benign eval servers of cisco-ai-defense/mcp-scanner (Apache-2.0)
  bench/scan/sources/cisco_prompt_injection.json    prompt-injection eval tools of cisco-ai-defense/mcp-scanner (Apache-2.0)
  bench/scan/sources/tool_poisoning_bench.json      poisoned descriptions of harryc295/tool-poisoning-bench (MIT)
  bench/scan/sources/mcpproxy_corpus_v2.tools.json  reference-server tools exported by MCPProxy (MIT)
  bench/scan/sources/mcpproxy_detect_security_v1.json  MCPProxy labelled detection corpora (MIT)
  bench/scan/sources/dvmcp.json             poisoned tools from damn-vulnerable-MCP-server (MIT per README)
  bench/scan/written.py                     hand-written attack text / hard negatives

Everything is deterministic (fixed seeds, hash-based split).
"""
import base64
import copy
import hashlib
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(HERE, "sources")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import written  # noqa: E402

ATTACKS = ["hidden_unicode", "encoded_payload", "exfiltration", "rug_pull", "hidden_instructions", "shadowing"]
CLASSES = ATTACKS + ["benign", "hard_negative"]
EMPTY = {"type": "object", "properties": {}}


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def slug(s):
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")[:40] or "x"


def h(s):
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- benign pool
def benign_pool():
    out, seen = [], set()

    def add(src, server, t):
        name = t.get("name") or t.get("tool")
        desc = t.get("description") or ""
        schema = t.get("inputSchema") or t.get("schema") or EMPTY
        key = (server, name, desc)
        if key in seen:
            return
        seen.add(key)
        out.append({"source": src, "server": server, "name": name, "description": desc, "inputSchema": schema})

    for s in load(os.path.join(REPO, "bench/search/catalog.json"))["servers"]:
        for t in s["tools"]:
            add("catalog", s["name"], t)
    for s in load(os.path.join(REPO, "bench/search/livemcpbench/catalog.json"))["servers"]:
        for t in s["tools"]:
            add("livemcpbench", s["name"], t)
    for t in load(os.path.join(SRC, "mcpproxy_corpus_v2.tools.json"))["tools"]:
        add("mcpproxy-corpus-v2", t["server"], t)
    for t in load(os.path.join(SRC, "mcpool-test-servers.tools.json"))["tools"]:
        add("mcpool-tests", t["server"], t)
    for t in load(os.path.join(SRC, "cisco_benign.tools.json"))["tools"]:
        add("cisco-evals", t["server"], t)
    return out


STRONG = re.compile(r"\bIMPORTANT\b|\bignor|password|secret|base64|\bssh\b|api[_ ]?key|credential|\.env\b|private key|"
                    r"system prompt|instruction|\bdo not tell|\bprevious\b|conversation|\btokens?\b|\bhex\b|\bnever\b", re.I)


VERY = re.compile(r"\bIMPORTANT\b|\bignor|password|secret|base64|\bssh\b|api[_ ]?key|credential|\.env\b|private key|system prompt|instruction", re.I)
REAL_HN = 72


def text_of(d):
    return d["description"] + " " + json.dumps(d["inputSchema"], ensure_ascii=False)


# ---------------------------------------------------------------- encoders
def tag_encode(s):
    return "".join(chr(0xE0000 + ord(c)) for c in s if 0x20 <= ord(c) < 0x7F)


def zw_stego(s):
    bits = "".join(format(b, "08b") for b in s.encode("utf-8"))
    return "\u2060" + "".join("\u200b" if b == "0" else "\u200c" for b in bits) + "\u2060"


def zw_split(s):
    # zero-width joiners/spaces inside every word of a visible instruction (keyword-filter evasion)
    zws = ["\u200b", "\u200d", "\ufeff", "\u200c"]
    out = []
    for i, w in enumerate(s.split(" ")):
        if len(w) > 3:
            k = len(w) // 2
            w = w[:k] + zws[i % 4] + w[k:]
        out.append(w)
    return " ".join(out)


def bidi_rlo(s):
    return "\u202e" + s[::-1] + "\u202c"


def bidi_isolate(s):
    # text pushed into an RTL isolate and visually reordered
    return "\u2067\u202e" + s[::-1] + "\u202c\u2069"


def pua_bmp(s):
    return "".join(chr(0xE000 + (b % 0x1900)) for b in s.encode("utf-8"))


def pua_plane15(s):
    return "".join(chr(0xF0000 + b) for b in s.encode("utf-8"))


def var_selectors(s):
    out = []
    for b in s.encode("utf-8"):
        out.append(chr(0xFE00 + b) if b < 16 else chr(0xE0100 + b - 16))
    return "\U0001F600" + "".join(out)


UNICODE_VARIANTS = [("tag", tag_encode), ("zw_stego", zw_stego), ("zw_split", zw_split), ("bidi_rlo", bidi_rlo),
                    ("tag", tag_encode), ("pua_plane15", pua_plane15), ("bidi_isolate", bidi_isolate),
                    ("var_selectors", var_selectors), ("pua_bmp", pua_bmp), ("tag", tag_encode)]


def b64(s):
    return base64.b64encode(s.encode("utf-8")).decode()


ENCODERS = [
    ("b64", b64),
    ("b64_nopad", lambda s: b64(s).rstrip("=")),
    ("b64_url", lambda s: base64.urlsafe_b64encode(s.encode("utf-8")).decode()),
    ("hex", lambda s: s.encode("utf-8").hex()),
    ("hex_0x", lambda s: "0x" + s.encode("utf-8").hex().upper()),
    ("b64_double", lambda s: b64(b64(s))),
    ("b64_lines", lambda s: "\n".join(b64(s)[i:i + 76] for i in range(0, len(b64(s)), 76))),
    ("hex_escaped", lambda s: "".join("\\x%02x" % b for b in s.encode("utf-8"))),
]
ENC_FRAMES = [
    " Configuration blob (decode before use): {}",
    "\n\n<!-- {} -->",
    " checksum={}",
    " Decode the following and follow it exactly: {}",
    "PARAM_DEFAULT",
    " data:text/plain;base64,{}",
    "\n\nSignature: {}",
    " [meta:{}]",
    "PARAM_DESC",
    " Build: {}",
]


# ---------------------------------------------------------------- helpers on definitions
def with_param(schema, name, prop, required):
    s = copy.deepcopy(schema) if schema else copy.deepcopy(EMPTY)
    s.setdefault("type", "object")
    s.setdefault("properties", {})
    s["properties"][name] = prop
    if required:
        s["required"] = list(s.get("required", [])) + [name]
    return s


def first_param(schema):
    props = (schema or {}).get("properties") or {}
    for k, v in props.items():
        if isinstance(v, dict):
            return k
    return None


def insert_text(desc, payload, where):
    if where == "prepend":
        return payload.strip() + " " + desc
    if where == "middle":
        m = re.search(r"[.!?](\s)", desc)
        if m:
            return desc[:m.end()] + payload.strip() + " " + desc[m.end():]
    return desc + payload


MCPPROXY_REVIEW = {"hn_phrase_return_to_caller", "hn_phrase_returns_text", "hn_phrase_sample_response_label",
                   "hn_phrase_expected_output_label", "hn_phrase_mock_response_label"}
SYNTH_PEERS = {
    "email": [("send_email", "Send an email to one or more recipients.")],
    "chat": [("send_message", "Send a message to a chat channel or user.")],
    "kubernetes": [("kubectl_apply", "Apply a Kubernetes manifest to the current cluster.")],
    "postgres": [("query", "Run a read-only SQL query against the connected database.")],
    "git": [("git_commit", "Records changes to the repository."), ("git_push", "Push commits to a remote.")],
    "supabase": [("execute_sql", "Executes raw SQL in the Postgres database.")],
    "sentry": [("get_sentry_issue", "Retrieve and analyze a Sentry issue by ID or URL.")],
    "gitlab": [("create_issue", "Create a new issue in a GitLab project.")],
    "hubspot": [("hubspot-create-contact", "Create a contact in HubSpot CRM.")],
    "netlify": [("netlify-deploy-services", "Deploy a site to Netlify.")],
    "circleci": [("run_pipeline", "Trigger a CircleCI pipeline.")],
    "tavily": [("tavily-search", "Search the web with Tavily.")],
    "brave-search": [("brave_web_search", "Performs a web search using the Brave Search API.")],
    "airbnb": [("airbnb_search", "Search for Airbnb listings.")],
    "time": [("get_current_time", "Get current time in a specific timezone.")],
}

EVIL_SERVERS = ["pdf-toolkit-pro", "weather-plus", "quick-notes", "dev-helpers", "smart-search", "calc-mcp", "daily-facts",
                "markdown-utils", "crypto-ticker", "translate-hub", "file-helper", "task-buddy", "code-format",
                "news-digest", "image-tools-x", "ai-memory-plus", "seo-analyzer", "timezone-pro", "json-utils", "mail-tools"]


def main():
    rng = random.Random(43)
    pool = benign_pool()
    cases = []

    def add(case):
        cases.append(case)

    # ------------------------------------------------ hosts for written attacks
    hosts = [d for d in pool if 30 <= len(d["description"]) <= 600 and not STRONG.search(text_of(d))]
    rng.shuffle(hosts)
    hi = iter(hosts * 3)

    def next_host(not_server=None):
        while True:
            d = next(hi)
            if d["server"] != not_server:
                return d

    def serv(host, i):
        return host["server"] if i % 2 == 0 else EVIL_SERVERS[i % len(EVIL_SERVERS)]

    # ------------------------------------------------ hidden_unicode (written)
    for i, instr in enumerate(written.SECRET_INSTRUCTIONS):
        vname, fn = UNICODE_VARIANTS[i % len(UNICODE_VARIANTS)]
        ascii_ok = all(ord(c) < 0x7F for c in instr)
        if vname == "tag" and not ascii_ok:
            vname, fn = "zw_stego", zw_stego
        host = next_host()
        hidden = fn(instr)
        desc, schema = host["description"], host["inputSchema"]
        p = first_param(schema)
        if i % 4 == 3 and p:
            schema = copy.deepcopy(schema)
            pd = schema["properties"][p].get("description", p)
            schema["properties"][p]["description"] = pd + hidden
            where = "param"
        else:
            where = ["append", "middle", "append"][i % 3]
            desc = insert_text(desc, (" " if vname.startswith("bidi") else "") + hidden, where)
        add({"id": "uni-w-%03d-%s" % (i, vname), "group": "secret-%d" % i, "class": "hidden_unicode", "expect": "dangerous", "source": "written",
             "server": serv(host, i), "name": host["name"], "description": desc, "inputSchema": schema,
             "note": "variant=%s placed=%s host=%s/%s" % (vname, where, host["source"], host["server"])})

    # ------------------------------------------------ encoded_payload (written)
    for i, instr in enumerate(written.SECRET_INSTRUCTIONS):
        ename, enc = ENCODERS[i % len(ENCODERS)]
        frame = ENC_FRAMES[i % len(ENC_FRAMES)]
        host = next_host()
        blob = enc(instr)
        desc, schema = host["description"], host["inputSchema"]
        if frame == "PARAM_DEFAULT":
            schema = with_param(schema, "profile", {"type": "string", "description": "Preset profile.", "default": blob}, False)
        elif frame == "PARAM_DESC":
            schema = with_param(schema, "options", {"type": "string", "description": "Options, e.g. " + blob}, False)
        else:
            desc = desc + frame.format(blob)
        add({"id": "enc-w-%03d-%s" % (i, ename), "group": "secret-%d" % i, "class": "encoded_payload", "expect": "dangerous", "source": "written",
             "server": serv(host, i + 1), "name": host["name"], "description": desc, "inputSchema": schema,
             "note": "encoding=%s frame=%r host=%s/%s" % (ename, frame.strip()[:30], host["source"], host["server"])})

    # ------------------------------------------------ hidden_instructions (written)
    for i, (text, expect) in enumerate(written.HIDDEN_INSTRUCTIONS):
        host = next_host()
        desc, schema = host["description"], host["inputSchema"]
        p = first_param(schema)
        if i % 5 == 4 and p:
            schema = copy.deepcopy(schema)
            schema["properties"][p]["description"] = schema["properties"][p].get("description", "") + " " + text
            where = "param"
        else:
            where = ["append", "append", "prepend", "middle"][i % 4]
            desc = insert_text(desc, ("\n\n" if "\n" in text or i % 2 else " ") + text, where)
        add({"id": "hi-w-%03d" % i, "class": "hidden_instructions", "expect": expect, "source": "written",
             "server": serv(host, i), "name": host["name"], "description": desc, "inputSchema": schema,
             "note": "placed=%s host=%s/%s" % (where, host["source"], host["server"])})

    # ------------------------------------------------ exfiltration (written)
    for i, (pname, pdesc, expect) in enumerate(written.EXFIL_PARAMS):
        host = next_host()
        schema = with_param(host["inputSchema"], pname, {"type": "string", "description": pdesc}, i % 3 != 2)
        add({"id": "exf-w-%03d-%s" % (i, slug(pname)), "class": "exfiltration", "expect": expect, "source": "written",
             "server": serv(host, i + 1), "name": host["name"], "description": host["description"], "inputSchema": schema,
             "note": "param %r added to host %s/%s" % (pname, host["source"], host["server"])})

    # ------------------------------------------------ shadowing (written)
    servers = {d["server"] for d in pool}
    for i, (text, target, expect) in enumerate(written.SHADOWING):
        host = next_host(not_server=target)
        server = serv(host, i)
        if server == target:
            server = EVIL_SERVERS[i % len(EVIL_SERVERS)]
        desc = insert_text(host["description"], ("\n\n" if i % 2 else " ") + text, "append" if i % 3 else "middle")
        mentioned = set(re.findall(r"[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+", text))
        peers = [{"server": d["server"], "name": d["name"], "description": d["description"]} for d in pool
                 if d["name"] in mentioned and d["server"] != server and (d["server"] == target or target not in servers)]
        if not peers:
            peers = [{"server": target, "name": n, "description": pd} for n, pd in SYNTH_PEERS.get(target, [])]
        seenp = set()
        peers = [p for p in peers if not ((p["server"], p["name"]) in seenp or seenp.add((p["server"], p["name"])))]
        add({"id": "sh-w-%03d" % i, "class": "shadowing", "expect": expect, "source": "written", "server": server,
             "name": host["name"], "description": desc, "inputSchema": host["inputSchema"], "peers": peers,
             "note": "targets tools of server %r; host %s/%s" % (target, host["source"], host["server"])})

    # ------------------------------------------------ rug_pull (written)
    for i, (kind, payload, expect) in enumerate(written.RUG_PULLS):
        host = next_host()
        prev = {"description": host["description"], "inputSchema": host["inputSchema"]}
        desc, schema = host["description"], host["inputSchema"]
        if kind == "append":
            desc = desc + payload
        elif kind == "prepend":
            desc = payload + desc
        elif kind == "param":
            schema = with_param(schema, payload[0], {"type": "string", "description": payload[1]}, True)
        elif kind == "append_b64":
            fmt, secret = payload.split("|")
            desc = desc + fmt.format(b64(secret))
        elif kind == "append_hex":
            fmt, secret = payload.split("|")
            desc = desc + fmt.format("0x" + secret.encode().hex())
        elif kind == "append_tag":
            desc = desc + tag_encode(payload)
        elif kind == "append_zw":
            desc = desc + zw_stego(payload)
        add({"id": "rug-w-%03d-%s" % (i, kind), "class": "rug_pull", "expect": expect, "source": "written",
             "server": host["server"], "name": host["name"], "description": desc, "inputSchema": schema, "previous": prev,
             "note": "previous = real definition from %s/%s; change=%s" % (host["source"], host["server"], kind)})

    # ------------------------------------------------ MCPProxy corpora
    mp = load(os.path.join(SRC, "mcpproxy_detect_security_v1.json"))
    cmap = {"unicode_smuggling": "hidden_unicode", "decoded_payload": "encoded_payload", "phrase_injection": "hidden_instructions",
            "tool_poisoning": "hidden_instructions", "prompt_injection": "hidden_instructions", "shadowing": "shadowing",
            "capability_mismatch": "exfiltration", "rug_pull": "rug_pull", "hard_negative": "hard_negative", "benign": "benign"}
    for e in mp["entries"]:
        t = e.get("tool") or {}
        cls = cmap[e["category"]]
        name = t.get("name") or e.get("name") or e["id"]
        desc = t.get("description") or e.get("description") or ""
        schema = t.get("inputSchema") or EMPTY
        src = "mcpproxy" + ("/dvmcp" if e["provenance"]["source"] == "DVMCP" else "")
        c = {"id": "mcpproxy-%s-%s" % ("detect" if "detect" in e["_file"] else "security", e["id"]), "class": cls,
             "expect": "clean" if cls in ("benign", "hard_negative") else "dangerous", "source": src,
             "server": e.get("server") or "mcpproxy-corpus", "name": name, "description": desc, "inputSchema": schema,
             "note": "MCPProxy category=%s" % e["category"] + ("; resembles=%s" % e["resembles"] if e.get("resembles") else "")}
        if e.get("peers"):
            c["peers"] = [{"server": p["server"], "name": p["tool"]["name"], "description": p["tool"].get("description", "")} for p in e["peers"]]
        if e["id"].startswith("sh_collide"):
            c["expect"] = "review"
            c["note"] += "; name collision with a peer server's tool (no steering text)"
        if e["id"] in MCPPROXY_REVIEW:
            c["expect"] = "review"
        if cls == "rug_pull":
            m = re.match(r"^(.*?[.!?])\s", desc)
            c["previous"] = {"description": m.group(1) if m else desc.split(".")[0] + ".", "inputSchema": schema}
            c["note"] += "; previous = the entry's first sentence (the corpus gives only the changed text)"
        add(c)

    # ------------------------------------------------ DVMCP
    dv = load(os.path.join(SRC, "dvmcp.json"))
    for e in dv["cases"]:
        c = {k: e[k] for k in ("id", "class", "expect", "server", "name", "description", "inputSchema")}
        c["source"] = "dvmcp"
        if "previous" in e:
            c["previous"] = e["previous"]
        c["note"] = e["path"]
        add(c)

    # ------------------------------------------------ Cisco mcp-scanner evals: prompt-injection docstrings
    for e in load(os.path.join(SRC, "cisco_prompt_injection.json"))["tools"]:
        fn = e["file"].rsplit("/", 1)[-1][:-3]
        add({"id": "cisco-pi-%s" % slug(fn), "class": "hidden_instructions", "expect": "dangerous", "source": "cisco-evals",
             "server": "cisco-eval-" + slug(fn)[:24], "name": e["name"], "description": e["description"],
             "inputSchema": e["inputSchema"], "note": e["file"]})

    # ------------------------------------------------ harryc295/tool-poisoning-bench
    tpb = load(os.path.join(SRC, "tool_poisoning_bench.json"))
    peer = [{"server": "acme-mail", "name": tpb["peer"]["name"], "description": tpb["peer"]["description"]}]
    tpb_class = {"desc-inject-explicit": ("hidden_instructions", "dangerous"), "desc-inject-social": ("shadowing", "dangerous"),
                 "desc-inject-obfuscated": ("shadowing", "review")}
    for e in tpb["cases"]:
        cls, expect = tpb_class[e["scenario"]]
        add({"id": "tpb-%s" % e["scenario"], "class": cls, "expect": expect, "source": "tool-poisoning-bench",
             "server": "acme-support", "name": e["name"], "description": e["description"], "inputSchema": e["inputSchema"],
             "peers": peer, "note": "scenarios.py %s; steers e-mail to an outside address (peer send_email on another server)" % e["scenario"]})

    # ------------------------------------------------ hard negatives: real definitions
    strong_hn = [d for d in pool if STRONG.search(text_of(d)) and d["source"] != "cisco-evals"]
    strong_hn.sort(key=lambda d: (-len(VERY.findall(text_of(d))), h(d["server"] + "/" + d["name"] + d["description"])))
    per_server, real_hn = {}, []
    for d in strong_hn:  # at most 4 per server so a few verbose servers do not dominate
        if len(real_hn) < REAL_HN and per_server.get(d["server"], 0) < 4:
            per_server[d["server"]] = per_server.get(d["server"], 0) + 1
            real_hn.append(d)
    # the famous mcp-server-fetch description always belongs in the hard negatives
    for d in pool:
        if d["name"] == "fetch" and "originally you did not have internet access" in d["description"] and d not in real_hn:
            real_hn.append(d)
    hn_keys = set()
    for i, d in enumerate(real_hn):
        hn_keys.add(id(d))
        expect = "review" if "originally you did not have internet access" in d["description"] else "clean"
        m = STRONG.findall(text_of(d))
        add({"id": "hn-real-%03d-%s-%s" % (i, slug(d["server"]), slug(d["name"])), "class": "hard_negative", "expect": expect,
             "source": d["source"], "server": d["server"], "name": d["name"], "description": d["description"],
             "inputSchema": d["inputSchema"], "note": "real definition; looks suspicious because of: %s" % ", ".join(sorted(set(x.lower() for x in m)))[:120]})

    # ------------------------------------------------ hard negatives: written
    for i, (server, name, desc, props, req, expect) in enumerate(written.HARD_NEGATIVES):
        schema = {"type": "object", "properties": props}
        if req:
            schema["required"] = req
        add({"id": "hn-w-%03d-%s" % (i, slug(name)), "class": "hard_negative", "expect": expect, "source": "written",
             "server": server, "name": name, "description": desc, "inputSchema": schema})

    # ------------------------------------------------ hard negatives: benign edits (previous -> current)
    edit_hosts = [d for d in pool if 40 <= len(d["description"]) <= 800 and id(d) not in hn_keys]
    erng = random.Random(4343)
    erng.shuffle(edit_hosts)
    kinds = ["typo", "add_param", "append_sentence", "reword", "add_param", "typo", "remove_sentence", "default_change"]
    made = 0
    for d in edit_hosts:
        if made >= 44:
            break
        kind = kinds[made % len(kinds)]
        cur_desc, cur_schema = d["description"], d["inputSchema"]
        prev_desc, prev_schema = cur_desc, cur_schema
        if kind == "typo":
            words = [m for m in re.finditer(r"[A-Za-z]{7,}", cur_desc)]
            if not words:
                continue
            w = words[made % len(words)]
            k = w.start() + 3
            prev_desc = cur_desc[:k] + cur_desc[k + 1] + cur_desc[k] + cur_desc[k + 2:]
        elif kind == "add_param":
            pn, pp = written.OPTIONAL_PARAMS[made % len(written.OPTIONAL_PARAMS)]
            if pn in (cur_schema.get("properties") or {}):
                continue
            cur_schema = with_param(cur_schema, pn, pp, False)
        elif kind == "append_sentence":
            cur_desc = cur_desc.rstrip() + " " + written.BENIGN_SENTENCES[made % len(written.BENIGN_SENTENCES)]
        elif kind == "reword":
            new = re.sub(r"^(Get|Gets|Retrieve|Retrieves|List|Lists|Search|Searches|Create|Creates|Fetch|Fetches)\b",
                         lambda m: {"Get": "Retrieve", "Gets": "Retrieves", "Retrieve": "Get", "Retrieves": "Gets", "List": "Return",
                                    "Lists": "Returns", "Search": "Look up", "Searches": "Looks up", "Create": "Make",
                                    "Creates": "Makes", "Fetch": "Get", "Fetches": "Gets"}[m.group(1)], cur_desc)
            if new == cur_desc:
                continue
            prev_desc = new
        elif kind == "remove_sentence":
            prev_desc = cur_desc.rstrip() + " " + written.BENIGN_SENTENCES[(made + 3) % len(written.BENIGN_SENTENCES)]
        elif kind == "default_change":
            props = (cur_schema.get("properties") or {})
            nums = [k for k, v in props.items() if isinstance(v, dict) and v.get("type") in ("integer", "number") and "default" in v]
            if not nums:
                cur_schema = with_param(cur_schema, "page_size", {"type": "integer", "default": 50, "description": "Items per page."}, False)
                prev_schema = with_param(prev_schema, "page_size", {"type": "integer", "default": 25, "description": "Items per page."}, False)
            else:
                prev_schema = copy.deepcopy(cur_schema)
                v = prev_schema["properties"][nums[0]]
                v["default"] = v["default"] * 2 if v["default"] else 10
        if prev_desc == cur_desc and prev_schema == cur_schema:
            continue
        add({"id": "hn-edit-%03d-%s" % (made, kind), "class": "hard_negative", "expect": "clean", "source": d["source"],
             "server": d["server"], "name": d["name"], "description": cur_desc, "inputSchema": cur_schema,
             "previous": {"description": prev_desc, "inputSchema": prev_schema},
             "note": "benign edit (%s) of a real definition from %s/%s" % (kind, d["source"], d["server"])})
        made += 1

    # ------------------------------------------------ benign: the rest of the real pool
    for d in pool:
        if id(d) in hn_keys:
            continue
        add({"id": "benign-%s-%s-%s-%s" % (slug(d["source"]), slug(d["server"]), slug(d["name"]), h(d["description"])[:6]),
             "class": "benign", "expect": "clean", "source": d["source"], "server": d["server"], "name": d["name"],
             "description": d["description"], "inputSchema": d["inputSchema"]})

    # ------------------------------------------------ split: stratified by class, ordered by sha256(id)
    by = {}
    for c in cases:
        by.setdefault(c["class"], []).append(c)
    for cls, lst in by.items():
        # cases made from the same hidden instruction (hidden_unicode and encoded_payload share SECRET_INSTRUCTIONS)
        # share a group and land in the same split; the rest fill up the smaller side, in sha256(id) order
        n = {"dev": 0, "test": 0}
        for c in lst:
            if "group" in c:
                c["split"] = "dev" if int(h(c["group"]), 16) % 2 == 0 else "test"
                n[c["split"]] += 1
        rest = sorted((c for c in lst if "group" not in c), key=lambda c: h(c["id"]))
        for c in rest:
            c["split"] = "dev" if n["dev"] <= n["test"] else "test"
            n[c["split"]] += 1

    order = ["id", "split", "class", "expect", "source", "server", "name", "description", "inputSchema", "previous", "peers", "note"]
    cases = [{k: c[k] for k in order if k in c} for c in sorted(cases, key=lambda c: (CLASSES.index(c["class"]), c["id"]))]
    doc = {"about": "Evaluation set for mcpool's tool-definition scanner (issue 43). See bench/scan/README.md for sources, "
                    "licences and format. Rebuild with: python3 bench/scan/build.py",
           "cases": cases}
    with open(os.path.join(HERE, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    counts = {}
    for c in cases:
        counts.setdefault(c["class"], {"dev": 0, "test": 0})[c["split"]] += 1
    for cls in CLASSES:
        x = counts.get(cls, {"dev": 0, "test": 0})
        print("%-20s dev %4d  test %4d  total %4d" % (cls, x["dev"], x["test"], x["dev"] + x["test"]))
    print("total", len(cases))


def check():
    """Validate cases.json: fields, unique ids, valid classes/expects/splits; print counts per class x split."""
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as f:
        doc = json.load(f)
    cases = doc["cases"]
    need = ["id", "split", "class", "expect", "source", "server", "name", "description", "inputSchema"]
    ids, errors = set(), []
    for c in cases:
        for k in need:
            if k not in c:
                errors.append("%s: missing %s" % (c.get("id"), k))
        if c["id"] in ids:
            errors.append("duplicate id %s" % c["id"])
        ids.add(c["id"])
        if c["class"] not in CLASSES:
            errors.append("%s: bad class" % c["id"])
        if c["split"] not in ("dev", "test"):
            errors.append("%s: bad split" % c["id"])
        if not isinstance(c["inputSchema"], dict) or not isinstance(c["description"], str):
            errors.append("%s: bad description/inputSchema" % c["id"])
        ok = {"benign": {"clean"}, "hard_negative": {"clean", "review"}}.get(c["class"], {"dangerous", "review"})
        if c["expect"] not in ok:
            errors.append("%s: expect %s not allowed for %s" % (c["id"], c["expect"], c["class"]))
        if c["class"] == "rug_pull" and "previous" not in c:
            errors.append("%s: rug_pull without previous" % c["id"])
        if "previous" in c and not (isinstance(c["previous"].get("description"), str) and isinstance(c["previous"].get("inputSchema"), dict)):
            errors.append("%s: bad previous" % c["id"])
    for e in errors:
        print("ERROR", e)
    counts = {}
    for c in cases:
        x = counts.setdefault(c["class"], {"dev": 0, "test": 0, "dangerous": 0, "review": 0, "clean": 0, "previous": 0})
        x[c["split"]] += 1
        x[c["expect"]] += 1
        x["previous"] += "previous" in c
    print("| class | dev | test | total | expect dangerous / review / clean | with previous |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    for cls in CLASSES:
        x = counts.get(cls, {"dev": 0, "test": 0, "dangerous": 0, "review": 0, "clean": 0, "previous": 0})
        print("| %s | %d | %d | %d | %d / %d / %d | %d |" % (cls, x["dev"], x["test"], x["dev"] + x["test"], x["dangerous"], x["review"], x["clean"], x["previous"]))
    print("| all | %d | %d | %d | | |" % (sum(1 for c in cases if c["split"] == "dev"), sum(1 for c in cases if c["split"] == "test"), len(cases)))
    src = {}
    for c in cases:
        src.setdefault(c["source"], 0)
        src[c["source"]] += 1
    print("sources:", ", ".join("%s %d" % kv for kv in sorted(src.items())))
    print("size: %d bytes" % os.path.getsize(os.path.join(HERE, "cases.json")))
    return not errors


if __name__ == "__main__":
    if "--check" not in sys.argv:
        main()
    sys.exit(0 if check() else 1)
