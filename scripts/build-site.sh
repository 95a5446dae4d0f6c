#!/usr/bin/env bash
# Build the website into _build/html (README command #1).
# From a fresh clone on Debian/Ubuntu with Python >= 3.10: creates .venv, installs
# requirements.txt and the package, fonts-noto-cjk (apt, when root or with sudo),
# the pinned front-end assets (npm ci + scripts/vendor_assets.py), then runs
#     jupyter-book build --all . -W --keep-going
# which executes every notebook and fails on any warning or cell error. The executed
# notebooks land in _build/jupyter_execute/notebooks/; scripts/test.sh compares their
# checked outputs with the committed notebooks (tests/test_notebook_outputs.py).
set -euo pipefail
# shellcheck source=scripts/install.sh
. "$(dirname "${BASH_SOURCE[0]}")/install.sh"
cd "$SITE_ROOT"
install_all
build_site
say "website built: $SITE_ROOT/_build/html/index.html"
