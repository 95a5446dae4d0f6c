"""The book's time budget: every notebook of the site build within 2 minutes on the 2-core CPU,
all of them together within 20 minutes (the CI run as a whole must stay under 45).

The times are myst-nb's own record of the site build (``_build/.doctrees/environment.pickle``),
which scripts/test.sh runs before the tests; the run prints them as a table at the end.
"""

import os
from pathlib import Path

import pytest
from conftest import BOOK_BUDGET_S, SLOW_NOTEBOOK_S, build_run_times, toc_docs

ROOT = Path(__file__).resolve().parents[1]


def _toc_notebooks() -> list[str]:
    """The docnames of every notebook page in _toc.yml (notebooks/...)."""
    return [doc for doc in toc_docs() if doc.startswith("notebooks/")]


@pytest.fixture(scope="module")
def times():
    times = build_run_times()
    missing = [doc for doc in _toc_notebooks() if times.get(doc) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(
                f"the site build recorded no execution time for {missing}: "
                "scripts/test.sh builds the site before the tests"
            )
        pytest.skip(f"no site build with times for {missing} (bash scripts/build-site.sh records them)")
    return {doc: times[doc] for doc in _toc_notebooks()}


def test_every_notebook_of_the_book_runs_within_two_minutes(times):
    slow = {doc: round(s, 1) for doc, s in times.items() if s > SLOW_NOTEBOOK_S}
    assert not slow, f"notebooks over {SLOW_NOTEBOOK_S} s on this machine: {slow}"


def test_the_whole_book_runs_within_twenty_minutes(times):
    total = sum(times.values())
    assert total <= BOOK_BUDGET_S, (
        f"the notebooks took {total:.0f} s together, over the budget of "
        f"{BOOK_BUDGET_S} s: {dict(sorted(times.items(), key=lambda kv: -kv[1]))}"
    )


def test_the_budget_catches_a_slow_notebook():
    toc = _toc_notebooks()
    assert len(toc) >= 14 and all((ROOT / f"{doc}.ipynb").exists() for doc in toc)
    too_slow = {doc: 1.0 for doc in toc} | {toc[0]: SLOW_NOTEBOOK_S + 1}
    with pytest.raises(AssertionError, match=toc[0]):
        test_every_notebook_of_the_book_runs_within_two_minutes(too_slow)
    with pytest.raises(AssertionError, match="over the budget"):
        test_the_whole_book_runs_within_twenty_minutes({doc: BOOK_BUDGET_S / 10 for doc in toc})
