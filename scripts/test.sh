#!/usr/bin/env bash
# The one test command (CI runs it through .ci/run):
#   environment setup -> rustfmt -> clippy -> build the binaries (the CLI, the
#   tray app, the fault server) -> the .deb (scripts/package.sh: a release
#   build and Tauri's bundler) -> cargo test, on a throwaway desktop
#   (scripts/desktop.sh), which the tray app's own test needs.
#   Before it, the macOS check (scripts/macos.sh; MCPOOL_TEST_MACOS=0 skips
#   it): the core and the command line, with their unit tests, type-checked
#   for aarch64-apple-darwin; then the Windows part (scripts/windows.sh;
#   MCPOOL_TEST_WINDOWS=0 skips it): the .exe programs and the zip in
#   dist/windows, then its tests under Wine.
# cargo test runs last so that the output ends with its own summary.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
export PATH

step() { printf '\n==> %s\n' "$*" >&2; }

step "test environment"
bash scripts/test-env.sh </dev/null

export MCPOOL_TEST_PYTHON="$ROOT/.venv/bin/python"
export MCPOOL_TEST_PYTHON_MCP2="$ROOT/.venv-mcp2/bin/python"
export MCPOOL_TEST_NODE_MODULES="$ROOT/node_modules"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# A one-off build gains nothing from incremental data but gigabytes of disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# Never let a developer's running instance or config leak into the tests.
unset MCPOOL_TOKEN MCPOOL_LISTEN MCPOOL_CONFIG MCPOOL_CACHE_DIR || true

step "cargo fmt --all --check"
cargo fmt --all --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
# tests/tests/wine/ is `test = false` (scripts/windows.sh runs it), which
# --all-targets leaves out: linted by name.
cargo clippy --workspace --test wine -- -D warnings

step "cargo build --workspace --bins"
cargo build --workspace --bins

step "package: the .deb (release build + Tauri's bundler; tests/tests/package.rs checks and installs it)"
MCPOOL_TEST_DEB="$(bash scripts/package.sh deb </dev/null)"
export MCPOOL_TEST_DEB

# The macOS check (MCPOOL_TEST_MACOS=0 leaves it out): mcpool-core and the
# command line, with their unit tests, type-checked for Apple silicon
# (nothing linked or run: no macOS SDK here). Its target dir is outside the
# checkout too, so a warm run checks only mcpool's own two crates.
if [ "${MCPOOL_TEST_MACOS:-1}" = 1 ]; then
    step "macOS: scripts/macos.sh check (mcpool-core and mcpool with their unit tests, type-checked for aarch64-apple-darwin)"
    bash scripts/macos.sh check </dev/null
else
    step "macOS: skipped (MCPOOL_TEST_MACOS=0)"
fi

# The Windows part (MCPOOL_TEST_WINDOWS=0 leaves it out): the release .exe
# programs and the zip, then mcpool-core's unit tests and tests/tests/wine/
# under Wine. Its target dir is outside the checkout (scripts/windows.sh), so
# a fresh clone on a machine that built it before rebuilds only mcpool's own
# crates.
if [ "${MCPOOL_TEST_WINDOWS:-1}" = 1 ]; then
    step "Windows: scripts/windows.sh build (release .exe programs and the zip in dist/windows)"
    bash scripts/windows.sh build </dev/null

    step "Windows: scripts/windows.sh test (mcpool-core's unit tests and tests/tests/wine/ under Wine)"
    bash scripts/windows.sh test </dev/null
else
    step "Windows: skipped (MCPOOL_TEST_WINDOWS=0)"
fi

step "cargo test --workspace (virtual X display, private D-Bus session, unlocked throwaway keyring)"
exec bash scripts/desktop.sh cargo test --workspace --no-fail-fast
