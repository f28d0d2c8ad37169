#!/usr/bin/env bash
# Runs a command with an unlocked Secret Service keyring on the current
# (private) D-Bus session: `dbus-run-session -- bash scripts/with-keyring.sh CMD...`.
# The keyring lives in a throwaway folder, so no real keyring is touched.
set -euo pipefail
keyrings="$(mktemp -d)"
trap 'rm -rf "$keyrings"' EXIT
# --unlock reads the password from stdin and creates the login keyring.
echo -n "mcpool-test" | XDG_DATA_HOME="$keyrings" gnome-keyring-daemon --unlock --components=secrets >/dev/null
"$@"
