#!/usr/bin/env bash
# Measures the tray app (release build) on a throwaway desktop
# (scripts/desktop.sh: Xvfb, a private D-Bus session, a keyring):
#   - launch -> "mcpool listening" (the endpoint answers),
#   - launch -> every server `connected` in /api/servers (3 mcpool-faulty
#     stdio servers, polled every 10 ms),
#   - resident memory (VmRSS) of the app after 5 s idle, tray only (no
#     window), with the dashboard window open, and after that window was
#     closed (the app plus its WebKit processes; the fault servers are not
#     counted). bench/close_window.py closes it as a close button does.
# Each run is a fresh launch; prints medians with p10-p90 and min-max, and
# with --write FILE replaces (or appends) the "## The tray app" section.
#   cargo build --release -p mcpool-app -p mcpool-faulty
#   bash bench/tray.sh --runs 10 --write docs/benchmarks.md
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS=10
WRITE=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --runs) RUNS="$2"; shift 2 ;;
        --write) WRITE="$2"; shift 2 ;;
        *) echo "usage: $0 [--runs N] [--write FILE]" >&2; exit 2 ;;
    esac
done

APP="$ROOT/target/release/mcpool-app"
FAULTY="$ROOT/target/release/mcpool-faulty"
for b in "$APP" "$FAULTY"; do
    [ -x "$b" ] || { echo "$b is missing: cargo build --release -p mcpool-app -p mcpool-faulty" >&2; exit 1; }
done

# Onto the throwaway desktop first.
if [ -z "${MCPOOL_BENCH_ON_DESKTOP:-}" ]; then
    export MCPOOL_BENCH_ON_DESKTOP=1
    exec bash "$ROOT/scripts/desktop.sh" bash "$0" --runs "$RUNS" ${WRITE:+--write "$WRITE"}
fi

TOKEN=bench-token
WORK="$(mktemp -d)"
APP_PID=""
cleanup() {
    if [ -n "$APP_PID" ] && kill -0 "$APP_PID" 2>/dev/null; then
        kill -TERM "$APP_PID" 2>/dev/null || true
        wait "$APP_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

cat >"$WORK/config.json" <<EOF
{"mcpServers": {
  "a": {"command": "$FAULTY", "args": ["stdio"]},
  "b": {"command": "$FAULTY", "args": ["stdio"]},
  "c": {"command": "$FAULTY", "args": ["stdio"]}
}}
EOF

now_ms() { date +%s%3N; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# The app's WebKit helpers: its children whose name starts with WebKit.
webkit_kib() {
    local total=0 pid
    for pid in $(pgrep -P "$1" 2>/dev/null); do
        case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
            WebKit*) total=$((total + $(rss_kib "$pid"))) ;;
        esac
    done
    echo "$total"
}

# One launch in mode tray|window|closed: prints "listen_ms connected_ms rss_kib"
# (the rss of the app and its WebKit processes).
one_run() {
    local mode="$1" out="$WORK/out" t0 listen_ms="" connected_ms="" base=""
    rm -f "$out"
    local args=()
    [ "$mode" != tray ] && args+=(--dashboard)
    t0="$(now_ms)"
    HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/config" XDG_DATA_HOME="$WORK/home/data" \
        MCPOOL_CONFIG="$WORK/config.json" MCPOOL_LISTEN=127.0.0.1:0 MCPOOL_TOKEN="$TOKEN" \
        MCPOOL_CACHE_DIR="$WORK/cache-$RANDOM" MCPOOL_LOG=warn \
        WEBKIT_DISABLE_COMPOSITING_MODE=1 WEBKIT_DISABLE_DMABUF_RENDERER=1 LIBGL_ALWAYS_SOFTWARE=1 \
        "$APP" "${args[@]}" >"$out" 2>"$WORK/err" </dev/null &
    APP_PID=$!
    while [ -z "$base" ]; do
        if grep -q '^mcpool listening on ' "$out" 2>/dev/null; then
            listen_ms=$(($(now_ms) - t0))
            base="$(sed -n 's|^mcpool listening on \(http://[^/]*\)/mcp$|\1|p' "$out")"
        fi
        kill -0 "$APP_PID" 2>/dev/null || { cat "$WORK/err" >&2; return 1; }
        sleep 0.005
    done
    while [ -z "$connected_ms" ]; do
        if curl -sf -H "Authorization: Bearer $TOKEN" "$base/api/servers" \
            | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if len(s)==3 and all(x["status"]=="connected" for x in s) else 1)' 2>/dev/null; then
            connected_ms=$(($(now_ms) - t0))
        fi
        sleep 0.01
    done
    if [ "$mode" = closed ]; then
        sleep 3
        python3 "$ROOT/bench/close_window.py" mcpool || { echo "no window titled mcpool" >&2; return 1; }
    fi
    sleep 5
    local rss
    rss=$(($(rss_kib "$APP_PID") + $(webkit_kib "$APP_PID")))
    kill -TERM "$APP_PID"
    wait "$APP_PID" || true
    APP_PID=""
    echo "$listen_ms $connected_ms $rss"
}

