"""Chapter 11 (``book/11-closing.md``): the taxonomy, the cost of global and local attention,
reading the leaderboard.

Each checker computes the answer from :mod:`attention.book.closing`, :mod:`attention.book.leaderboard` or
the window size of :mod:`attention.local`, and says why a wrong answer is wrong.
"""

from __future__ import annotations

from typing import Any

from ..closing import FAMILIES, MECHANISMS
from ..leaderboard import leaderboard
from .base import Verdict, exercise, right, wrong

__all__ = ["MECHANISM_111", "LENGTH_112", "WINDOW_112", "RECORD_113"]


# 11.1 ------------------------------------------------------------------------------------------

MECHANISM_111 = "structured self-attention, r rows (Lin et al.)"


def _families_111() -> set[str]:
    return set(MECHANISMS[MECHANISM_111][0])


@exercise("11.1", "Two families at once", solution=_families_111, wrong_answer=lambda: {"self"})
def two_families(answer: Any) -> Verdict:
    try:
        got = {str(a).strip().lower() for a in ([answer] if isinstance(answer, str) else answer)}
    except TypeError:
        return wrong(f"answer with a set of family names from {FAMILIES}; got {answer!r}")
    unknown = got - set(FAMILIES)
    if unknown:
        return wrong(f"{sorted(unknown)} is not one of the families {FAMILIES}")
    want = _families_111()
    if got == want:
        return right(
            "self-attention (the sentence attends to its own BiLSTM states, no outside query) and "
            "multi-dimensional (r rows: r one-dimensional attentions stacked, each free to read other words)"
        )
    if got < want:
        return wrong(f"{sorted(got)} is one of them; what are the r rows, seen from Hu's taxonomy?")
    return wrong(
        "its query comes from the sentence itself, and it has r distributions over the words: which two "
        "families say that?"
    )


# 11.2 ------------------------------------------------------------------------------------------

LENGTH_112 = 1000  # L = S, the sentence length in tokens
WINDOW_112 = 10  # D, the half-width of the local window


def _scores_112() -> tuple[int, int]:
    return LENGTH_112 * LENGTH_112, LENGTH_112 * (2 * WINDOW_112 + 1)


@exercise(
    "11.2", "What a window saves", solution=_scores_112, wrong_answer=lambda: (LENGTH_112**2, LENGTH_112 * WINDOW_112)
)
def window_saves(answer: Any) -> Verdict:
    try:
        full, local = (int(a) for a in answer)
    except (TypeError, ValueError):
        return wrong(f"answer with two counts (global, local); got {answer!r}")
    want = _scores_112()
    if (full, local) == want:
        return right(
            f"global: every one of the {LENGTH_112} queries scores all {LENGTH_112} keys, {want[0]:,}; "
            f"local: each scores the 2D + 1 = {2 * WINDOW_112 + 1} keys of its window, {want[1]:,}, "
            f"{want[0] / want[1]:.0f} times fewer; it grows with L, not L²"
        )
    if local == LENGTH_112 * WINDOW_112 or local == LENGTH_112 * 2 * WINDOW_112:
        return wrong("the window [p_t - D, p_t + D] holds 2D + 1 positions")
    if full != want[0]:
        return wrong("global attention scores every query against every key: L · S")
    return wrong("count the keys each query scores, times the number of queries")


# 11.3 ------------------------------------------------------------------------------------------

RECORD_113 = "hierarchical-attention"


def _best_113() -> str:
    rows = [r for r in leaderboard() if r["record"] == RECORD_113]
    return max(rows, key=lambda r: r["mean"])["entry"]


@exercise("11.3", "Read the leaderboard", solution=_best_113, wrong_answer=lambda: "han")
def read_leaderboard(answer: Any) -> Verdict:
    rows = {r["entry"]: r for r in leaderboard() if r["record"] == RECORD_113}
    got = str(answer).strip().lower()
    if got not in rows:
        return wrong(f"answer with one of the entries of {RECORD_113}: {sorted(rows)}")
    best = _best_113()
    if got == best:
        r = rows[best]
        return right(
            f"{best}, {r['metric']} {r['mean']:.3f} ± {r['sd']:.3f}: on whole movie reviews at this scale "
            f"the average of the sentence vectors beats attention over them; the book's evidence for "
            f"attention is mixed, and this is where it says so"
        )
    return wrong(f"{got} is not the highest mean of {RECORD_113}: print leaderboard rows of that record and compare")
