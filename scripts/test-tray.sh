#!/usr/bin/env bash
# The tray app's end-to-end test (src-tauri/tests/tray/): the real app on a
# virtual X display and a private session bus, with the test playing the
# desktop (StatusNotifierWatcher, notification server), a throwaway keyring,
# and mcpool-faulty as the servers. Not part of scripts/test.sh: the app
# links GTK and WebKit and builds in its own workspace.
#   setup (apt, only what is missing) -> build mcpool-faulty -> build the app
#   -> cargo test under xvfb-run + dbus-run-session.
# cargo test runs last so that the output ends with its own summary.
# Env knobs: MCPOOL_SKIP_APT=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
export PATH

step() { printf '\n==> %s\n' "$*" >&2; }

APT_PACKAGES=(
    build-essential pkg-config libssl-dev
    libwebkit2gtk-4.1-dev libxdo-dev libayatana-appindicator3-dev librsvg2-dev
    xvfb xauth          # xvfb-run: a virtual X display
    dbus                # dbus-run-session: a private session bus
    gnome-keyring       # scripts/with-keyring.sh: a throwaway Secret Service
    imagemagick         # import/identify: the screenshot of the window
)
step "apt packages"
if [ "${MCPOOL_SKIP_APT:-}" != 1 ]; then
    missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        SUDO=""
        [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
    else
        echo "all present" >&2
    fi
fi

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Never let a developer's running instance or config leak into the test.
unset MCPOOL_TOKEN MCPOOL_LISTEN MCPOOL_CONFIG MCPOOL_CACHE_DIR || true

step "cargo build -p mcpool-faulty"
cargo build -p mcpool-faulty
export MCPOOL_FAULTY="$ROOT/target/debug/mcpool-faulty"

step "cargo build --manifest-path src-tauri/Cargo.toml --tests"
cargo build --manifest-path src-tauri/Cargo.toml --bins --tests

step "cargo test (xvfb-run, private D-Bus session, throwaway keyring)"
# The desktop's own chatter (dbus-daemon, the portals and a11y services it
# starts, X disconnects at teardown) goes to a log file; cargo test keeps
# this script's stdout and stderr (fds 3 and 4), so its summary ends them.
desktop_log="$ROOT/src-tauri/target/tray-desktop.log"
echo "desktop services log: $desktop_log" >&2
exec 3>&1 4>&2
exec xvfb-run -a -s "-screen 0 1280x800x24" \
    dbus-run-session -- bash scripts/with-keyring.sh \
    bash -c 'exec cargo test --manifest-path src-tauri/Cargo.toml --test tray -- --nocapture 1>&3 2>&4' \
    >"$desktop_log" 2>&1
