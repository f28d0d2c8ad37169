#!/usr/bin/env bash
# mcpool for Windows, built and tested on Debian:
#
#   scripts/windows.sh build        the Windows programs (release) in dist/windows/:
#                                   mcpool.exe, mcpool-app.exe (the tray app),
#                                   mcpool-faulty.exe (the test server) and
#                                   mcpool-windows-x86_64.zip (the two programs
#                                   people run, the WebView2 loader, a README
#                                   and the licence)
#   scripts/windows.sh test         the Windows test set under Wine: mcpool-core's
#                                   unit tests built for Windows, then the
#                                   end-to-end tests of tests/tests/wine/
#                                   against the programs in dist/windows/
#   scripts/windows.sh run -- ARGS  mcpool.exe ARGS under Wine, in the test prefix
#
# What `test` and `run` use is what `build` put in dist/windows/, which is
# what people get: test what you ship.
#
# Toolchain: Debian's own Rust (rustc-web, cargo-web: /usr/bin/cargo) with
# its standard library's sources (rust-web-src), rebuilt for Windows with
# -Zbuild-std (RUSTC_BOOTSTRAP=1), and the MinGW-w64 linker. The rustup
# toolchain has no Windows standard library and none can be fetched here.
#
# Target: x86_64-win7-windows-gnu, not x86_64-pc-windows-gnu. The standard
# library of the latter needs bcryptprimitives.dll (ProcessPrng), which Wine
# 8.0 (Debian 12's) lacks, so its programs do not start under Wine. A
# stand-in DLL would make them start in the tests, but then what is tested
# is not what runs on a user's machine (a DLL of ours in place of the
# system's). The win7 target's standard library uses APIs that both Wine and
# every Windows since 7 have, so one program is tested and shipped; it runs
# on Windows 10 and 11 as it does on 7.
#
# Env knobs:
#   MCPOOL_WINDOWS_TARGET_DIR  cargo's target dir for Windows (default
#                              ~/.cache/mcpool/target-windows, or under XDG_CACHE_HOME):
#                              outside the checkout, so that every clone on this
#                              machine (CI's fresh one included) shares one cached
#                              Windows build; a cold one takes 30-45 min on 2 cores
#   MCPOOL_WINEPREFIX          the Wine prefix (default <repo>/target/wine; never ~/.wine)
#   MCPOOL_SKIP_APT=1          do not install Debian packages
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf '[windows] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }
# shellcheck source=scripts/apt.sh
. "$ROOT/scripts/apt.sh"

TARGET=x86_64-win7-windows-gnu
TARGET_ENV=X86_64_WIN7_WINDOWS_GNU
if [ -n "${MCPOOL_WINDOWS_TARGET_DIR:-}" ]; then
    TARGET_DIR="$MCPOOL_WINDOWS_TARGET_DIR"
elif [ -n "${XDG_CACHE_HOME:-}${HOME:-}" ]; then
    TARGET_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/mcpool/target-windows"
else
    TARGET_DIR="$ROOT/target/windows" # no home: a cache of this checkout's own
fi
DIST="$ROOT/dist/windows"
export WINEPREFIX="${MCPOOL_WINEPREFIX:-$ROOT/target/wine}"
export WINEDEBUG="${WINEDEBUG:--all}"
# No Mono or Gecko installers: mcpool needs neither.
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"

# wine64 is the 64-bit loader; wine brings the `wine`, `wineboot` and
# `wineserver` commands that run it.
APT_PACKAGES=(rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine64 wine zip)

# Debian's cargo and rustc (1.96, with std sources), not rustup's; only for
# the Windows builds (the Linux test crate below is built as test.sh builds it).
CARGO=/usr/bin/cargo

packages() {
    apt_install_missing "${APT_PACKAGES[@]}"
}

