#!/usr/bin/env bash
# Regenerates docs/tray-menu.png: a real screenshot of the tray app's menu,
# opened, with three servers in a mix of states (connected, needs sign-in,
# failed with its tools kept) and the failed one's submenu open.
#
#   bash scripts/screenshot-tray.sh     # from anywhere; as root it apt-installs what is missing
#
# How: a throwaway desktop, Xvfb (xvfb-run) plus a private D-Bus session bus
# (dbus-run-session). Under Xvfb there is no StatusNotifierItem host (no
# org.kde.StatusNotifierWatcher on that bus), so libayatana-appindicator
# falls back to an XEmbed GtkStatusIcon; `trayer`, a plain XEmbed system
# tray, hosts that icon as a panel along the top of the screen. (stalonetray
# would do as well but is not packaged in Debian 12.) The three servers are
# mcpool-faulty: "github" over HTTP, switched to answer 401 and reconnected
# (needs sign-in); "linear" over stdio, its process killed (failed, tools
# kept); "filesystem" over stdio, left alone (connected). A click on the
# icon opens the menu (the app shows it on left click); arrow keys open
# linear's submenu. Every process started here is stopped on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/docs/tray-menu.png"
APP="$ROOT/target/debug/mcpool-app"
FAULTY="$ROOT/target/debug/mcpool-faulty"
TOKEN=screenshot-token
SCREEN_W=1024
SCREEN_H=700
BACKGROUND='#3d4451' # the "desktop" around the menu

say() { printf '[screenshot-tray] %s\n' "$*" >&2; }
die() {
    say "ERROR: $*"
    exit 1
}

