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

__all__ = ["MECHANISM_111", "REGIONS_112", "ALIGN_112", "ANNOTATION_112", "RECORD_113"]


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

REGIONS_112 = 196  # S, the image regions a caption word attends over (a 14 x 14 feature map)
ALIGN_112 = 512  # d_a, the size of the additive score's hidden layer
ANNOTATION_112 = 512  # d, the size of one region's annotation


def _cost_112() -> tuple[int, int]:
    scores = REGIONS_112 * ALIGN_112  # both score every region
    return scores + REGIONS_112 * ANNOTATION_112, scores + ANNOTATION_112


@exercise(
    "11.2",
    "What hard attention saves",
    solution=_cost_112,
    wrong_answer=lambda: (REGIONS_112 * ANNOTATION_112, ANNOTATION_112),
)
def hard_saves(answer: Any) -> Verdict:
    try:
        soft, hard = (int(a) for a in answer)
    except (TypeError, ValueError):
        return wrong(f"answer with two counts (soft, hard); got {answer!r}")
    want = _cost_112()
    if (soft, hard) == want:
        return right(
            f"both score all {REGIONS_112} regions ({REGIONS_112 * ALIGN_112:,}); soft then averages every "
            f"annotation ({REGIONS_112 * ANNOTATION_112:,} more), hard reads one ({ANNOTATION_112} more): "
            f"{want[0] / want[1]:.2f} times less, not {REGIONS_112} times"
        )
    if hard in (ANNOTATION_112, REGIONS_112 + ANNOTATION_112):
        return wrong(
            "to sample a region, hard attention needs the weights of all of them: it scores every region first"
        )
    if soft == REGIONS_112 * ANNOTATION_112:
        return wrong("soft attention also scores every region before it averages: count the scores too")
    return wrong("count the scores (S · d_a, for both) and then the reading: S · d for soft, d for hard")


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
