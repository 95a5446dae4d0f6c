"""Chapter 11's closing table: every mechanism of the book, where it lives, and its best result
measured here, read from the leaderboard (:mod:`attention.book.leaderboard`), never typed.

:data:`MECHANISMS` maps each mechanism to its family in Hu's taxonomy (``book/04-scores.md``,
"Hu's taxonomy"), its chapter, the package code that computes it, and the leaderboard cell that
measures it: a record and the start of an entry, or several such pairs where more than one record
measures the same model on the same task (the best of all of them is taken), or None where the
book recorded no comparison.
"""

from __future__ import annotations

from .leaderboard import leaderboard

__all__ = ["MECHANISMS", "FAMILIES", "best_results"]

#: Hu's families, as the book names them
FAMILIES = ("basic", "multi-dimensional", "hierarchical", "self", "memory-based")

#: the Transformer on HSK, in every record that trains it there
_TRANSFORMER_HSK = (("transformer-comparison", "hsk / Transformer"), ("transformer-final", "Transformer"))

#: mechanism -> (families, chapter, package code, (record, entry prefix), several of them, or None)
MECHANISMS = {
    "additive score (Bahdanau)": (
        ("basic",),
        3,
        "scores.AdditiveScore, models.seq2seq",
        (("hsk-convergence", "RNNsearch"), ("transformer-final", "RNNsearch")),
    ),
    "dot, general, concat, location scores": (("basic",), 4, "scores", ("ablation-converged", "hsk / global-")),
    "scaled dot-product score": (
        ("basic",),
        6,
        "scores.ScaledDotScore, functional",
        _TRANSFORMER_HSK,
    ),
    "cosine score (content-based)": (
        ("basic", "memory-based"),
        7,
        "scores.CosineScore, ntm",
        ("ntm-copy", "ntm / by_length / 120"),
    ),
    "global and local attention": (("basic",), 9, "models.luong, local", ("ablation-converged", "hsk / local-")),
    "soft, hard and Gumbel attention": (
        ("basic",),
        8,
        "models.captioner, hard",
        (("soft-hard-captions", ""), ("reinforce-variance", "")),
    ),
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
    "multi-head attention": (
        ("multi-dimensional", "self"),
        6,
        "layers.MultiHeadAttention",
        (("transformer-heads", ""), *_TRANSFORMER_HSK),
    ),
    "structured self-attention, r rows (Lin et al.)": (
        ("self", "multi-dimensional"),
        6,
        "models.selfattentive",
        ("intra-attention", "lin"),
    ),
    "hierarchical attention network (HAN)": (("hierarchical",), 5, "models.han", ("hierarchical-attention", "han")),
    "nested word/character attention": (("hierarchical",), 5, "models.nested", ("nested-spelling", "word+char")),
    "LSTMN intra-attention": (("self",), 6, "models.lstmn", ("intra-attention", "lstmn")),
    "Transformer self-attention": (("self",), 6, "models.transformer", _TRANSFORMER_HSK),
    "end-to-end memory network": (("memory-based",), 7, "models.memn2n", ("memory-hops", "task2/")),
    "dynamic memory network": (
        ("memory-based",),
        7,
        "models.dmn, models.dmn_paper",
        (("dmn-passes", "supervised/"), ("dmn-faithful", "")),
    ),
    "neural Turing machine": (("memory-based",), 7, "models.ntm, ntm", ("ntm-copy", "ntm / by_length / 120")),
}


def best_results(rows: list[dict] | None = None) -> dict[str, dict | None]:
    """mechanism -> the leaderboard row, among its records' rows whose entry starts with the prefix,
    whose mean is highest (None where the book recorded no comparison for it). A mapping that
    matches no row is an error (the record or its entries have changed), and so is one whose rows
    measure different metrics."""
    rows = leaderboard() if rows is None else rows
    out = {}
    for mechanism, (_, _, _, where) in MECHANISMS.items():
        if where is None:
            out[mechanism] = None
            continue
        places = (where,) if isinstance(where[0], str) else where
        matching = []
        for record, prefix in places:
            found = [r for r in rows if r["record"] == record and r["entry"].startswith(prefix) and r["attention"]]
            if not found:
                raise ValueError(f"no leaderboard row of {record!r} starts with {prefix!r} (for {mechanism!r})")
            matching += found
        metrics = {r["metric"] for r in matching}
        if len(metrics) > 1:
            raise ValueError(f"{mechanism!r}: its rows measure different metrics {sorted(metrics)}")
        out[mechanism] = max(matching, key=lambda r: r["mean"])
    return out