# ------------------------------------------------------------ outside Xvfb
if [ -z "${SCREENSHOT_TRAY_TMP:-}" ]; then
    # command -> the Debian package that has it
    declare -A PACKAGE=(
        [xvfb-run]=xvfb [xauth]=xauth [dbus-run-session]=dbus-daemon
        [trayer]=trayer [xdotool]=xdotool [xsetroot]=x11-xserver-utils
        [import]=imagemagick [curl]=curl [jq]=jq
    )
    missing=()
    for cmd in "${!PACKAGE[@]}"; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("${PACKAGE[$cmd]}")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        [ "$(id -u)" = 0 ] || die "missing packages (install them, or run as root): ${missing[*]}"
        say "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >/dev/null
        apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
    fi

    if [ ! -x "$APP" ] || [ ! -x "$FAULTY" ]; then
        say "building mcpool-app and mcpool-faulty"
        (cd "$ROOT" && cargo build -p mcpool-app -p mcpool-faulty)
    fi

    tmp="$(mktemp -d "${TMPDIR:-/tmp}/mcpool-screenshot.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    # The desktop's own chatter (dbus-daemon and the services it starts)
    # goes to a log; the inner run's messages keep stderr as fd 3. The
    # session gets a throwaway home, so the services D-Bus starts on demand
    # (portal, keyring) leave nothing in the real one.
    exec 3>&2
    mkdir -p "$tmp/home/config" "$tmp/home/data" "$tmp/home/cache"
    status=0
    SCREENSHOT_TRAY_TMP="$tmp" HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/config" \
        XDG_DATA_HOME="$tmp/home/data" XDG_CACHE_HOME="$tmp/home/cache" xvfb-run -a -s "-screen 0 ${SCREEN_W}x${SCREEN_H}x24" \
        dbus-run-session -- bash "${BASH_SOURCE[0]}" >"$tmp/desktop.log" 2>&1 || status=$?
    if [ "$status" != 0 ]; then
        say "failed; the logs:"
        for log in "$tmp"/*.log "$tmp"/*.err; do
            [ -s "$log" ] && { echo "==> $log" >&2; tail -n 15 "$log" >&2; }
        done
        exit "$status"
    fi
    echo "wrote $OUT"
    exit 0
fi

# ------------------------------------------------------ inside Xvfb + D-Bus
tmp="$SCREENSHOT_TRAY_TMP"
exec 2>&3 # our messages to the caller's stderr, not the desktop log

pids=() # started here, stopped in reverse order on exit
app_pid=
cleanup() {
    if [ -n "$app_pid" ] && kill -0 "$app_pid" 2>/dev/null; then
        # SIGTERM ends the app as Quit does: it stops its stdio servers too.
        kill -TERM "$app_pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$app_pid" 2>/dev/null || true
    fi
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill "${pids[i]}" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap cleanup EXIT

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s.
wait_for() {
    local secs=$1 what=$2
    shift 2
    for _ in $(seq $((secs * 5))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "timed out after ${secs}s waiting for $what"
}

# The XEmbed tray: a panel along the top edge, icons at its right end.
trayer --edge top --align right --widthtype percent --width 100 --height 28 \
    --SetDockType false --transparent false >"$tmp/trayer.log" 2>&1 &
pids+=($!)
wait_for 10 "trayer's panel" xdotool search --classname '^panel$'
# Only once trayer holds the display: Xvfb resets when its last client leaves.
xsetroot -solid "$BACKGROUND"

# "github": Streamable HTTP; it prints its URL first.
"$FAULTY" http --listen 127.0.0.1:0 >"$tmp/github.out" 2>"$tmp/github.err" &
pids+=($!)
wait_for 20 "mcpool-faulty http" grep -q '^LISTENING ' "$tmp/github.out"
github_url="$(sed -n '1s/^LISTENING //p' "$tmp/github.out")"

cat >"$tmp/config.json" <<EOF
{
  "mcpServers": {
    "filesystem": {"command": "$FAULTY", "args": ["stdio"]},
    "github": {"type": "http", "url": "$github_url"},
    "linear": {"command": "$FAULTY", "args": ["stdio", "--spawn-log", "$tmp/linear.spawn"]}
  }
}
EOF

# The default port when it is free, so the menu's "Copy endpoint URL"
# shows what a user sees; any free port otherwise.
listen=127.0.0.1:7410
if (exec 9<>/dev/tcp/127.0.0.1/7410) 2>/dev/null; then listen=127.0.0.1:0; fi

mkdir -p "$tmp/cache"
env MCPOOL_CONFIG="$tmp/config.json" MCPOOL_LISTEN="$listen" MCPOOL_TOKEN="$TOKEN" \
    MCPOOL_CACHE_DIR="$tmp/cache" HOME="$tmp/home" \
    XDG_CONFIG_HOME="$tmp/home/config" XDG_DATA_HOME="$tmp/home/data" \
    WEBKIT_DISABLE_COMPOSITING_MODE=1 WEBKIT_DISABLE_DMABUF_RENDERER=1 LIBGL_ALWAYS_SOFTWARE=1 \
    "$APP" </dev/null >"$tmp/app.out" 2>"$tmp/app.err" &
app_pid=$!
wait_for 60 "the app's endpoint" grep -q 'listening on http' "$tmp/app.out"
base="$(sed -n 's|.*listening on \(http://[^/]*\)/mcp.*|\1|p' "$tmp/app.out" | head -n 1)"
say "app at $base (pid $app_pid)"

servers() { curl -sf -H "Authorization: Bearer $TOKEN" "$base/api/servers"; }
# statuses_are 'JQ FILTER': true once every server's status is as the filter says.
statuses_are() { servers | jq -e "$1" >/dev/null; }

wait_for 30 "all three servers connected" statuses_are 'map(.status == "connected") | all and length == 3'

# github: answer 401 from now on, and make mcpool reconnect to notice.
curl -sf -X POST -H 'content-type: application/json' -d '{"mode":"401"}' \
    "${github_url%/mcp}/control" >/dev/null
curl -s -X POST -H "Authorization: Bearer $TOKEN" "$base/api/servers/github/reconnect" >/dev/null || true
# linear: its process dies; mcpool keeps its tools and reconnects when next used.
linear_pid="$(awk '$1 == "start" { p = $2 } END { print p }' "$tmp/linear.spawn")"
[ -n "$linear_pid" ] || die "no pid in linear's spawn log"
kill -TERM "$linear_pid"

# shellcheck disable=SC2016 # $s is jq's
wait_for 30 "the mix of statuses" statuses_are '
    (map({(.name): .}) | add) as $s
    | $s.filesystem.status == "connected"
      and $s.github.status == "needs_auth"
      and $s.linear.status == "failed" and $s.linear.tool_count > 0'
servers | jq -r '.[] | "  \(.name): \(.status), \(.tool_count) tools"' >&2
# The tray follows the pool on its next refresh (at most 2 s).
sleep 3

# The icon, embedded in trayer's panel by GtkStatusIcon.
wait_for 20 "the tray icon in trayer" xdotool search --classname '^tray-icon tray app'
icon="$(xdotool search --classname '^tray-icon tray app' | head -n 1)"
eval "$(xdotool getwindowgeometry --shell "$icon")" # X Y WIDTH HEIGHT
import -window root "$tmp/before.png"

# changed_area: the bounding box (WxH+X+Y) of what differs from before.png.
changed_area() {
    import -window root "$tmp/after.png"
    convert "$tmp/before.png" "$tmp/after.png" -compose difference -composite \
        -threshold 0 -format '%@' info:
}
menu_open() { [[ "$(changed_area)" =~ ^([0-9]+)x([0-9]+) ]] && ((BASH_REMATCH[2] > 100)); }

# The app asks for its menu on left click; right click is GtkStatusIcon's own.
xdotool mousemove $((X + WIDTH / 2)) $((Y + HEIGHT / 2))
opened=false
for button in 1 3; do
    xdotool click "$button"
    for _ in $(seq 25); do
        if menu_open; then
            opened=true
            break 2
        fi
        sleep 0.2
    done
    say "no menu after a click with button $button"
done
$opened || die "the tray menu did not open"
# Down x3 selects filesystem, github, linear (the pool's order, by name);
# Right opens linear's submenu.
xdotool key Down Down Down
sleep 0.3
xdotool key Right
sleep 1

# Crop: from the left edge of the menus to the screen's right edge, from the
# panel at the top to just below the menu.
area="$(changed_area)"
[[ "$area" =~ ^([0-9]+)x([0-9]+)\+([0-9]+)\+([0-9]+)$ ]] || die "cannot find the menu on screen ($area)"
left=$((BASH_REMATCH[3] - 16))
((left >= 0)) || left=0
bottom=$((BASH_REMATCH[4] + BASH_REMATCH[2] + 16))
((bottom <= SCREEN_H)) || bottom=$SCREEN_H
mkdir -p "$(dirname "$OUT")"
convert "$tmp/after.png" -crop "$((SCREEN_W - left))x${bottom}+${left}+0" +repage -strip "$OUT"
say "menu captured: $(identify -format '%wx%h' "$OUT")"
xdotool key Escape Escape
