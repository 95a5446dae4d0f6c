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
            places = (where,) if isinstance(where[0], str) else where
            b = best[mechanism]
            same = [
                r["mean"]
                for record, prefix in places
                for r in rows
                if r["record"] == record and r["entry"].startswith(prefix) and r["attention"]
            ]
            assert any(b["record"] == rec and b["entry"].startswith(pre) for rec, pre in places) and b["attention"]
            assert b["mean"] == max(same)


def test_the_best_is_taken_over_every_record_of_a_mechanism():
    """Multi-head attention is the Transformer of the heads sweep and of both comparisons: its best
    is the best of all three, not the sweep's alone."""
    rows = leaderboard.leaderboard()
    best = closing.best_results(rows)["multi-head attention"]
    sweep = max(r["mean"] for r in rows if r["record"] == "transformer-heads")
    final = max(r["mean"] for r in rows if r["record"] == "transformer-final" and r["entry"].startswith("Transformer"))
    assert best["mean"] == max(sweep, final) and best["record"] == "transformer-final"


def test_a_mapping_across_metrics_is_an_error(monkeypatch):
    mixed = (("hsk-convergence", "RNNsearch"), ("ntm-copy", "ntm / by_length / 120"))
    monkeypatch.setitem(closing.MECHANISMS, "mixed", (("basic",), 3, "scores", mixed))
    with pytest.raises(ValueError, match="'mixed': its rows measure different metrics"):
        closing.best_results()


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
