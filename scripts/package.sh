#!/usr/bin/env bash
# Builds mcpool's Linux packages with Tauri's bundler:
#   target/release/bundle/deb/mcpool_<version>_<arch>.deb
#       /usr/bin/mcpool-app (the tray app), /usr/bin/mcpool (the CLI),
#       /usr/share/applications/mcpool.desktop, hicolor icons; Depends on
#       WebKitGTK 4.1, GTK 3 and AppIndicator. Install with a double-click
#       or `sudo apt install ./mcpool_<version>_<arch>.deb`.
#   target/release/bundle/appimage/mcpool_<version>_<arch>.AppImage
#       Tauri's AppImage bundler downloads linuxdeploy and its plugins from
#       github.com while it runs: without that network it cannot be built,
#       and this script says so and fails.
#
#   scripts/package.sh [deb] [appimage]     (default: both)
#
# Needs the release build's system packages (scripts/run.sh installs them),
# binutils' strip, and the Tauri CLI, the npm package @tauri-apps/cli pinned in package.json
# (installed from the npm registry by `npm ci` when node_modules lacks it).
# Prints the paths of the packages it made on stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
say() { printf '[package] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

bundles=()
for a in "$@"; do
    case "$a" in
        deb|appimage) bundles+=("$a") ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
        *) die "unknown bundle: $a (deb or appimage)" ;;
    esac
done
[ "${#bundles[@]}" -gt 0 ] || bundles=(deb appimage)

TAURI="$ROOT/node_modules/.bin/tauri"
if [ ! -x "$TAURI" ]; then
    command -v npm >/dev/null 2>&1 || die "the Tauri CLI comes from npm (@tauri-apps/cli in package.json), and npm is not installed"
    say "npm ci (for the Tauri CLI)"
    npm ci --no-audit --no-fund --loglevel=error </dev/null
fi
[ -x "$TAURI" ] || die "npm ci did not install $TAURI"
say "$("$TAURI" --version)"

# Both binaries, in the one release build that scripts/run.sh also makes;
# the bundler then packs them (it builds nothing itself with `bundle`).
say "cargo build --release (the first release build takes a while)"
start=$SECONDS
cargo build --release --locked --workspace --bin mcpool --bin mcpool-app >&2
say "release build: $((SECONDS - start)) s"

# The packages carry the binaries without their debug info (the release
# profile has no debug info; strip takes the symbol tables, ~85 MB for the two).
# tauri.conf.json's bundle.linux.deb.files takes them from here.
stage="$ROOT/target/release/package"
mkdir -p "$stage"
for bin in mcpool mcpool-app; do
    strip --strip-debug -o "$stage/$bin.tmp" "target/release/$bin"
    mv -f "$stage/$bin.tmp" "$stage/$bin"
done
version="$("$stage/mcpool" --version | cut -d' ' -f2)"
arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
made=()
for b in "${bundles[@]}"; do
    out="$ROOT/target/release/bundle"
    # --no-binary-patching: the bundler would otherwise rewrite
    # target/release/mcpool-app in place (bundle-type marker for Tauri's
    # updater, which mcpool does not use).
    say "tauri bundle --bundles $b"
    start=$SECONDS
    log="$(mktemp)"
    if (cd src-tauri && "$TAURI" bundle --bundles "$b" --ci --no-sign --no-binary-patching) >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
    else
        cat "$log" >&2
        if [ "$b" = appimage ]; then
            if grep -q '^ *Downloading https://github.com/' "$log"; then
                what="$(grep -m 1 '^ *Downloading ' "$log" | sed 's/^ *Downloading //')"
                err="$(grep -m 1 'failed to bundle project' "$log" | sed 's/^ *Error //' || true)"
                rm -f "$log"
                die "the AppImage cannot be built without github.com: Tauri's AppImage bundler downloads its tools (AppRun, linuxdeploy and its plugins) while it runs, and the download of $what failed: ${err:-see above}. Build it where github.com is reachable (the tools are then cached in ~/.cache/tauri); the .deb needs no download."
            fi
            rm -f "$log"
            die "tauri bundle --bundles appimage failed (see above)"
        fi
        rm -f "$log"
        die "tauri bundle --bundles $b failed (see above)"
    fi
    case "$b" in
        deb) f="$out/deb/mcpool_${version}_${arch}.deb" ;;
        appimage) f="$(ls -t "$out"/appimage/mcpool_"${version}"_*.AppImage 2>/dev/null | head -n 1 || true)" ;;
    esac
    [ -n "$f" ] && [ -f "$f" ] || die "tauri bundle succeeded but made no $b where expected (${f:-$out/$b})"
    say "$b: $f ($(du -h "$f" | cut -f1), $((SECONDS - start)) s)"
    made+=("$f")
done
printf '%s\n' "${made[@]}"
