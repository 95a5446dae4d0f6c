"""Chapter 11: the closing table reads every mechanism's best result from the leaderboard."""

import pytest

from attention.book import closing, leaderboard
from attention.book.chapters import ch11


def test_every_mechanism_maps_to_a_family_and_a_recorded_result():
    rows = leaderboard.leaderboard()
    best = closing.best_results(rows)
    assert set(best) == set(closing.MECHANISMS)
    for mechanism, (families, chapter, code, where) in closing.MECHANISMS.items():
        assert families and set(families) <= set(closing.FAMILIES), mechanism
        assert 1 <= chapter <= 11 and code
        if where is not None:
            b = best[mechanism]
            assert b["record"] == where[0] and b["entry"].startswith(where[1]) and b["attention"]
            same = [
                r["mean"]
                for r in rows
                if r["record"] == where[0] and r["entry"].startswith(where[1]) and r["attention"]
            ]
            assert b["mean"] == max(same)


def test_a_stale_mapping_is_an_error(monkeypatch):
    monkeypatch.setitem(closing.MECHANISMS, "gone", (("basic",), 3, "scores", ("hsk-convergence", "no such entry")))
    with pytest.raises(ValueError, match="no leaderboard row of 'hsk-convergence' starts with 'no such entry'"):
        closing.best_results()


def test_results_explorer_has_one_frame_per_record():
    rows = leaderboard.leaderboard()
    e = ch11.results_explorer(rows, mode="static")
    assert e.frames == len({r["record"] for r in rows})
    with pytest.raises(ValueError, match="at least one row"):
        ch11.results_figure([])
