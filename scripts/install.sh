#!/usr/bin/env bash
# Installs the built mcpool for the current user (or system-wide as root),
# so `mcpool` is on PATH and the tray app is in the desktop's menu:
#
#   mcpool, mcpool-app   -> ~/.local/bin            (root: /usr/local/bin)
#   mcpool.desktop       -> ~/.local/share/applications
#                                                   (root: /usr/local/share/applications)
#   icons (mcpool.png)   -> ~/.local/share/icons/hicolor/NxN/apps
#                                                   (root: /usr/local/share/icons/hicolor)
#
# It installs what `cargo build --release` made (scripts/run.sh builds, then
# calls this); it does not build. Idempotent: files already up to date are
# left alone. An "Open at login" item written by a copy started from
# elsewhere (e.g. ./target/release) is pointed at the installed app.
# Prints the directory holding the installed binaries on stdout (and
# everything else on stderr), so callers can run them from there.
#
#   scripts/install.sh [--prefix DIR] [--from DIR] [--uninstall]
#     --prefix DIR  binaries in DIR/bin, menu entry and icons under DIR/share
#     --from DIR    take the binaries from DIR (default: <repo>/target/release)
#     --uninstall   remove what an install with the same prefix put there
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf '[mcpool] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

prefix=""
from="$ROOT/target/release"
uninstall=0
while [ "$#" -gt 0 ]; do
    case "$1" in
        --prefix) [ "$#" -ge 2 ] || die "--prefix needs a directory"; prefix="$2"; shift 2 ;;
        --from) [ "$#" -ge 2 ] || die "--from needs a directory"; from="$2"; shift 2 ;;
        --uninstall) uninstall=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done

if [ -z "$prefix" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        prefix=/usr/local
        data=/usr/local/share
    else
        [ -n "${HOME:-}" ] || die "HOME is not set"
        prefix="$HOME/.local"
        data="${XDG_DATA_HOME:-$HOME/.local/share}"
    fi
else
    mkdir -p "$prefix"
    prefix="$(cd "$prefix" && pwd)"
    data="$prefix/share"
fi
bindir="$prefix/bin"
apps="$data/applications"
hicolor="$data/icons/hicolor"
entry="$apps/mcpool.desktop"
# The icon sizes we ship: icons/<file> -> hicolor/<size>/apps/mcpool.png
ICONS=("32x32.png:32x32" "128x128.png:128x128" "128x128@2x.png:256x256" "icon.png:512x512")
# "Open at login" (tauri-plugin-autostart) writes $HOME/.config/autostart/<productName>.desktop.
login_item="${HOME:-/nonexistent}/.config/autostart/mcpool.desktop"
# The program a login item starts (its Exec line's first word), if any.
login_exec() { [ -f "$login_item" ] && sed -n 's/^Exec=\([^ ]*\).*/\1/p' "$login_item" | head -n 1; }

refresh_caches() {
    # Optional: menus and icon themes find new files without them, only later.
    if command -v update-desktop-database >/dev/null 2>&1 && [ -d "$apps" ]; then
        update-desktop-database -q "$apps" 2>/dev/null || true
    fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$hicolor/index.theme" ]; then
        gtk-update-icon-cache -q -t "$hicolor" 2>/dev/null || true
    fi
}

if [ "$uninstall" = 1 ]; then
    removed=()
    for f in "$bindir/mcpool" "$bindir/mcpool-app" "$entry"; do
        [ -e "$f" ] && rm -f "$f" && removed+=("$f")
    done
    for pair in "${ICONS[@]}"; do
        f="$hicolor/${pair#*:}/apps/mcpool.png"
        [ -e "$f" ] && rm -f "$f" && removed+=("$f")
    done
    if [ "$(login_exec || true)" = "$bindir/mcpool-app" ]; then
        rm -f "$login_item" && removed+=("$login_item")
    fi
    refresh_caches
    if [ "${#removed[@]}" -eq 0 ]; then
        say "nothing to remove under $prefix"
    else
        say "removed ${removed[*]}"
    fi
    exit 0
fi

for bin in mcpool mcpool-app; do
    [ -x "$from/$bin" ] || die "no built $bin in $from: build first (cargo build --release --locked --workspace --bin mcpool --bin mcpool-app), or run scripts/run.sh, which builds and installs"
done

changed=()
# Copies $1 to $2 with mode $3 unless identical. Through a temporary file
# and a rename, so a running mcpool-app is replaced, not overwritten
# ("Text file busy").
put() {
    local src="$1" dst="$2" mode="$3"
    if [ -f "$dst" ] && cmp -s "$src" "$dst"; then
        chmod "$mode" "$dst"
        return 0
    fi
    mkdir -p "$(dirname "$dst")"
    local tmp
    tmp="$(mktemp "$dst.XXXXXX")"
    cp "$src" "$tmp"
    chmod "$mode" "$tmp"
    mv -f "$tmp" "$dst"
    changed+=("$dst")
}

# The binaries without their debug info (the release profile keeps line
# tables: ~490 MB for the two, ~85 MB stripped), when binutils is there.
staged="$(mktemp -d)"
trap 'rm -rf "$staged"' EXIT
for bin in mcpool mcpool-app; do
    if command -v strip >/dev/null 2>&1; then
        strip --strip-debug -o "$staged/$bin" "$from/$bin"
    else
        cp "$from/$bin" "$staged/$bin"
    fi
    put "$staged/$bin" "$bindir/$bin" 0755
done
for pair in "${ICONS[@]}"; do
    put "$ROOT/icons/${pair%%:*}" "$hicolor/${pair#*:}/apps/mcpool.png" 0644
done

desktop_tmp="$staged/mcpool.desktop"
cat > "$desktop_tmp" <<EOF
[Desktop Entry]
Type=Application
Version=1.0
Name=mcpool
GenericName=MCP server pool
Comment=One local endpoint for all your MCP servers
Exec=$bindir/mcpool-app
TryExec=$bindir/mcpool-app
Icon=mcpool
Terminal=false
StartupNotify=false
Categories=Development;
Keywords=MCP;agent;AI;server;
EOF
put "$desktop_tmp" "$entry" 0644

# A login item made by a copy started from somewhere else (the build
# directory, an older install) would start that copy at login: point it here.
old_exec="$(login_exec || true)"
if [ "${old_exec##*/}" = mcpool-app ] && [ "$old_exec" != "$bindir/mcpool-app" ]; then
    new="$(sed "s|^Exec=[^ ]*|Exec=$bindir/mcpool-app|" "$login_item")"
    printf '%s\n' "$new" > "$login_item"
    changed+=("$login_item (Open at login now starts $bindir/mcpool-app)")
fi

refresh_caches

if [ "${#changed[@]}" -eq 0 ]; then
    say "already installed and up to date in $bindir"
else
    say "installed: ${changed[*]}"
fi

case ":$PATH:" in
    *":$bindir:"*)
        found="$(command -v mcpool || true)"
        if [ "$found" != "$bindir/mcpool" ]; then
            say "note: \`mcpool\` on your PATH is $found, found before $bindir/mcpool"
        fi
        ;;
    *)
        if [ "$bindir" = "$HOME/.local/bin" ]; then
            say "$bindir is not on your PATH yet: log out and in again (most distributions' ~/.profile adds it once it exists), or add it now: echo 'export PATH=\"\$HOME/.local/bin:\$PATH\"' >> ~/.bashrc"
        else
            say "$bindir is not on your PATH: add it to run \`mcpool\` by name"
        fi
        ;;
esac
printf '%s\n' "$bindir"
