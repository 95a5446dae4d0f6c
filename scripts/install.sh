#!/usr/bin/env bash
# Shared installation steps of scripts/build-site.sh and scripts/test.sh.
#
# Source it (defines the functions below) or run it (installs what the site build
# needs; add --browser to also install Chromium for the browser tests):
#     bash scripts/install.sh [--browser]
# Works from a fresh clone on Debian/Ubuntu with Python >= 3.10. System packages
# (fonts-noto-cjk, chromium, npm, python3-venv) are installed with apt-get when
# missing, as root or through passwordless sudo; otherwise a warning says what is
# missing. Every step is skipped when already done.

SITE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$SITE_ROOT/.venv}"
_APT_UPDATED=""

say()  { printf '\033[1m==> [%s] %s\033[0m\n' "$(date +%H:%M:%S)" "$*"; }
warn() { printf '\033[33mWARNING: %s\033[0m\n' "$*" >&2; }
die()  { printf '\033[31mERROR: %s\033[0m\n' "$*" >&2; exit 1; }

# The command prefix that may run apt-get ("" for root, "sudo -n" with sudo);
# returns 1 when apt-get cannot be run.
_apt_prefix() {
    command -v apt-get >/dev/null 2>&1 || return 1
    if [ "$(id -u)" = 0 ]; then
        echo ""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        echo "sudo -n"
    else
        return 1
    fi
}

_have_deb() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# apt_install PKG...: install Debian packages; returns 1 if that is impossible.
apt_install() {
    local prefix
    prefix="$(_apt_prefix)" || return 1
    if [ -z "$_APT_UPDATED" ]; then
        say "apt-get update"
        $prefix env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
        _APT_UPDATED=1
    fi
    say "apt-get install $*"
    $prefix env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null || return 1
}

_find_python() {
    local cand
    for cand in ${PYTHON:-} python3 python3.12 python3.11 python3.10; do
        if command -v "$cand" >/dev/null 2>&1 &&
            "$cand" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] < (3, 13)))' 2>/dev/null; then
            command -v "$cand"
            return 0
        fi
    done
    return 1
}

# .venv with requirements.txt and the package (editable); activates it.
install_python() {
    if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
        local py
        py="$(_find_python)" || die "Python 3.10, 3.11 or 3.12 is required (set PYTHON=/path/to/python3.x)"
        say "creating $VENV with $py"
        rm -rf "$VENV"
        if ! "$py" -m venv "$VENV" 2>/dev/null; then
            rm -rf "$VENV"
            local ver
            ver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
            apt_install "python$ver-venv" || apt_install python3-venv ||
                die "'$py -m venv' failed: install python3-venv"
            "$py" -m venv "$VENV" || die "'$py -m venv $VENV' failed"
        fi
        "$VENV/bin/python" -m pip install -q --upgrade pip
    fi
    # shellcheck disable=SC1091
    . "$VENV/bin/activate"
    say "pip install -r requirements.txt -e ."
    python -m pip install -q --disable-pip-version-check -r "$SITE_ROOT/requirements.txt" -e "$SITE_ROOT"
}

# fonts-noto-cjk: the figures of some chapters have CJK labels.
install_fonts() {
    if _have_deb fonts-noto-cjk || fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; then
        return 0
    fi
    apt_install fonts-noto-cjk ||
        warn "fonts-noto-cjk is not installed and cannot be installed (needs root or sudo):" \
             "CJK labels in the figures will render as boxes."
    # matplotlib caches the font list; drop it so the new fonts are seen.
    rm -rf "${MPLCONFIGDIR:-$HOME/.config/matplotlib}"/fontlist-*.json \
           "$HOME/.cache/matplotlib"/fontlist-*.json 2>/dev/null || true
}

# Chromium for the browser tests (tests/test_site.py).
install_browser() {
    if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
        return 0
    fi
    apt_install chromium ||
        warn "chromium is not installed and cannot be installed (needs root or sudo):" \
             "the browser tests of the website will be skipped."
}

# node_modules from package-lock.json (npm ci), then the vendored browser assets.
install_node_assets() {
    if ! command -v npm >/dev/null 2>&1; then
        apt_install nodejs npm || die "npm is required to build the website (apt-get install npm)"
    fi
    local stamp="$SITE_ROOT/node_modules/.package-lock.sha256" want
    want="$(sha256sum "$SITE_ROOT/package-lock.json" | cut -d' ' -f1)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        say "npm ci"
        (cd "$SITE_ROOT" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) ||
            die "npm ci failed"
        echo "$want" > "$stamp"
    fi
    python "$SITE_ROOT/scripts/vendor_assets.py" --root "$SITE_ROOT"
}

# Everything the site build needs; "--browser" adds Chromium.
install_all() {
    install_python
    install_fonts
    [ "${1:-}" = "--browser" ] && install_browser
    install_node_assets
}

# The website, executing every notebook; fails on any warning.
build_site() {
    say "jupyter-book build (output: _build/html)"
    (cd "$SITE_ROOT" && jupyter-book build --all . -W --keep-going) || die "the website build failed"
    # the playground's models (book/playground.md), from the models the notebooks just cached,
    # checked against PyTorch on every test sentence (the numbers land in its manifest.json)
    say "python -m attention export-web"
    (cd "$SITE_ROOT" && python -m attention export-web --out _build/html/playground-models) ||
        die "exporting the playground's models failed"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    install_all "${1:-}"
fi
