"""Figures of the benchmark record (``attention/book/bench.py``): the performance appendix
(``book/13-performance.md``) and its explorer draw them.

Every figure takes the rows of one device's section of the record ``benchmark``
(``load_result("benchmark")["metrics"][device]["rows"]``, dicts as :meth:`attention.book.bench.Row.as_dict`
writes them).
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt

__all__ = ["GROUPS", "benchmark_figure"]

#: the groups of rows, in the order the appendix shows them, with what their bars mean
GROUPS = {
    "kernels": "time ours / PyTorch's (forward + backward); the dashed mark is the goal",
    "scores": "time of the score / the dot score at the same size",
    "local": "local (D = 10) / global attention as the source grows",
    "models": "training step of each model family's small example, positions per second",
}


def benchmark_figure(rows: Sequence[dict], group: str = "kernels", title: str = ""):
    """One group of the benchmark as bars (kernels, scores, models) or lines over the source length (local)."""
    if group not in GROUPS:
        raise ValueError(f"group must be one of {list(GROUPS)}, got {group!r}")
    rows = [r for r in rows if r["group"] == group]
    if not rows:
        raise ValueError(f"the benchmark holds no rows of group {group!r}")
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.6 if group != "local" else 3.6))
    if group == "local":
        sizes = [int(r["size"].split("=")[2].split()[0]) for r in rows]  # "L=S=256 E=64 D=10"
        ax.plot(sizes, [r["ratio"] for r in rows], "o-", label="time, local / global")
        ax.plot(
            sizes, [r["ours_mb"] / r["ref_mb"] for r in rows], "s--", label="memory saved for backward, local / global"
        )
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("source length S (= L)")
        ax.set_ylabel("ratio")
        ax.legend(fontsize=8)
    else:
        labels = [f"{r['case']}  ({r['size']}, {r['dtype']})" if group != "models" else r["case"] for r in rows]
        values = [r["tokens_per_s"] if group == "models" else r["ratio"] for r in rows]
        y = range(len(rows))
        colors = []
        for r in rows:
            goal = r.get("goal")
            colors.append("tab:blue" if goal is None else ("tab:green" if r["ratio"] <= goal else "tab:red"))
        ax.barh(list(y), values, color=colors)
        for i, r in enumerate(rows):
            if r.get("goal") is not None:
                ax.plot([r["goal"], r["goal"]], [i - 0.4, i + 0.4], "k--", lw=1)
        ax.set_yticks(list(y), labels, fontsize=7)
        ax.invert_yaxis()
        if group == "models":
            ax.set_xscale("log")
            ax.set_xlabel("positions per second (log scale)")
        else:
            ax.axvline(1.0, color="grey", lw=0.8)
            ax.set_xlabel("ratio (1 = as fast as the reference)")
    ax.set_title((title + "\n" if title else "") + GROUPS[group], fontsize=9)
    fig.tight_layout()
    return fig