# cargo for Windows: build-std, the MinGW linker and C compiler (for the
# build scripts of C dependencies: SQLite, aws-lc).
wcargo() {
    local t="${TARGET//-/_}"
    env RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 CARGO_INCREMENTAL=0 \
        CARGO_TARGET_DIR="$TARGET_DIR" \
        "CARGO_TARGET_${TARGET_ENV}_LINKER=x86_64-w64-mingw32-gcc" \
        "CC_$t=x86_64-w64-mingw32-gcc" "CXX_$t=x86_64-w64-mingw32-g++" "AR_$t=x86_64-w64-mingw32-ar" \
        "$CARGO" "$@" -Zbuild-std=std,panic_abort --target "$TARGET"
}

# rquickjs-sys (code mode's QuickJS) ships its Rust bindings per target
# triple and has none for x86_64-win7-windows-gnu. The win7 target differs
# from x86_64-pc-windows-gnu only in which Windows APIs its standard library
# calls, not in C types or layout, so that triple's bindings are the ones:
# copied beside the others in cargo's unpacked copy of the crate. (Its
# `bindgen` feature would need libclang and a clang that knows the triple.)
quickjs_bindings() {
    "$CARGO" fetch --locked --quiet
    local dir
    dir="$("$CARGO" metadata --format-version 1 --locked \
        | python3 -c 'import json, os, sys; print(next(os.path.dirname(p["manifest_path"]) for p in json.load(sys.stdin)["packages"] if p["name"] == "rquickjs-sys"))')"
    [ -d "$dir/src/bindings" ] || die "rquickjs-sys is not unpacked at $dir"
    if [ ! -f "$dir/src/bindings/$TARGET.rs" ]; then
        cp "$dir/src/bindings/x86_64-pc-windows-gnu.rs" "$dir/src/bindings/$TARGET.rs"
        say "QuickJS bindings for $TARGET: those of x86_64-pc-windows-gnu"
    fi
}

build() {
    packages
    quickjs_bindings
    mkdir -p "$DIST"
    # One cargo run for the three, so that they share one set of dependency
    # builds (separate runs unify features apart and build many twice).
    say "release build of mcpool.exe, mcpool-app.exe and mcpool-faulty.exe ($TARGET, target dir $TARGET_DIR)"
    local start=$SECONDS
    wcargo build --release -p mcpool -p mcpool-app -p mcpool-faulty --bins
    say "release build: $((SECONDS - start)) s"
    local out="$TARGET_DIR/$TARGET/release"
    local exe
    for exe in mcpool mcpool-app mcpool-faulty; do
        # Shipped without the symbol tables (the release profile has no
        # debug info; the symbols alone are most of mcpool-app.exe's 77 MB).
        x86_64-w64-mingw32-strip -o "$DIST/$exe.exe" "$out/$exe.exe"
        chmod 0755 "$DIST/$exe.exe"
    done
    # The GNU target links the WebView2 loader as a DLL (the MSVC one links
    # it in), so it ships beside mcpool-app.exe: Microsoft's redistributable
    # loader, as the webview2-com-sys crate carries it.
    install -m 0644 "$out/WebView2Loader.dll" "$DIST/WebView2Loader.dll"
    package
    say "built: $(cd "$DIST" && ls)"
}

