"""Chapter 11, closing (``notebooks/11-closing.ipynb``): every recorded comparison of the book, one
record of the leaderboard at a time."""

from __future__ import annotations

from typing import Sequence

from ...widgets import Explorer, explorer, register_explorer
from ..leaderboard import leaderboard

__all__ = ["results_figure", "results_explorer"]


def results_figure(rows: Sequence[dict], title: str | None = None):
    """One record of the leaderboard (:func:`attention.book.leaderboard.leaderboard` rows of one record)
    as horizontal bars, mean ± sd over the seeds, grey for models without attention, orange with."""
    from matplotlib.figure import Figure

    rows = list(rows)
    if not rows:
        raise ValueError("results_figure needs at least one row")
    n = len(rows)
    fig = Figure(figsize=(6.4, 0.9 + 0.32 * n), layout="constrained")
    ax = fig.subplots()
    means = [r["mean"] for r in rows]
    errors = [r["sd"] or 0.0 for r in rows]
    colours = ["tab:orange" if r["attention"] else "tab:gray" for r in rows]
    ax.barh(range(n), means, xerr=errors, color=colours, capsize=3)
    ax.set_yticks(range(n), [r["entry"][:40] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"{rows[0]['metric']} (mean ± sd over {rows[0]['n']} seeds; grey: no attention)")
    ax.set_title(title or rows[0]["record"], fontsize=10)
    return fig


@register_explorer("results")
def results_explorer(rows: Sequence[dict] | None = None, mode: str = "auto") -> Explorer:
    """Chapter 11: pick a recorded comparison of the book and see its models' headline metric, mean
    ± sd over the seeds, models without attention in grey (:func:`results_figure`). One frame per
    record of the leaderboard.

    Args:
        rows: leaderboard rows (default: :func:`attention.book.leaderboard.leaderboard` of the package's
            registry).
    """
    rows = list(leaderboard() if rows is None else rows)
    by_record: dict[str, list] = {}
    for r in rows:
        by_record.setdefault(r["record"], []).append(r)

    def draw(record: str = next(iter(by_record))):
        return results_figure(by_record[record], title=f"{record}\n{by_record[record][0]['command']}")

    return explorer(draw, {"record": list(by_record)}, mode=mode)
