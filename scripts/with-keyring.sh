#!/usr/bin/env bash
# Runs a command with an unlocked Secret Service keyring on the current
# (private) D-Bus session: `dbus-run-session -- bash scripts/with-keyring.sh CMD...`.
# The keyring lives in a throwaway folder, so no real keyring is touched.
set -euo pipefail
keyrings="$(mktemp -d)"

# --unlock reads the password from stdin and creates the login keyring (or
# unlocks the one already in $keyrings); --replace takes the bus name over.
start_keyring() {
    echo -n "mcpool-test" | XDG_DATA_HOME="$keyrings" gnome-keyring-daemon --replace --unlock --components=secrets >/dev/null
}

# The pid that owns the Secret Service name on this session bus, waiting
# up to 5 s for the daemon to take it; empty if none does.
keyring_pid() {
    local i found
    for i in $(seq 50); do
        found="$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
            org.freedesktop.DBus.GetConnectionUnixProcessID string:org.freedesktop.secrets 2>/dev/null |
            awk '/uint32/ {print $2}' || true)"
        if [ -n "$found" ]; then
            echo "$found"
            return
        fi
        sleep 0.1
    done
}

start_keyring
pid="$(keyring_pid)"

# gnome-keyring-daemon has a known race (GNOME gnome-keyring #190/#196/#199):
# a client that opens a Secret Service session and exits at once can abort
# the daemon, and the suite runs many short `mcpool secret` commands. D-Bus
# would then start a fresh, locked daemon and every later keyring test would
# fail for that reason alone, so a watcher restarts it unlocked, with the
# same keyring folder (the secrets stored so far stay).
watch_keyring() {
    while sleep 0.5; do
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            echo "with-keyring: gnome-keyring-daemon ($pid) stopped; starting it again, unlocked" >&2
            start_keyring || true
            pid="$(keyring_pid)"
        fi
    done
}
watch_keyring &
watcher=$!
trap 'kill "$watcher" 2>/dev/null || true; rm -rf "$keyrings"' EXIT
"$@"
