"""Chapter 11's closing table: every mechanism of the book, where it lives, and its best result
measured here, read from the leaderboard (:mod:`attention.book.leaderboard`), never typed.

:data:`MECHANISMS` maps each mechanism to its family in Hu's taxonomy (``book/04-scores.md``,
"Hu's taxonomy"), its chapter, the package code that computes it, and the leaderboard cell that
measures it (a record and the start of an entry) or None where the book recorded no comparison.
"""

from __future__ import annotations

from .leaderboard import leaderboard

__all__ = ["MECHANISMS", "FAMILIES", "best_results"]

#: Hu's families, as the book names them
FAMILIES = ("basic", "multi-dimensional", "hierarchical", "self", "memory-based")

#: mechanism -> (families, chapter, package code, (record, entry prefix) or None)
MECHANISMS = {
    "additive score (Bahdanau)": (
        ("basic",),
        3,
        "scores.AdditiveScore, models.seq2seq",
        ("hsk-convergence", "RNNsearch"),
    ),
    "dot, general, concat, location scores": (("basic",), 4, "scores", ("ablation-converged", "hsk / global-")),
    "scaled dot-product score": (
        ("basic",),
        6,
        "scores.ScaledDotScore, functional",
        ("transformer-comparison", "hsk / Transformer"),
    ),
    "cosine score (content-based)": (
        ("basic", "memory-based"),
        7,
        "scores.CosineScore, ntm",
        ("ntm-copy", "ntm / by_length / 120"),
    ),
    "global and local attention": (("basic",), 9, "models.luong, local", ("ablation-converged", "hsk / local-")),
    "soft, hard and Gumbel attention": (("basic",), 8, "models.captioner, hard", ("soft-hard-captions", "")),
    "feature-wise attention (DiSAN)": (
        ("multi-dimensional",),
        4,
        "layers.MultiDimensionalAttention",
        ("multidim-attention", "features"),
    ),
    "coupled multi-layer attention (CMLA)": (
        ("multi-dimensional",),
        4,
        "models.cmla",
        ("coupled-attention", "coupled-"),
    ),
    "multi-head attention": (("multi-dimensional", "self"), 6, "layers.MultiHeadAttention", ("transformer-heads", "")),
    "structured self-attention, r rows (Lin et al.)": (
        ("self", "multi-dimensional"),
        6,
        "models.selfattentive",
        ("intra-attention", "lin"),
    ),
    "hierarchical attention network (HAN)": (("hierarchical",), 5, "models.han", ("hierarchical-attention", "han")),
    "nested word/character attention": (("hierarchical",), 5, "models.nested", ("nested-spelling", "word+char")),
    "LSTMN intra-attention": (("self",), 6, "models.lstmn", ("intra-attention", "lstmn")),
    "Transformer self-attention": (("self",), 6, "models.transformer", ("transformer-comparison", "hsk / Transformer")),
    "end-to-end memory network": (("memory-based",), 7, "models.memn2n", ("memory-hops", "task2/")),
    "dynamic memory network": (("memory-based",), 7, "models.dmn", ("dmn-passes", "supervised/")),
    "neural Turing machine": (("memory-based",), 7, "models.ntm, ntm", ("ntm-copy", "ntm / by_length / 120")),
}


def best_results(rows: list[dict] | None = None) -> dict[str, dict | None]:
    """mechanism -> the leaderboard row of its record whose entry starts with the prefix and whose
    mean is highest (None where the book recorded no comparison for it). A mapping that matches
    no row is an error: the record or its entries have changed."""
    rows = leaderboard() if rows is None else rows
    out = {}
    for mechanism, (_, _, _, where) in MECHANISMS.items():
        if where is None:
            out[mechanism] = None
            continue
        record, prefix = where
        matching = [r for r in rows if r["record"] == record and r["entry"].startswith(prefix) and r["attention"]]
        if not matching:
            raise ValueError(f"no leaderboard row of {record!r} starts with {prefix!r} (for {mechanism!r})")
        out[mechanism] = max(matching, key=lambda r: r["mean"])
    return out
