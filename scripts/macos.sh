#!/usr/bin/env bash
# mcpool for macOS, compile-checked on Debian:
#
#   scripts/macos.sh check   type-checks mcpool-core and the mcpool command
#                            line, with their unit tests, for
#                            aarch64-apple-darwin (Apple silicon): `cargo
#                            check`, so nothing is linked and nothing runs.
#
# What it proves is that the code compiles for macOS, the macOS-only code
# paths and the dependencies' macOS backends (the keyring's Keychain store,
# for one) included; not that it works: nothing of mcpool has been run on a
# Mac. The tray app is not checked: its notifications crate (notify-rust's
# mac-notification-sys) compiles Objective-C against Cocoa's headers, which
# come only with Apple's SDK, and that cannot be had here.
#
# Toolchain: Debian's own Rust (rustc-web, cargo-web: /usr/bin/cargo) with
# its standard library's sources (rust-web-src), checked for macOS with
# -Zbuild-std (RUSTC_BOOTSTRAP=1), as scripts/windows.sh builds for
# Windows: the rustup toolchain has no macOS standard library and none can
# be fetched here. The build scripts of C dependencies (SQLite, aws-lc,
# QuickJS) compile their C for macOS with zig (PyPI's `ziglang`, which
# carries macOS's libc headers), through cargo-zigbuild (crates.io), which
# sets zig up as the target's C compiler. Both are pinned exactly below and
# installed once, outside the checkout.
#
# Env knobs:
#   MCPOOL_MACOS_TARGET_DIR  cargo's target dir for macOS (default
#                            ~/.cache/mcpool/target-macos, or under XDG_CACHE_HOME):
#                            outside the checkout, so that every clone on this
#                            machine (CI's fresh one included) shares one cached
#                            check; cold it takes some minutes, warm well under one
#   MCPOOL_MACOS_TOOLS_DIR   where zig's venv and cargo-zigbuild are installed
#                            (default ~/.cache/mcpool/macos-tools; cargo-zigbuild
#                            keeps its compiler wrappers in ~/.cache/cargo-zigbuild)
#   MCPOOL_SKIP_APT=1        do not install Debian packages
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf '[macos] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }
# shellcheck source=scripts/apt.sh
. "$ROOT/scripts/apt.sh"

TARGET=aarch64-apple-darwin
if [ -n "${XDG_CACHE_HOME:-}${HOME:-}" ]; then
    CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/mcpool"
else
    CACHE="$ROOT/target" # no home: a cache of this checkout's own
fi
TARGET_DIR="${MCPOOL_MACOS_TARGET_DIR:-$CACHE/target-macos}"
TOOLS="${MCPOOL_MACOS_TOOLS_DIR:-$CACHE/macos-tools}"

# Pinned: the C compiler (zig, from PyPI's ziglang wheel) and the cargo
# wrapper that hands it to the build scripts.
ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.1
ZIG_VENV="$TOOLS/ziglang-$ZIGLANG_VERSION"
ZIGBUILD_ROOT="$TOOLS/cargo-zigbuild-$CARGO_ZIGBUILD_VERSION"

# What is checked: the core and the command line, their libraries, their
# programs and their unit tests (`--tests`: each crate's test harness).
CRATES=(-p mcpool-core -p mcpool)
TARGETS=(--lib --bins --tests)

APT_PACKAGES=(rustc-web cargo-web rust-web-src python3 python3-venv)

# Debian's cargo and rustc (1.96, with std sources), not rustup's.
CARGO=/usr/bin/cargo

packages() {
    apt_install_missing "${APT_PACKAGES[@]}"
    [ -x "$CARGO" ] || die "$CARGO is missing (Debian's cargo-web)"
}

# zig, in a venv of its own: the ziglang wheel carries the zig binary, in
# its package folder beside zig's own lib/. Sets ZIG.
zig() {
    local stamp="$ZIG_VENV/.mcpool-stamp" want="ziglang==$ZIGLANG_VERSION"
    if [ -f "$stamp" ] && [ "$(head -1 "$stamp")" = "$want" ]; then
        ZIG="$(sed -n 2p "$stamp")"
        if [ -x "$ZIG" ] && "$ZIG" version >/dev/null 2>&1; then
            return
        fi
    fi
    local py=/usr/bin/python3
    [ -x "$py" ] || py="$(command -v python3 || true)"
    [ -n "$py" ] || die "python3 not found"
    say "zig: ziglang $ZIGLANG_VERSION from PyPI into $ZIG_VENV"
    rm -rf "$ZIG_VENV"
    mkdir -p "$TOOLS"
    "$py" -m venv "$ZIG_VENV"
    "$ZIG_VENV/bin/python" -m pip install --no-input --disable-pip-version-check -q \
        --require-virtualenv "$want" </dev/null >&2
    ZIG="$("$ZIG_VENV/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')"
    if ! { [ -x "$ZIG" ] && "$ZIG" version >/dev/null; }; then
        die "zig from ziglang $ZIGLANG_VERSION does not run ($ZIG)"
    fi
    printf '%s\n%s\n' "$want" "$ZIG" >"$stamp"
}

# cargo-zigbuild, built once from crates.io with its own lock file.
zigbuild() {
    local exe="$ZIGBUILD_ROOT/bin/cargo-zigbuild"
    if [ -x "$exe" ] && [ "$("$exe" --version 2>/dev/null)" = "cargo-zigbuild $CARGO_ZIGBUILD_VERSION" ]; then
        return
    fi
    say "cargo-zigbuild: $CARGO_ZIGBUILD_VERSION from crates.io into $ZIGBUILD_ROOT"
    rm -rf "$ZIGBUILD_ROOT"
    mkdir -p "$TOOLS"
    local scratch
    scratch="$(mktemp -d)"
    env RUSTC=/usr/bin/rustc CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$scratch" \
        "$CARGO" install --quiet --locked --version "=$CARGO_ZIGBUILD_VERSION" \
        --root "$ZIGBUILD_ROOT" cargo-zigbuild </dev/null
    rm -rf "$scratch"
    [ -x "$exe" ] || die "cargo-zigbuild did not install into $ZIGBUILD_ROOT"
}

check() {
    packages
    zig
    zigbuild
    say "cargo check of mcpool-core and mcpool (libraries, programs, unit tests) for $TARGET (target dir $TARGET_DIR)"
    local start=$SECONDS
    # cargo-zigbuild runs $CARGO (Debian's) and hands $ZIG to the build
    # scripts as the C compiler (CC_aarch64_apple_darwin and the like).
    env CARGO="$CARGO" CARGO_ZIGBUILD_ZIG_PATH="$ZIG" \
        RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 CARGO_INCREMENTAL=0 \
        CARGO_TARGET_DIR="$TARGET_DIR" \
        "$ZIGBUILD_ROOT/bin/cargo-zigbuild" check --locked \
        "${CRATES[@]}" "${TARGETS[@]}" \
        -Zbuild-std=std,panic_abort --target "$TARGET"
    say "checked for $TARGET: mcpool-core (library and unit tests) and mcpool (program and unit tests) in $((SECONDS - start)) s"
}

cmd="${1:-}"
[ "$#" -gt 0 ] && shift
case "$cmd" in
    check) check ;;
    -h | --help | "") sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2 ;;
    *) die "unknown command: $cmd (check)" ;;
esac