# The zip people download: the two programs, the WebView2 loader, a README
# and the licence.
package() {
    local stage
    stage="$(mktemp -d)"
    mkdir -p "$stage/mcpool"
    cp "$DIST/mcpool.exe" "$DIST/mcpool-app.exe" "$DIST/WebView2Loader.dll" "$stage/mcpool/"
    sed 's/$/\r/' "$ROOT/LICENSE" >"$stage/mcpool/LICENSE.txt"
    cat >"$stage/mcpool/README.txt" <<'EOF'
mcpool for Windows (x86_64)

mcpool keeps one shared pool of MCP server connections for every agent on
this machine and offers them through one local MCP endpoint.

  mcpool-app.exe   the tray app: starts the pool, its icon in the
                   notification area, the dashboard (a WebView2 window:
                   the runtime comes with Windows 11 and current Windows
                   10; without it the dashboard opens in your browser)
  WebView2Loader.dll  Microsoft's WebView2 loader, which mcpool-app.exe
                   needs beside it
  mcpool.exe       the command line: mcpool serve, mcpool add, mcpool
                   connect, mcpool secret, mcpool doctor, ... (mcpool --help)

Keep the three files in one folder (for example %LOCALAPPDATA%\Programs\mcpool) and,
for the command line, add that folder to your PATH. Every local server
mcpool starts runs in a Job Object: when mcpool ends, however it ends, the
server and everything it started end too.

Documentation: the README of the mcpool sources, section "Windows".
Licence: Apache-2.0 (LICENSE.txt).
EOF
    # Windows line ends, for Notepad.
    sed -i 's/$/\r/' "$stage/mcpool/README.txt"
    rm -f "$DIST/mcpool-windows-x86_64.zip"
    (cd "$stage" && zip -q -X -r "$DIST/mcpool-windows-x86_64.zip" mcpool)
    rm -rf "$stage"
}

# A Wine prefix of our own, initialised once.
prefix() {
    command -v wine >/dev/null 2>&1 || die "wine not found (scripts/windows.sh build installs wine64)"
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        say "wine prefix: $WINEPREFIX"
        mkdir -p "$WINEPREFIX"
        wineboot -i >/dev/null 2>&1 || die "wineboot failed for $WINEPREFIX"
        wineserver -w
    fi
}

# Stops this prefix's wineserver (and so every Windows process of the
# prefix), never anyone else's.
stop_prefix() {
    WINEPREFIX="$WINEPREFIX" wineserver -k 2>/dev/null || true
}

# mcpool-core's unit tests, built for Windows and run under Wine. A test
# that cannot run on Windows says why in the code (`ignore = "…"`), so the
# runner's own output names it; none is left out here.
unit_tests() {
    say "mcpool-core's unit tests, built for Windows"
    quickjs_bindings
    local exe
    exe="$(wcargo test --release -p mcpool-core --lib --no-run --message-format=json 2>/dev/null \
        | sed -n 's/.*"executable":"\([^"]*mcpool_core[^"]*\.exe\)".*/\1/p' | tail -1)"
    [ -n "$exe" ] && [ -f "$exe" ] || die "the unit tests did not build (run: scripts/windows.sh test)"
    say "running $(basename "$exe") under Wine"
    wine "$exe" --test-threads=2
}

e2e_tests() {
    for exe in mcpool mcpool-app mcpool-faulty; do
        [ -f "$DIST/$exe.exe" ] || die "$DIST/$exe.exe is missing: run scripts/windows.sh build first"
    done
    say "end-to-end tests under Wine (tests/tests/wine/) against $DIST"
    # On a throwaway desktop (a virtual X display): the tray app's test
    # opens its window and its notification-area icon.
    bash "$ROOT/scripts/desktop.sh" env MCPOOL_WINE_BIN_DIR="$DIST" MCPOOL_WINEPREFIX="$WINEPREFIX" \
        cargo test --workspace --test wine -- --test-threads=1
}

run_tests() {
    prefix
    trap stop_prefix EXIT
    unit_tests
    e2e_tests
}

cmd="${1:-}"
[ "$#" -gt 0 ] && shift
case "$cmd" in
    build) build ;;
    test) run_tests ;;
    run)
        [ "${1:-}" = "--" ] && shift
        [ -f "$DIST/mcpool.exe" ] || die "$DIST/mcpool.exe is missing: run scripts/windows.sh build first"
        prefix
        exec wine "$DIST/mcpool.exe" "$@"
        ;;
    -h | --help | "") sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2 ;;
    *) die "unknown command: $cmd (build, test, run -- ARGS)" ;;
esac
