#!/usr/bin/env bash
# Runs a command on a throwaway desktop: a virtual X display (xvfb-run), a
# private D-Bus session bus (dbus-run-session) and an unlocked throwaway
# keyring on it (scripts/with-keyring.sh). The whole test suite runs so
# (scripts/test.sh); so can one suite, e.g. the tray app's:
#   bash scripts/desktop.sh cargo test -p mcpool-app
# The desktop's own chatter (dbus-daemon, the services it starts, X
# disconnects at teardown) goes to target/desktop.log; the command keeps
# this script's stdout and stderr, so its output ends as it ends.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ "$#" -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
mkdir -p "$ROOT/target"
log="$ROOT/target/desktop.log"
echo "desktop services log: $log" >&2

exec 3>&1 4>&2
exec xvfb-run -a -s "-screen 0 1280x800x24" \
    dbus-run-session -- bash "$ROOT/scripts/with-keyring.sh" \
    bash -c '"$@" 1>&3 2>&4' desktop "$@" \
    >"$log" 2>&1
