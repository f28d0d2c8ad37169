#!/usr/bin/env bash
# Sets up and runs mcpool on a fresh Debian/Ubuntu machine:
#   installs the few system packages the build needs (if missing), builds the
#   release binary, and runs `mcpool serve` on the default config
#   (~/.config/mcpool/config.json; an absent file is an empty pool).
# Extra arguments go to `mcpool serve` (e.g. --config FILE, --listen ADDR).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi

need=()
for p in build-essential pkg-config ca-certificates; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ "${#need[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
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

cargo build --release --locked -p mcpool >&2
echo "[mcpool] agents need the bearer token: ./target/release/mcpool token" >&2
exec ./target/release/mcpool serve "$@"
