#!/usr/bin/env bash
# Install everything, build the website and run every test (README command #2):
# the linter and the formatter (ruff check, ruff format --check: pyproject.toml), the package tests (tests/,
# on two processes with pytest-xdist), the notebooks and the browser tests of the built site
# (tests/test_site.py, headless Chromium). The notebooks execute once, in the site
# build; tests/test_notebook_outputs.py then compares the outputs of their cells
# tagged nbval-check-output (in _build/jupyter_execute/notebooks/) with the
# committed notebooks. Then every notebook is executed a second time under another
# CPU kernel setting (ATEN_CPU_CAPABILITY=default, or the processor's own when the
# run already has default), with its own empty model cache, and compared with the
# committed notebooks by the same test: the checked outputs must hold on any CPU.
# Both executions start from an empty model cache ($ATTENTION_MODEL_DIR under
# _build/), so no model trained by an earlier run or another processor makes a
# check pass. Exits with pytest's status; "no tests collected" (pytest status 5)
# counts as a failure.
set -euo pipefail
# shellcheck source=scripts/install.sh
. "$(dirname "${BASH_SOURCE[0]}")/install.sh"
cd "$SITE_ROOT"
install_all --browser
say "ruff check . && ruff format --check ."
lint=0
ruff check . || lint=$?
ruff format --check . || lint=$?
export ATTENTION_MODEL_DIR="$SITE_ROOT/_build/model-cache"
rm -rf "$ATTENTION_MODEL_DIR"
build_site
say "pytest tests (two processes, a test file at a time each: pytest-xdist)"
rc=0
python -m pytest tests -p no:cacheprovider -n 2 --dist loadfile --ignore=tests/test_notebook_outputs.py || rc=$?
say "pytest tests/test_notebook_outputs.py (the site build's notebooks against the committed ones)"
rc_nb=0
python -m pytest tests/test_notebook_outputs.py -p no:cacheprovider || rc_nb=$?  # prints the notebook times
if [ "$rc" -eq 0 ] && [ "$rc_nb" -ne 0 ]; then rc=$rc_nb; fi
if [ "$rc" -eq 5 ]; then
    printf 'ERROR: pytest collected no tests (exit status 5)\n' >&2
elif [ "$rc" -ne 0 ]; then
    printf 'ERROR: tests failed (pytest exit status %s)\n' "$rc" >&2
fi

# the second execution, under another CPU kernel setting
if [ "${ATEN_CPU_CAPABILITY:-}" = "default" ]; then
    second=() label="native"   # the processor's own kernels
else
    second=(ATEN_CPU_CAPABILITY=default) label="default"
fi
out="$SITE_ROOT/_build/kernel-$label"
rm -rf "$out" "$SITE_ROOT/_build/model-cache-$label"
say "notebooks again, CPU kernels: $label (executed copies in _build/kernel-$label)"
env -u ATEN_CPU_CAPABILITY "${second[@]}" ATTENTION_MODEL_DIR="$SITE_ROOT/_build/model-cache-$label" \
    python scripts/execute_notebooks.py --out "$out" --jobs 2 || true  # a failed cell is reported below
rc2=0
ATTENTION_EXECUTED="$out" python -m pytest tests/test_notebook_outputs.py -p no:cacheprovider \
    -k test_checked_outputs_match_the_committed_notebook || rc2=$?
if [ "$rc2" -ne 0 ]; then
    printf 'ERROR: the notebooks executed with CPU kernels %s differ from the committed ones (pytest exit status %s)\n' \
        "$label" "$rc2" >&2
    [ "$rc" -eq 0 ] && rc=$rc2
fi
if [ "$lint" -ne 0 ]; then
    printf 'ERROR: ruff found problems (ruff check --fix . and ruff format . correct most of them)\n' >&2
    [ "$rc" -eq 0 ] && rc=$lint
fi
exit "$rc"
