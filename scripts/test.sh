#!/usr/bin/env bash
# Install everything, build the website and run every test (README command #2):
# the package tests (tests/), the notebooks and the browser tests of the built site
# (tests/test_site.py, headless Chromium). The notebooks execute once, in the site
# build; tests/test_notebook_outputs.py then compares the outputs of their cells
# tagged nbval-check-output (in _build/jupyter_execute/notebooks/) with the
# committed notebooks. Exits with pytest's status; "no tests collected" (pytest
# status 5) counts as a failure.
set -euo pipefail
# shellcheck source=scripts/install.sh
. "$(dirname "${BASH_SOURCE[0]}")/install.sh"
cd "$SITE_ROOT"
install_all --browser
build_site
say "pytest tests"
rc=0
python -m pytest tests -p no:cacheprovider || rc=$?
if [ "$rc" -eq 5 ]; then
    printf 'ERROR: pytest collected no tests (exit status 5)\n' >&2
elif [ "$rc" -ne 0 ]; then
    printf 'ERROR: tests failed (pytest exit status %s)\n' "$rc" >&2
fi
exit "$rc"
