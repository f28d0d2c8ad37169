#!/usr/bin/env bash
# Sets up and runs mcpool on a fresh Debian/Ubuntu machine:
#   installs the system packages the build needs (only those missing: the
#   compiler, and GTK/WebKit/AppIndicator for the tray app), builds the
#   release binaries, installs them (scripts/install.sh: `mcpool` and
#   `mcpool-app` in ~/.local/bin, or /usr/local/bin as root, and the tray
#   app in the desktop's menu), and starts the installed tray app on the
#   default config (~/.config/mcpool/config.json; an absent file is an
#   empty pool).
# Without a display (ssh, a server, CI) it says so and runs `mcpool serve`
# instead: the same pool and endpoint, in the foreground.
# Extra arguments go to the app or to `mcpool serve` alike
# (e.g. --config FILE, --listen ADDR, --dashboard for the app only).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi

PACKAGES=(
    build-essential pkg-config ca-certificates libssl-dev
    # The tray app: Tauri 2 on GTK 3, WebKitGTK 4.1 and AppIndicator.
    libwebkit2gtk-4.1-dev libxdo-dev libayatana-appindicator3-dev librsvg2-dev
)
need=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ "${#need[@]}" -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "[mcpool] missing system packages (${need[*]}) and no apt-get to install them" >&2
        exit 1
    fi
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "[mcpool] installing ${need[*]}" >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" </dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "[mcpool] Rust is not installed: install it with rustup (https://rustup.rs), then run this again." >&2
    exit 1
fi

echo "[mcpool] building (the first build takes a few minutes)" >&2
cargo build --release --locked --workspace --bin mcpool --bin mcpool-app >&2
# Installed, then run from where it is installed: "Open at login" records
# the path of the running app, which must outlive the build directory.
BINDIR="$(bash scripts/install.sh)"
MCPOOL=mcpool
[ "$(command -v mcpool || true)" = "$BINDIR/mcpool" ] || MCPOOL="$BINDIR/mcpool"
echo "[mcpool] agents need the bearer token: $MCPOOL token" >&2

if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
    exec "$BINDIR/mcpool-app" "$@"
fi
echo "[mcpool] no display (neither DISPLAY nor WAYLAND_DISPLAY is set), so no tray: running \`mcpool serve\` instead, the same pool and endpoint" >&2
args=()
for a in "$@"; do
    [ "$a" = --dashboard ] || args+=("$a")
done
exec "$BINDIR/mcpool" serve "${args[@]}"