: >"$WORK/tray"
: >"$WORK/window"
: >"$WORK/closed"
for i in $(seq "$RUNS"); do
    for mode in tray window closed; do
        one_run "$mode" >>"$WORK/$mode"
    done
    echo "run $i/$RUNS: tray $(tail -1 "$WORK/tray"), window $(tail -1 "$WORK/window"), closed $(tail -1 "$WORK/closed")" >&2
done

LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
SECTION="$(python3 - "$WORK/tray" "$WORK/window" "$WORK/closed" "$RUNS" "$(git -C "$ROOT" rev-parse --short HEAD)" "$(nproc)" \
    "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)" "$LOAD" <<'PY'
import statistics, sys, datetime
tray_f, window_f, closed_f, runs, commit, cpus, model, load = sys.argv[1:]
def cols(path):
    rows = [list(map(int, l.split())) for l in open(path) if l.strip()]
    return list(zip(*rows))
def q(xs, p):
    xs = sorted(xs); k = (len(xs) - 1) * p; f = int(k); c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)
def row(what, xs, scale=1, unit=""):
    xs = [x / scale for x in xs]
    fmt = (lambda v: f"{v:.1f}") if scale != 1 else (lambda v: f"{v:.0f}")
    return f"| {what} | {len(xs)} | {fmt(statistics.median(xs))} | {fmt(q(xs, .1))}–{fmt(q(xs, .9))} | {fmt(min(xs))}–{fmt(max(xs))} |"
t, w, c = cols(tray_f), cols(window_f), cols(closed_f)
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
print(f"""## The tray app

Generated by `bench/tray.sh` on {now}, commit {commit}, a release build, {cpus} CPUs ({model}), load average before the last run: {load}. Each run is a fresh launch of `mcpool-app` on a throwaway desktop (Xvfb, a private D-Bus session, a keyring) with three mcpool-faulty stdio servers; times run from the launch, memory is VmRSS after 5 s idle.

```sh
cargo build --release -p mcpool-app -p mcpool-faulty
bash bench/tray.sh --runs {runs} --write docs/benchmarks.md
```

| what | runs | median | p10–p90 | min–max |
| --- | ---: | ---: | ---: | ---: |
{row("launch → endpoint listening (ms), tray only", t[0])}
{row("launch → 3 servers `connected` (ms), tray only", t[1])}
{row("idle memory, tray only (MiB, the app)", t[2], 1024)}
{row("launch → 3 servers `connected` (ms), window open", w[1])}
{row("idle memory, window open (MiB, the app + WebKit processes)", w[2], 1024)}
{row("idle memory, window opened then closed (MiB, the app + WebKit processes)", c[2], 1024)}

The tray-only app holds GTK, the tray item and the pool; opening the dashboard window starts WebKit's web and network processes, which hold most of the second figure (a sum of RSS, so libraries shared between the processes count more than once). Closing the window destroys it (the app stays in the tray): the web process exits and about 170 MiB go with it; what stays is WebKit's network process (about 65 MiB) and about 75 MiB more in the app than before the window opened (WebKit's UI side; glibc does not hand it back). The first run is slower and larger: it fills the fresh home's font and GTK caches. `mcpool serve` needs about 12 MiB for the same pool (see Memory above).""")
PY
)"
echo "$SECTION"
if [ -n "$WRITE" ]; then
    python3 - "$WRITE" "$SECTION" <<'PY'
import sys, re
path, section = sys.argv[1], sys.argv[2].rstrip() + "\n"
text = open(path).read()
m = re.search(r"^## The tray app\n.*?(?=^## |\Z)", text, flags=re.S | re.M)
text = text[:m.start()] + section + "\n" + text[m.end():] if m else text.rstrip() + "\n\n" + section
open(path, "w").write(text)
PY
    echo "wrote the tray section of $WRITE" >&2
fi
