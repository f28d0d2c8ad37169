# shellcheck shell=bash
# Sourced by scripts/windows.sh and scripts/macos.sh (which define `say`
# and `die`): `apt_install_missing PKG...` installs those of the Debian
# packages named that are not installed, after `apt-get update`, as root.
# Nothing happens when all are there, with MCPOOL_SKIP_APT=1, or on a
# system without apt-get.
apt_install_missing() {
    if [ "${MCPOOL_SKIP_APT:-0}" = 1 ] || ! command -v apt-get >/dev/null 2>&1; then
        return 0
    fi
    local missing=() p
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    [ "${#missing[@]}" -gt 0 ] || return 0
    [ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]}"
    say "apt: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >&2
}
